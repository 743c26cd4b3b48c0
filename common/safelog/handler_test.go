package safelog

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"net"
	"net/netip"
	"strings"
	"testing"
	"testing/slogtest"
	"time"
)

type stringer struct{ s string }

func (s stringer) String() string { return s.s }

type textOnly struct{ s string }

func (t textOnly) MarshalText() ([]byte, error) { return []byte(t.s), nil }

type jsonOnly struct{}

func (jsonOnly) MarshalJSON() ([]byte, error) { return []byte(`{"peer":"198.51.100.9"}`), nil }

type peer struct {
	Name string
	Addr netip.AddrPort
}

type valuer struct{ ip string }

func (v valuer) LogValue() slog.Value { return slog.StringValue("peer " + v.ip) }

type nilStringer struct{ s *string }

func (n *nilStringer) String() string { return *n.s }

// leaks lists the address texts the records below carry; none may reach the
// output.
var leaks = []string{
	"192.0.2.1", "192.0.2.2", "192.0.2.3", "192.0.2.4", "192.0.2.5", "192.0.2.6",
	"192.0.2.7", "192.0.2.8", "192.0.2.9", "192.0.2.10", "2001:db8::11", "2001:db8::12",
	"198.51.100.9", "192.0.2.13", "192.0.2.14", "192.0.2.15", "2001:db8::16", "192.0.2.17",
}

func logEverything(l *slog.Logger) {
	l = l.With("conn", "192.0.2.1:443", slog.Group("peer", "ip", "192.0.2.2"))
	l.WithGroup("g").Info("client 192.0.2.3 connected",
		"str", "from 192.0.2.4",
		"err", fmt.Errorf("dial tcp 192.0.2.5:80: %w", errors.New("refused")),
		"stringer", stringer{"at 192.0.2.6"},
		"netip", netip.MustParseAddr("192.0.2.7"),
		"netip6", netip.MustParseAddr("2001:db8::11"),
		"addrport", netip.MustParseAddrPort("192.0.2.8:9"),
		"tcpaddr", &net.TCPAddr{IP: net.ParseIP("2001:db8::12"), Port: 443},
		"netIP", net.ParseIP("192.0.2.9"),
		"text", textOnly{"192.0.2.10"},
		"json", jsonOnly{},
		"struct", peer{Name: "p", Addr: netip.MustParseAddrPort("192.0.2.13:1")},
		"slice", []string{"192.0.2.14", "x"},
		"bytes", []byte("b 192.0.2.15"),
		"valuer", valuer{"2001:db8::16"},
		slog.Group("nested", slog.Group("deeper", "ip", "192.0.2.17")),
		"192.0.2.1", "key is an address",
		"fp", "33:B6:FA:F6:94:CA:74:61:45:4A:D2:1F:2C:2F:75:8A",
		"n", 42, "d", time.Second, "ok", true,
		"nil", nil,
		"nilstringer", (*nilStringer)(nil),
	)
}

func TestHandlerJSON(t *testing.T) {
	var buf bytes.Buffer
	logEverything(slog.New(NewHandler(slog.NewJSONHandler(&buf, &slog.HandlerOptions{Level: slog.LevelDebug}))))
	out := buf.String()
	for _, leak := range leaks {
		if strings.Contains(out, leak) {
			t.Errorf("JSON output holds %s:\n%s", leak, out)
		}
	}
	var m map[string]any
	if err := json.Unmarshal(buf.Bytes(), &m); err != nil {
		t.Fatalf("output is not JSON: %v\n%s", err, out)
	}
	if m["msg"] != "client [scrubbed] connected" || m["level"] != "INFO" || m["conn"] != "[scrubbed]" {
		t.Errorf("msg/level/conn wrong: %v %v %v", m["msg"], m["level"], m["conn"])
	}
	g, ok := m["g"].(map[string]any)
	if !ok {
		t.Fatalf("group g missing: %s", out)
	}
	want := map[string]any{
		"str": "from [scrubbed]", "err": "dial tcp [scrubbed]: refused", "stringer": "at [scrubbed]",
		"netip": "[scrubbed]", "tcpaddr": "[scrubbed]", "slice": "[[scrubbed] x]",
		"fp": "33:B6:FA:F6:94:CA:74:61:45:4A:D2:1F:2C:2F:75:8A", "n": float64(42), "ok": true,
		"valuer": "peer [scrubbed]", "[scrubbed]": "key is an address",
	}
	for k, v := range want {
		if g[k] != v {
			t.Errorf("g.%s = %#v, want %#v", k, g[k], v)
		}
	}
	if peer, _ := m["peer"].(map[string]any); peer["ip"] != "[scrubbed]" {
		t.Errorf("WithAttrs group not scrubbed: %v", m["peer"])
	}
	nested, _ := g["nested"].(map[string]any)
	if deeper, _ := nested["deeper"].(map[string]any); deeper["ip"] != "[scrubbed]" {
		t.Errorf("nested group not scrubbed: %v", g["nested"])
	}
}

