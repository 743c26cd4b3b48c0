package messages

import (
	"encoding/json"
	"strings"
)

// A fast path for the JSON objects this package decodes.
//
// Every message here is a flat JSON object whose values are strings, small
// integers or null. encoding/json decodes them correctly but spends most of
// its time in reflection, a separate validity pass (checkValid) and
// allocations; on the broker the decoders (with the session description
// inside each offer and answer) were a third of the CPU of a match.
//
// scanFlatObject is not a JSON parser: it is a recogniser for the common,
// unsurprising form of those objects, and it gives up (returns false) on
// anything else. The callers then run encoding/json, which decides and
// words the error. So the fast path only has to be sound: whenever it
// succeeds, encoding/json would have succeeded with exactly the same
// result. It accepts
//
//	ws '{' ws [ member { ws ',' ws member } ] ws '}' ws       (and nothing after)
//	member = key ws ':' ws value
//
// with JSON's whitespace (space, tab, CR, LF), and gives up on
//
//   - a key with a backslash or a non-ASCII byte (encoding/json matches keys
//     after unescaping them and folds some non-ASCII letters onto ASCII ones:
//     U+017F "ſ" matches "s", U+212A KELVIN SIGN matches "k");
//   - a value that is an object or an array (even under an unknown key);
//   - a string holding a raw byte below 0x20, an invalid escape, or a \u
//     escape of a surrogate (encoding/json pairs surrogates or substitutes
//     U+FFFD);
//   - a number under a string key, a string under an integer key, true or
//     false under a known key, an integer key's number with a fraction, an
//     exponent or more than maxFlatDigits digits (all of which are type
//     errors or overflow checks in encoding/json);
//   - any other syntax error.
//
// Known keys match case-insensitively (ASCII letters only, which is what
// encoding/json's folding does for an ASCII key into a struct field), or
// byte for byte with exactKeys (the session description, which Snowflake
// decodes into a map, whose keys never fold); unknown keys are skipped,
// and when a key repeats the last occurrence wins, as in encoding/json. null
// leaves a string or integer field unchanged and sets a *string field to
// nil, as encoding/json does.
//
// Precondition: the input is valid UTF-8 (every caller checks it first;
// encoding/json would replace invalid bytes with U+FFFD).

// flatKind is the Go type of a known key's field.
type flatKind uint8

const (
	flatString         flatKind = iota // string: null leaves it unchanged
	flatStringPtr                      // *string: null sets it to nil
	flatInt                            // int or int64: null leaves it unchanged
	flatStringPtrCheck                 // flatStringPtr, but the value is only checked, never built
)

// maxFlatDigits bounds the digits of an integer the fast path converts
// itself: 9 digits fit an int on every platform, so encoding/json's overflow
// check cannot fail for them.
const maxFlatDigits = 9

// flatField is a known key: its name as in the struct tag and its kind.
type flatField struct {
	name string
	kind flatKind
}

// flatValue is what the object assigned to one known key.
type flatValue struct {
	set bool   // assigned a non-null value (for flatStringPtr: the last value was not null)
	str string // flatString, flatStringPtr
	num int64  // flatInt
}

// flatText is the input of scanFlatObject.
type flatText interface{ string | []byte }

// scanFlatObject recognises b as described above, filling out[i] for
// fields[i] (len(out) >= len(fields), out zeroed by the caller). It returns
// false if b is anything else; out is then garbage.
func scanFlatObject[T flatText](b T, fields []flatField, out []flatValue) bool {
	return scanFlat(b, fields, out, false)
}

