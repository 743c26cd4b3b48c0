package safelog

import (
	"context"
	"encoding"
	"encoding/json"
	"fmt"
	"log/slog"
)

// handler scrubs records before passing them to the wrapped handler.
type handler struct {
	h slog.Handler
}

// NewHandler returns a slog.Handler that scrubs IP addresses from every
// record before h sees it: the message, attribute keys, group names and every
// attribute value that renders as text, including values in groups and
// attributes added with WithAttrs. Levels, times, source positions and
// groups are preserved.
//
// Values are treated by kind:
//
//   - strings are scrubbed;
//   - slog.LogValuer values are resolved first;
//   - errors, fmt.Stringers and encoding.TextMarshalers (net.IP,
//     netip.Addr, *net.TCPAddr, ...) are rendered with Error, String or
//     MarshalText; if the text holds an address the value is replaced by the
//     scrubbed string, otherwise it is passed on unchanged;
//   - []byte is scrubbed as text and stays a []byte;
//   - any other non-nil value of kind Any (structs, maps, slices) is rendered
//     with fmt's %+v (and MarshalJSON, for a json.Marshaler); if either holds
//     an address the value is replaced by the scrubbed %+v string;
//   - numbers, booleans, times and durations are passed on unchanged.
//
// A record that needs no change is passed on as it is.
func NewHandler(h slog.Handler) slog.Handler {
	return &handler{h: h}
}

func (h *handler) Enabled(ctx context.Context, level slog.Level) bool {
	return h.h.Enabled(ctx, level)
}

func (h *handler) Handle(ctx context.Context, r slog.Record) error {
	msg, changed := scrubString(r.Message)
	if !changed {
		r.Attrs(func(a slog.Attr) bool {
			_, changed = scrubAttr(a)
			return !changed
		})
	}
	if !changed {
		return h.h.Handle(ctx, r)
	}
	nr := slog.NewRecord(r.Time, r.Level, msg, r.PC)
	r.Attrs(func(a slog.Attr) bool {
		a, _ = scrubAttr(a)
		nr.AddAttrs(a)
		return true
	})
	return h.h.Handle(ctx, nr)
}

func (h *handler) WithAttrs(attrs []slog.Attr) slog.Handler {
	scrubbed := make([]slog.Attr, len(attrs))
	for i, a := range attrs {
		scrubbed[i], _ = scrubAttr(a)
	}
	return &handler{h: h.h.WithAttrs(scrubbed)}
}

func (h *handler) WithGroup(name string) slog.Handler {
	name, _ = scrubString(name)
	return &handler{h: h.h.WithGroup(name)}
}

// scrubString returns s scrubbed and whether that changed it.
func scrubString(s string) (string, bool) {
	if !containsAddress(s) {
		return s, false
	}
	return Scrub(s), true
}

// scrubAttr returns a scrubbed and whether that changed it.
func scrubAttr(a slog.Attr) (slog.Attr, bool) {
	key, keyChanged := scrubString(a.Key)
	v, valueChanged := scrubValue(a.Value)
	if !keyChanged && !valueChanged {
		return a, false
	}
	return slog.Attr{Key: key, Value: v}, true
}

// scrubValue returns v scrubbed and whether that changed it.
func scrubValue(v slog.Value) (slog.Value, bool) {
	resolved := v.Kind() == slog.KindLogValuer
	if resolved {
		v = v.Resolve()
	}
	switch v.Kind() {
	case slog.KindString:
		if s, changed := scrubString(v.String()); changed {
			return slog.StringValue(s), true
		}
	case slog.KindGroup:
		if g, changed := scrubGroup(v.Group()); changed {
			return slog.GroupValue(g...), true
		}
	case slog.KindAny:
		if s, changed := scrubAny(v.Any()); changed {
			return s, true
		}
	}
	return v, resolved
}

// scrubGroup returns attrs scrubbed, copying only when something changed.
func scrubGroup(attrs []slog.Attr) ([]slog.Attr, bool) {
	var out []slog.Attr
	for i, a := range attrs {
		b, changed := scrubAttr(a)
		if changed && out == nil {
			out = make([]slog.Attr, len(attrs))
			copy(out, attrs[:i])
		}
		if out != nil {
			out[i] = b
		}
	}
	if out == nil {
		return attrs, false
	}
	return out, true
}

// scrubAny scrubs the text form of a KindAny value.
func scrubAny(x any) (slog.Value, bool) {
	switch t := x.(type) {
	case nil:
		return slog.Value{}, false
	case []byte:
		if containsAddress(t) {
			b, _ := appendScrubbed(nil, t)
			return slog.AnyValue(b), true
		}
		return slog.Value{}, false
	case error:
		return scrubText(safeText(func() string { return t.Error() }))
	case fmt.Stringer:
		return scrubText(safeText(t.String))
	case encoding.TextMarshaler:
		return scrubText(safeText(func() string {
			b, err := t.MarshalText()
			if err != nil {
				return fmt.Sprintf("!ERROR:%v", err)
			}
			return string(b)
		}))
	}
	text := safeText(func() string { return fmt.Sprintf("%+v", x) })
	if m, ok := x.(json.Marshaler); ok && !containsAddress(text) {
		if containsAddress(safeText(func() string {
			b, err := m.MarshalJSON()
			if err != nil {
				return fmt.Sprintf("!ERROR:%v", err)
			}
			return string(b)
		})) {
			return slog.StringValue(Scrub(text)), true
		}
	}
	return scrubText(text)
}

// scrubText returns the scrubbed text as a string value if it held an
// address.
func scrubText(s string) (slog.Value, bool) {
	if s, changed := scrubString(s); changed {
		return slog.StringValue(s), true
	}
	return slog.Value{}, false
}

// safeText calls f and turns a panic (a nil pointer's String method, say)
// into text, as slog's own handlers do.
func safeText(f func() string) (s string) {
	defer func() {
		if r := recover(); r != nil {
			s = fmt.Sprintf("!PANIC: %v", r)
		}
	}()
	return f()
}
