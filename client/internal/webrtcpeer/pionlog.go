package webrtcpeer

import (
	"context"
	"fmt"
	"log/slog"

	"github.com/pion/logging"
)

// pionLoggers sends pion's logs to a slog.Logger instead of pion's default
// (stderr, which a pluggable transport must not write to): warnings and
// errors at debug and info level, the rest dropped.
type pionLoggers struct{ log *slog.Logger }

func (f pionLoggers) NewLogger(scope string) logging.LeveledLogger {
	return pionLogger{log: f.log.With("pion", scope)}
}

type pionLogger struct{ log *slog.Logger }

func (pionLogger) Trace(string)          {}
func (pionLogger) Tracef(string, ...any) {}
func (pionLogger) Debug(string)          {}
func (pionLogger) Debugf(string, ...any) {}
func (pionLogger) Info(string)           {}
func (pionLogger) Infof(string, ...any)  {}
func (l pionLogger) Warn(msg string)     { l.log.Debug(msg) }
func (l pionLogger) Warnf(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelDebug) {
		l.log.Debug(fmt.Sprintf(format, args...))
	}
}
func (l pionLogger) Error(msg string) { l.log.Info(msg) }
func (l pionLogger) Errorf(format string, args ...any) {
	if l.log.Enabled(context.Background(), slog.LevelInfo) {
		l.log.Info(fmt.Sprintf(format, args...))
	}
}