func TestHandlerText(t *testing.T) {
	var buf bytes.Buffer
	logEverything(slog.New(NewHandler(slog.NewTextHandler(&buf, nil))))
	out := buf.String()
	for _, leak := range leaks {
		if strings.Contains(out, leak) {
			t.Errorf("text output holds %s:\n%s", leak, out)
		}
	}
	for _, want := range []string{
		`level=INFO`, `msg="client [scrubbed] connected"`, `conn=[scrubbed]`, `peer.ip=[scrubbed]`,
		`g.str="from [scrubbed]"`, `g.nested.deeper.ip=[scrubbed]`, `g.n=42`, `g.d=1s`,
		`g.fp=33:B6:FA:F6:94:CA:74:61:45:4A:D2:1F:2C:2F:75:8A`, `g.nilstringer=<nil>`,
	} {
		if !strings.Contains(out, want) {
			t.Errorf("text output lacks %s:\n%s", want, out)
		}
	}
}

func TestHandlerLevels(t *testing.T) {
	var buf bytes.Buffer
	l := slog.New(NewHandler(slog.NewTextHandler(&buf, &slog.HandlerOptions{Level: slog.LevelWarn})))
	if l.Enabled(context.Background(), slog.LevelInfo) || !l.Enabled(context.Background(), slog.LevelError) {
		t.Error("Enabled does not follow the wrapped handler")
	}
	l.Info("hidden 1.2.3.4")
	l.Warn("shown 1.2.3.4")
	if got := buf.String(); strings.Contains(got, "hidden") || !strings.Contains(got, `level=WARN msg="shown [scrubbed]"`) {
		t.Errorf("got %q", got)
	}
}

// TestHandlerUnchangedRecord checks that a record without addresses reaches
// the wrapped handler as it is.
func TestHandlerUnchangedRecord(t *testing.T) {
	var got slog.Record
	h := NewHandler(recordHandler{&got})
	r := slog.NewRecord(time.Unix(1, 0), slog.LevelDebug, "plain", 7)
	r.AddAttrs(slog.String("a", "b"), slog.Int("n", 1), slog.Any("e", errors.New("x")))
	if err := h.Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	if got.Message != "plain" || got.Level != slog.LevelDebug || got.PC != 7 || !got.Time.Equal(time.Unix(1, 0)) || got.NumAttrs() != 3 {
		t.Errorf("record changed: %+v", got)
	}
	r.AddAttrs(slog.String("ip", "1.2.3.4"))
	if err := h.Handle(context.Background(), r); err != nil {
		t.Fatal(err)
	}
	var last slog.Attr
	got.Attrs(func(a slog.Attr) bool { last = a; return true })
	if got.PC != 7 || got.NumAttrs() != 4 || last.Value.String() != Replacement {
		t.Errorf("scrubbed record wrong: %+v, last %v", got, last)
	}
}

type recordHandler struct{ r *slog.Record }

func (recordHandler) Enabled(context.Context, slog.Level) bool { return true }
func (h recordHandler) Handle(_ context.Context, r slog.Record) error {
	*h.r = r
	return nil
}
func (h recordHandler) WithAttrs([]slog.Attr) slog.Handler { return h }
func (h recordHandler) WithGroup(string) slog.Handler      { return h }

// TestHandlerSlogtest runs the standard library's handler conformance test
// through the scrubbing handler.
func TestHandlerSlogtest(t *testing.T) {
	var buf bytes.Buffer
	h := NewHandler(slog.NewJSONHandler(&buf, nil))
	results := func() []map[string]any {
		var ms []map[string]any
		for _, line := range bytes.Split(buf.Bytes(), []byte{'\n'}) {
			if len(line) == 0 {
				continue
			}
			var m map[string]any
			if err := json.Unmarshal(line, &m); err != nil {
				t.Fatal(err)
			}
			ms = append(ms, m)
		}
		return ms
	}
	if err := slogtest.TestHandler(h, results); err != nil {
		t.Error(err)
	}
}

func BenchmarkHandler(b *testing.B) {
	for _, bc := range []struct {
		name string
		args []any
	}{
		{"clean", []any{"sid", "AbCdEf", "nat", "restricted", "clients", 3, "err", errors.New("timeout")}},
		{"addresses", []any{"sid", "AbCdEf", "remote", "192.0.2.1:443", "clients", 3, "err", errors.New("dial tcp [2001:db8::1]:443: refused")}},
	} {
		b.Run(bc.name, func(b *testing.B) {
			l := slog.New(NewHandler(slog.NewTextHandler(discard{}, nil)))
			b.ReportAllocs()
			for b.Loop() {
				l.Info("proxy poll", bc.args...)
			}
		})
	}
}

type discard struct{}

func (discard) Write(p []byte) (int, error) { return len(p), nil }