// scanFlat is scanFlatObject; with exactKeys, keys must equal the field
// names byte for byte.
func scanFlat[T flatText](b T, fields []flatField, out []flatValue, exactKeys bool) bool {
	i := skipSpace(b, 0)
	if i >= len(b) || b[i] != '{' {
		return false
	}
	i = skipSpace(b, i+1)
	if i < len(b) && b[i] == '}' {
		return skipSpace(b, i+1) == len(b)
	}
	for {
		// Key.
		if i >= len(b) || b[i] != '"' {
			return false
		}
		keyStart := i + 1
		i = keyStart
		for i < len(b) && b[i] != '"' {
			c := b[i]
			if c < 0x20 || c == '\\' || c >= 0x80 {
				return false
			}
			i++
		}
		if i >= len(b) {
			return false
		}
		field := -1
		for f := range fields {
			if exactKeys && string(b[keyStart:i]) == fields[f].name ||
				!exactKeys && equalFoldASCII(b[keyStart:i], fields[f].name) {
				field = f
				break
			}
		}
		i = skipSpace(b, i+1)
		if i >= len(b) || b[i] != ':' {
			return false
		}
		i = skipSpace(b, i+1)
		if i >= len(b) {
			return false
		}

		// Value.
		var ok bool
		switch c := b[i]; {
		case c == '"':
			var s string
			if field < 0 {
				i, ok = skipString(b, i)
			} else if fields[field].kind == flatInt {
				return false
			} else if fields[field].kind == flatStringPtrCheck {
				i, ok = skipString(b, i)
				out[field] = flatValue{set: true}
			} else {
				s, i, ok = scanString(b, i)
				out[field] = flatValue{set: true, str: s}
			}
		case c == 'n':
			i, ok = skipLiteral(b, i, "null")
			if ok && field >= 0 && (fields[field].kind == flatStringPtr || fields[field].kind == flatStringPtrCheck) {
				out[field] = flatValue{}
			}
		case c == 't' || c == 'f':
			if field >= 0 {
				return false
			}
			if c == 't' {
				i, ok = skipLiteral(b, i, "true")
			} else {
				i, ok = skipLiteral(b, i, "false")
			}
		case c == '-' || c >= '0' && c <= '9':
			if field < 0 {
				i, ok = skipNumber(b, i)
			} else if fields[field].kind != flatInt {
				return false
			} else {
				var n int64
				n, i, ok = scanInt(b, i)
				out[field] = flatValue{set: true, num: n}
			}
		default: // object, array or not JSON
			return false
		}
		if !ok {
			return false
		}

		i = skipSpace(b, i)
		if i >= len(b) {
			return false
		}
		switch b[i] {
		case ',':
			i = skipSpace(b, i+1)
		case '}':
			return skipSpace(b, i+1) == len(b)
		default:
			return false
		}
	}
}

func skipSpace[T flatText](b T, i int) int {
	for i < len(b) {
		switch b[i] {
		case ' ', '\t', '\n', '\r':
			i++
		default:
			return i
		}
	}
	return i
}

// equalFoldASCII compares an ASCII key with an ASCII field name, folding
// ASCII letters only.
func equalFoldASCII[T flatText](key T, name string) bool {
	if len(key) != len(name) {
		return false
	}
	for i := 0; i < len(key); i++ {
		a, b := key[i], name[i]
		if a == b {
			continue
		}
		if 'A' <= a && a <= 'Z' {
			a += 'a' - 'A'
		}
		if 'A' <= b && b <= 'Z' {
			b += 'a' - 'A'
		}
		if a != b || a < 'a' || a > 'z' {
			return false
		}
	}
	return true
}

func skipLiteral[T flatText](b T, i int, lit string) (int, bool) {
	if len(b)-i < len(lit) {
		return i, false
	}
	for k := 0; k < len(lit); k++ {
		if b[i+k] != lit[k] {
			return i, false
		}
	}
	return i + len(lit), true
}

// plainStringByte[c] reports whether byte c stands for itself inside a JSON
// string (not a quote, a backslash or a control character). Never modified.
var plainStringByte = func() (t [256]bool) {
	for c := 0x20; c < 256; c++ {
		t[c] = c != '"' && c != '\\'
	}
	return t
}()

// stringEnd scans the string starting at the quote b[i]. It returns the index
// just past the closing quote and whether the string has escapes; ok is false
// if the string is not one the fast path takes.
func stringEnd[T flatText](b T, i int) (end int, escaped, ok bool) {
	i++
	for {
		for i < len(b) && plainStringByte[b[i]] {
			i++
		}
		if i >= len(b) {
			return 0, false, false
		}
		switch b[i] {
		case '"':
			return i + 1, escaped, true
		case '\\':
			escaped = true
			if i+1 >= len(b) {
				return 0, false, false
			}
			switch b[i+1] {
			case '"', '\\', '/', 'b', 'f', 'n', 'r', 't':
				i += 2
			case 'u':
				r, ok := hex4(b, i+2)
				if !ok || r >= 0xd800 && r < 0xe000 {
					return 0, false, false
				}
				i += 6
			default:
				return 0, false, false
			}
		default: // a control character
			return 0, false, false
		}
	}
}

func skipString[T flatText](b T, i int) (int, bool) {
	end, _, ok := stringEnd(b, i)
	return end, ok
}

