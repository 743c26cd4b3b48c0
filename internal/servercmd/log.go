package servercmd

import (
	"fmt"
	"io"
	"log/slog"
	"os"

	"github.com/flurrypt/flurry/common/safelog"
)

// LogOptions configure NewLogger.
type LogOptions struct {
	// Level is the least level logged; nil means Info.
	Level slog.Leveler
	// Unsafe keeps IP addresses in the log (-unsafe-logging).
	Unsafe bool
	// LocalTime writes times in the local time zone instead of UTC.
	LocalTime bool
}

// NewLogger returns a text logger writing to w that removes IP addresses
// from every message and attribute (common/safelog) unless o.Unsafe.
func NewLogger(w io.Writer, o LogOptions) *slog.Logger {
	opts := &slog.HandlerOptions{Level: o.Level}
	if !o.LocalTime {
		opts.ReplaceAttr = utcTime
	}
	var h slog.Handler = slog.NewTextHandler(w, opts)
	if !o.Unsafe {
		h = safelog.NewHandler(h)
	}
	return slog.New(h)
}

// utcTime is a slog ReplaceAttr that writes the record's time in UTC.
func utcTime(groups []string, a slog.Attr) slog.Attr {
	if a.Key == slog.TimeKey && len(groups) == 0 && a.Value.Kind() == slog.KindTime {
		a.Value = slog.TimeValue(a.Value.Time().UTC())
	}
	return a
}

// OpenLog returns a command's logger (NewLogger): it appends to the file
// path (a command's -log) when path is not empty, else writes to fallback;
// a nil fallback logs nothing. The file is created readable by its owner
// only, since the log may hold what -unsafe-logging keeps. Call close when
// the command ends.
func OpenLog(path string, fallback io.Writer, o LogOptions) (log *slog.Logger, close func(), err error) {
	if path == "" {
		if fallback == nil {
			return slog.New(slog.DiscardHandler), func() {}, nil
		}
		return NewLogger(fallback, o), func() {}, nil
	}
	f, err := os.OpenFile(path, os.O_CREATE|os.O_APPEND|os.O_WRONLY, 0o600)
	if err != nil {
		return nil, nil, fmt.Errorf("open log: %w", err)
	}
	return NewLogger(f, o), func() { _ = f.Close() }, nil
}
