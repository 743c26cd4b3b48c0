package pionlog

import (
	"context"
	"fmt"
	"log/slog"
	"strconv"

	"github.com/pion/logging"
)

// maxPionText bounds the part of a pion log message kept at debug level.
const maxPionText = 256

// New returns a pion LoggerFactory (SettingEngine.LoggerFactory) that
// logs to log; nil discards.
func New(log *slog.Logger) logging.LoggerFactory {
	if log == nil {
		log = slog.New(slog.DiscardHandler)
	}
	return factory{log: log}
}

type factory struct{ log *slog.Logger }

func (f factory) NewLogger(scope string) logging.LeveledLogger {
	return pionLogger{log: f.log.With("pion", scope)}
}

type pionLogger struct{ log *slog.Logger }

func (pionLogger) Trace(string)          {}
func (pionLogger) Tracef(string, ...any) {}
func (pionLogger) Debug(string)          {}
func (pionLogger) Debugf(string, ...any) {}
func (pionLogger) Info(string)           {}
func (pionLogger) Infof(string, ...any)  {}
func (l pionLogger) Warn(msg string)     { l.debug("pion warning", msg) }
func (l pionLogger) Warnf(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.debug("pion warning", fmt.Sprintf(format, args...))
	}
}
func (l pionLogger) Error(msg string) { l.error(msg) }
func (l pionLogger) Errorf(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.error(fmt.Sprintf(format, args...))
		return
	}
	l.log.Info("pion error (text at debug level)")
}

func (l pionLogger) error(msg string) {
	l.log.Info("pion error (text at debug level)")
	l.debug("pion error", msg)
}

// debug logs msg quoted (control characters escaped) and truncated.
func (l pionLogger) debug(what, msg string) {
	if len(msg) > maxPionText {
		msg = msg[:maxPionText]
	}
	l.log.Debug(what, "text", strconv.QuoteToASCII(msg))
}