// scanString returns the value of the string starting at the quote b[i] and
// the index just past it.
func scanString[T flatText](b T, i int) (string, int, bool) {
	end, escaped, ok := stringEnd(b, i)
	if !ok {
		return "", i, false
	}
	raw := b[i+1 : end-1]
	if !escaped {
		return string(raw), end, true
	}
	var sb strings.Builder
	sb.Grow(len(raw))
	for k := 0; k < len(raw); {
		c := raw[k]
		if c != '\\' {
			// Copy the run up to the next backslash in one call.
			j := k + 1
			for j < len(raw) && plainStringByte[raw[j]] {
				j++
			}
			writeRun(&sb, raw[k:j])
			k = j
			continue
		}
		switch raw[k+1] {
		case 'b':
			sb.WriteByte('\b')
		case 'f':
			sb.WriteByte('\f')
		case 'n':
			sb.WriteByte('\n')
		case 'r':
			sb.WriteByte('\r')
		case 't':
			sb.WriteByte('\t')
		case 'u':
			r, _ := hex4(raw, k+2) // checked by stringEnd
			sb.WriteRune(r)
			k += 6
			continue
		default: // '"', '\\', '/'
			sb.WriteByte(raw[k+1])
		}
		k += 2
	}
	return sb.String(), end, true
}

// writeRun appends a run of plain bytes to sb without converting it.
func writeRun[T flatText](sb *strings.Builder, run T) {
	switch r := any(run).(type) {
	case string:
		sb.WriteString(r)
	case []byte:
		sb.Write(r)
	}
}

func hex4[T flatText](b T, i int) (rune, bool) {
	if len(b)-i < 4 {
		return 0, false
	}
	var r rune
	for k := i; k < i+4; k++ {
		c := b[k]
		switch {
		case '0' <= c && c <= '9':
			c -= '0'
		case 'a' <= c && c <= 'f':
			c -= 'a' - 10
		case 'A' <= c && c <= 'F':
			c -= 'A' - 10
		default:
			return 0, false
		}
		r = r<<4 | rune(c)
	}
	return r, true
}

// skipNumber skips a JSON number (full grammar) starting at b[i].
func skipNumber[T flatText](b T, i int) (int, bool) {
	if b[i] == '-' {
		i++
	}
	if i >= len(b) {
		return i, false
	}
	switch {
	case b[i] == '0':
		i++
	case '1' <= b[i] && b[i] <= '9':
		i = skipDigits(b, i)
	default:
		return i, false
	}
	if i < len(b) && b[i] == '.' {
		j := skipDigits(b, i+1)
		if j == i+1 {
			return i, false
		}
		i = j
	}
	if i < len(b) && (b[i] == 'e' || b[i] == 'E') {
		i++
		if i < len(b) && (b[i] == '+' || b[i] == '-') {
			i++
		}
		j := skipDigits(b, i)
		if j == i {
			return i, false
		}
		i = j
	}
	return i, true
}

func skipDigits[T flatText](b T, i int) int {
	for i < len(b) && '0' <= b[i] && b[i] <= '9' {
		i++
	}
	return i
}

// scanInt converts an integer -?(0|[1-9][0-9]*) of at most maxFlatDigits
// digits starting at b[i]; anything else (a fraction, an exponent, more
// digits) fails.
func scanInt[T flatText](b T, i int) (int64, int, bool) {
	neg := b[i] == '-'
	if neg {
		i++
	}
	start := i
	if i < len(b) && b[i] == '0' {
		i++
	} else {
		i = skipDigits(b, i)
	}
	if i == start || i-start > maxFlatDigits {
		return 0, i, false
	}
	if i < len(b) && (b[i] == '.' || b[i] == 'e' || b[i] == 'E' || '0' <= b[i] && b[i] <= '9') {
		return 0, i, false
	}
	var n int64
	for k := start; k < i; k++ {
		n = n*10 + int64(b[k]-'0')
	}
	if neg {
		n = -n
	}
	return n, i, true
}

// Each message's JSON: json.Unmarshal into a zero message (errors wrapped by
// unmarshal), with the fast path of scanFlatObject first. The field tables
// are in struct order and never modified (TestFlatFieldTables checks them
// against the struct tags; FuzzFlatObjectDifferential checks every parse
// function against plain encoding/json).

var proxyPollRequestFields = [...]flatField{
	{"Sid", flatString}, {"Version", flatString}, {"Type", flatString},
	{"NAT", flatString}, {"Clients", flatInt}, {"AcceptedRelayPattern", flatStringPtr},
}

func parseProxyPollRequest(b []byte) (ProxyPollRequest, error) {
	var v [len(proxyPollRequestFields)]flatValue
	if scanFlatObject(b, proxyPollRequestFields[:], v[:]) {
		r := ProxyPollRequest{Sid: v[0].str, Version: v[1].str, Type: v[2].str, NAT: v[3].str, Clients: int(v[4].num)}
		if v[5].set {
			p := v[5].str
			r.AcceptedRelayPattern = &p
		}
		return r, nil
	}
	var r ProxyPollRequest
	err := unmarshal(b, &r)
	return r, err
}

