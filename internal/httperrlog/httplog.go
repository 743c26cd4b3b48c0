// Package httperrlog keeps the peer's text out of the logs of Flurry's HTTP
// and TLS servers. net/http's server error log and crypto/tls's handshake
// errors quote what the peer sent (ALPN protocol names, server names for
// which no certificate exists, bytes that were not a TLS record); these
// helpers log a reason of our own words instead.
package httperrlog

import (
	"context"
	"errors"
	"log"
	"log/slog"
	"net"
	"strings"
)

// HandshakeFailure names, in a few fixed words, why a TLS handshake
// failed, for a log line or a metric.
func HandshakeFailure(err error) string {
	var ne net.Error
	if errors.As(err, &ne) && ne.Timeout() {
		return "timeout"
	}
	return classify(err.Error())
}

// reasons maps text that crypto/tls, autocert and the network put in a
// handshake error to the reason logged; the first match wins.
var reasons = []struct{ text, reason string }{
	{"i/o timeout", "timeout"},
	{"deadline exceeded", "timeout"},
	{"connection reset by peer", "reset by peer"},
	{"broken pipe", "closed by peer"},
	{"EOF", "closed by peer"},
	{"does not look like a TLS handshake", "not TLS"},
	{"HTTP request to an HTTPS server", "not TLS"},
	{"application protocol", "no common ALPN protocol"},
	{"unsupported versions", "no common TLS version"},
	{"protocol version", "no common TLS version"},
	{"cipher suite", "no common cipher suite"},
	{"curve", "no common key exchange"},
	{"signature", "no common signature scheme"},
	{"autocert", "no certificate for the server name"},
	{"server name", "no certificate for the server name"},
	{"certificate", "certificate problem"},
	{"remote error", "alert from peer"},
}

func classify(text string) string {
	for _, r := range reasons {
		if strings.Contains(text, r.text) {
			return r.reason
		}
	}
	return "other"
}

// ErrorLog returns a logger for http.Server.ErrorLog that writes to h at
// level: a TLS handshake error becomes "TLS handshake failed" with its
// reason (HandshakeFailure's words), a panic in a handler and an accept
// error (both of this process's making) are kept whole, and any other
// message is cut before its details, which may quote the peer.
func ErrorLog(h slog.Handler, level slog.Level) *log.Logger {
	return log.New(writer{slog.New(h), level}, "", 0)
}

type writer struct {
	log   *slog.Logger
	level slog.Level
}

const handshakePrefix = "http: TLS handshake error from "

func (w writer) Write(p []byte) (int, error) {
	msg := strings.TrimSuffix(string(p), "\n")
	ctx := context.Background()
	switch {
	case strings.HasPrefix(msg, handshakePrefix):
		// "from ADDR: ERR"; the address is the peer's, which the
		// handler scrubs as it scrubs every address.
		rest := msg[len(handshakePrefix):]
		addr, text, _ := strings.Cut(rest, ": ")
		w.log.Log(ctx, w.level, "TLS handshake failed", "from", addr, "reason", classify(text))
	case strings.HasPrefix(msg, "http: panic serving"), strings.HasPrefix(msg, "http: Accept error"):
		w.log.Log(ctx, max(w.level, slog.LevelError), msg)
	default:
		// Keep "http: what" of "http: what: details".
		parts := strings.SplitN(msg, ": ", 3)
		head := strings.Join(parts[:min(len(parts), 2)], ": ")
		w.log.Log(ctx, w.level, printable(head))
	}
	return len(p), nil
}

// printable drops what is not printable ASCII, and bounds the length.
func printable(s string) string {
	const maxLen = 120
	b := make([]byte, 0, min(len(s), maxLen))
	for i := 0; i < len(s) && len(b) < maxLen; i++ {
		if c := s[i]; c >= 0x20 && c < 0x7f {
			b = append(b, c)
		}
	}
	return string(b)
}
