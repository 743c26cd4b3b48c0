package pionlog

import (
	"bytes"
	"log/slog"
	"strings"
	"testing"
)

// TestPeerTextNotVerbatim: pion's error text (which may repeat the peer's
// SDP) never reaches the log as is: at info level not at all, at debug
// level quoted, its control characters escaped.
func TestPeerTextNotVerbatim(t *testing.T) {
	const peer = "sdp: invalid value \x1b[31mEVIL\r\nforged=line"
	for _, level := range []slog.Level{slog.LevelInfo, slog.LevelDebug} {
		var buf bytes.Buffer
		l := New(slog.New(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: level}))).NewLogger("ice")
		l.Error(peer)
		l.Errorf("failed: %s", peer)
		l.Warn(peer)
		l.Warnf("%s", peer)
		out := buf.String()
		if strings.ContainsAny(out, "\x1b\r") || strings.Contains(out, "forged=line\n") {
			t.Errorf("level %v: control characters from the peer in the log:\n%q", level, out)
		}
		if got := strings.Contains(out, "EVIL"); got != (level == slog.LevelDebug) {
			t.Errorf("level %v: peer text in the log: %v, want %v:\n%s", level, got, level == slog.LevelDebug, out)
		}
		if !strings.Contains(out, "pion error") || !strings.Contains(out, "pion=ice") {
			t.Errorf("level %v: no fixed error line:\n%s", level, out)
		}
	}
}