var proxyPollResponseFields = [...]flatField{
	{"Status", flatString}, {"Offer", flatString}, {"NAT", flatString},
	{"NextPoll", flatInt}, {"RelayURL", flatString},
}

func parseProxyPollResponse(b []byte) (ProxyPollResponse, error) {
	var v [len(proxyPollResponseFields)]flatValue
	if scanFlatObject(b, proxyPollResponseFields[:], v[:]) {
		return ProxyPollResponse{Status: v[0].str, Offer: v[1].str, NAT: v[2].str, NextPoll: v[3].num, RelayURL: v[4].str}, nil
	}
	var r ProxyPollResponse
	err := unmarshal(b, &r)
	return r, err
}

var proxyAnswerRequestFields = [...]flatField{{"Version", flatString}, {"Sid", flatString}, {"Answer", flatString}}

func parseProxyAnswerRequest(b []byte) (ProxyAnswerRequest, error) {
	var v [len(proxyAnswerRequestFields)]flatValue
	if scanFlatObject(b, proxyAnswerRequestFields[:], v[:]) {
		return ProxyAnswerRequest{Version: v[0].str, Sid: v[1].str, Answer: v[2].str}, nil
	}
	var r ProxyAnswerRequest
	err := unmarshal(b, &r)
	return r, err
}

var proxyAnswerResponseFields = [...]flatField{{"Status", flatString}}

func parseProxyAnswerResponse(b []byte) (ProxyAnswerResponse, error) {
	var v [len(proxyAnswerResponseFields)]flatValue
	if scanFlatObject(b, proxyAnswerResponseFields[:], v[:]) {
		return ProxyAnswerResponse{Status: v[0].str}, nil
	}
	var r ProxyAnswerResponse
	err := unmarshal(b, &r)
	return r, err
}

var clientPollRequestFields = [...]flatField{{"offer", flatString}, {"nat", flatString}, {"fingerprint", flatString}}

func parseClientPollRequest(b []byte) (ClientPollRequest, error) {
	var v [len(clientPollRequestFields)]flatValue
	if scanFlatObject(b, clientPollRequestFields[:], v[:]) {
		return ClientPollRequest{Offer: v[0].str, NAT: v[1].str, Fingerprint: v[2].str}, nil
	}
	var r ClientPollRequest
	err := unmarshal(b, &r)
	return r, err
}

var clientPollResponseFields = [...]flatField{{"answer", flatString}, {"error", flatString}}

func parseClientPollResponse(b []byte) (ClientPollResponse, error) {
	var v [len(clientPollResponseFields)]flatValue
	if scanFlatObject(b, clientPollResponseFields[:], v[:]) {
		return ClientPollResponse{Answer: v[0].str, Error: v[1].str}, nil
	}
	var r ClientPollResponse
	err := unmarshal(b, &r)
	return r, err
}

var (
	sessionDescriptionFields      = [...]flatField{{"type", flatStringPtr}, {"sdp", flatStringPtr}}
	sessionDescriptionCheckFields = [...]flatField{{"type", flatStringPtr}, {"sdp", flatStringPtrCheck}}
)

// parseSessionDescription decodes s as Snowflake does, json.Unmarshal into
// a map (so keys match exactly: "Type" or "SDP" is not "type" or "sdp"),
// with the fast path first. The error is not wrapped; its text is
// Snowflake's reason. Without keepSDP, sdp is "" when the fast path takes
// s. s must be valid UTF-8.
func parseSessionDescription(s string, keepSDP bool) (typ, sdp string, err error) {
	fields := sessionDescriptionFields[:]
	if !keepSDP {
		fields = sessionDescriptionCheckFields[:]
	}
	var v [len(sessionDescriptionFields)]flatValue
	// A missing or null key is an error, worded by the slow path.
	if scanFlat(s, fields, v[:], true) && v[0].set && v[1].set {
		return v[0].str, v[1].str, nil
	}
	return unmarshalSessionDescription(s)
}

// unmarshalSessionDescription is parseSessionDescription without the fast
// path: the checks and texts of Snowflake's DeserializeSessionDescription,
// in its order.
func unmarshalSessionDescription(s string) (typ, sdp string, err error) {
	var m map[string]any
	if err := json.Unmarshal([]byte(s), &m); err != nil {
		return "", "", err
	}
	t, ok := m["type"]
	if !ok {
		return "", "", errSDPNoType
	}
	d, ok := m["sdp"]
	if !ok {
		return "", "", errSDPNoSDP
	}
	if typ, ok = t.(string); !ok {
		return "", "", errSDPTypeNotString
	}
	if sdp, ok = d.(string); !ok {
		return "", "", errSDPNotString
	}
	return typ, sdp, nil
}
