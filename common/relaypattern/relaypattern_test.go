package relaypattern

import (
	"errors"
	"testing"
)

func mustParse(tb testing.TB, rule string) Pattern {
	tb.Helper()
	p, err := Parse(rule)
	if err != nil {
		tb.Fatalf("Parse(%q): %v", rule, err)
	}
	return p
}

func TestParse(t *testing.T) {
	tests := []struct {
		rule    string
		wantErr bool
		exact   bool
		suffix  string
	}{
		{rule: "", suffix: ""},
		{rule: "$", suffix: ""},
		{rule: "^$", exact: true, suffix: ""},
		{rule: "snowflake.torproject.net$", suffix: "snowflake.torproject.net"},
		{rule: "^snowflake.torproject.net$", exact: true, suffix: "snowflake.torproject.net"},
		{rule: "Snowflake.TorProject.NET$", suffix: "snowflake.torproject.net"},
		{rule: "^^a$", exact: true, suffix: "^a"}, // only one '^' is stripped
		{rule: "a$$", suffix: "a$"},               // only one '$' is stripped
		{rule: "$^", wantErr: true},
		{rule: "snowflake.torproject.net", wantErr: true},
		{rule: "^snowflake.torproject.net", wantErr: true},
		{rule: "^", wantErr: true},
		{rule: " ", wantErr: true},
		{rule: "a$ ", wantErr: true},
	}
	for _, tt := range tests {
		t.Run(tt.rule, func(t *testing.T) {
			p, err := Parse(tt.rule)
			if tt.wantErr {
				if !errors.Is(err, ErrInvalidPattern) {
					t.Fatalf("Parse(%q) error = %v, want ErrInvalidPattern", tt.rule, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("Parse(%q): %v", tt.rule, err)
			}
			if p.exact != tt.exact || p.IsExact() != tt.exact || p.suffix != tt.suffix {
				t.Errorf("Parse(%q) = exact %v suffix %q, want exact %v suffix %q", tt.rule, p.exact, p.suffix, tt.exact, tt.suffix)
			}
			if p.String() != tt.rule {
				t.Errorf("String() = %q, want %q", p.String(), tt.rule)
			}
		})
	}
}

func TestZeroValueIsEmptyRule(t *testing.T) {
	var zero Pattern
	if zero != mustParse(t, "") {
		t.Fatal("zero Pattern differs from Parse(\"\")")
	}
	for _, host := range []string{"", "snowflake.torproject.net", "1.1.1.1"} {
		if !zero.Match(host) {
			t.Errorf("zero Pattern does not match %q", host)
		}
	}
}

// TestMatchMember holds every vector of Snowflake's namematcher
// TestMatchMember (spec section 7) plus the proxy's relay-URL vectors that
// reach the pattern (section 3.5).
func TestMatchMember(t *testing.T) {
	tests := []struct {
		rule, host string
		want       bool
	}{
		// Snowflake common/namematcher TestMatchMember.
		{"", "", true},
		{"^snowflake.torproject.net$", "snowflake.torproject.net", true},
		{"^snowflake.torproject.net$", "faketorproject.net", false},
		{"snowflake.torproject.net$", "faketorproject.net", false},
		{"snowflake.torproject.net$", "snowflake.torproject.net", true},
		{"snowflake.torproject.net$", "imaginary-01-snowflake.torproject.net", true},
		{"snowflake.torproject.net$", "imaginary-aaa-snowflake.torproject.net", true},
		{"snowflake.torproject.net$", "imaginary-aaa-snowflake.faketorproject.net", false},
		// Snowflake proxy TestUtilityFuncs (checkIsRelayURLAcceptable), host part.
		{"snowflake.torproject.net$", "evil.com", false},
		{"torproject.net$", "faketorproject.net", true},
		{"^1.1.1.1$", "1.1.1.1", true},
		{"$", "😀", true},
		{"$", "xn--bcher-kva.example", true},
		{"$", "bücher.example", true},
		// No label boundary: documented compatibility behaviour.
		{"example.com$", "other-domain-example.com", true},
		{"example.com$", "evilexample.com", true},
		{".example.com$", "evilexample.com", false},
		{".example.com$", "www.example.com", true},
		{".example.com$", "example.com", false},
		// '.' is literal, not a regexp wildcard.
		{"^1.1.1.1$", "1x1x1x1", false},
		{"a.b$", "axb", false},
		// Exact means exact.
		{"^snowflake.torproject.net$", "x.snowflake.torproject.net", false},
		{"^snowflake.torproject.net$", "snowflake.torproject.net.", false},
		{"^snowflake.torproject.net$", "", false},
		{"^$", "", true},
		{"^$", "a", false},
		{"", "anything.at.all", true},
		{"$", "", true},
		{"snowflake.torproject.net$", "", false},
		{"snowflake.torproject.net$", "torproject.net", false},
	}
	for _, tt := range tests {
		t.Run(tt.rule+"<>"+tt.host, func(t *testing.T) {
			if got := mustParse(t, tt.rule).Match(tt.host); got != tt.want {
				t.Errorf("Parse(%q).Match(%q) = %v, want %v", tt.rule, tt.host, got, tt.want)
			}
		})
	}
}

// TestMatchCaseInsensitive covers Flurry's one deliberate difference from
// Snowflake: ASCII case is folded on both sides.
func TestMatchCaseInsensitive(t *testing.T) {
	tests := []struct {
		rule, host string
		want       bool
	}{
		{"snowflake.torproject.net$", "Snowflake.TorProject.NET", true},
		{"SNOWFLAKE.torproject.net$", "snowflake.torproject.net", true},
		{"^Snowflake.TorProject.net$", "sNOWFLAKE.TORPROJECT.NET", true},
		{"^Snowflake.TorProject.net$", "x.snowflake.torproject.net", false},
		{"torproject.net$", "FAKETORPROJECT.NET", true},
		// Only ASCII folds: KELVIN SIGN (U+212A) is not "k", Ü is not ü.
		{"k.example$", "\u212a.example", false},
		{"^k.example$", "\u212a.example", false},
		{"bücher.example$", "BÜCHER.example", false},
		{"bücher.example$", "BüCHER.example", true},
	}
	for _, tt := range tests {
		t.Run(tt.rule+"<>"+tt.host, func(t *testing.T) {
			if got := mustParse(t, tt.rule).Match(tt.host); got != tt.want {
				t.Errorf("Parse(%q).Match(%q) = %v, want %v", tt.rule, tt.host, got, tt.want)
			}
		})
	}
}

// TestMatchSubset holds every vector of Snowflake's namematcher
// TestMatchSubset (spec section 7) and the broker consequences listed in
// section 1.5.
func TestMatchSubset(t *testing.T) {
	tests := []struct {
		rule, other string
		want        bool
	}{
		// Snowflake common/namematcher TestMatchSubset.
		{"", "", true},
		{"^snowflake.torproject.net$", "^snowflake.torproject.net$", true},
		{"snowflake.torproject.net$", "^snowflake.torproject.net$", true},
		{"snowflake.torproject.net$", "snowflake.torproject.net$", true},
		{"snowflake.torproject.net$", "testing-snowflake.torproject.net$", true},
		{"snowflake.torproject.net$", "^testing-snowflake.torproject.net$", true},
		{"snowflake.torproject.net$", "", false},
		// Section 1.5: proxy pattern (rule) vs broker pattern (other).
		{"snowflake.torproject.net$", "x-snowflake.torproject.net$", true},
		{"", "snowflake.torproject.net$", true},  // empty proxy pattern accepted everywhere
		{"", "^snowflake.torproject.net$", true}, // ... even by an exact broker
		{"$", "", true},
		{"snowflake.torproject.net$", "$", false},
		// Exact is a superset only of the identical exact pattern.
		{"^snowflake.torproject.net$", "snowflake.torproject.net$", false},
		{"^snowflake.torproject.net$", "^x.snowflake.torproject.net$", false},
		{"^snowflake.torproject.net$", "", false},
		{"^$", "", false},
		{"^$", "^$", true},
		// Narrower suffix is not a superset of a wider one.
		{"testing-snowflake.torproject.net$", "snowflake.torproject.net$", false},
		// Case folding (Flurry extension).
		{"Snowflake.TorProject.net$", "^SNOWFLAKE.torproject.NET$", true},
		{"^Snowflake.TorProject.net$", "^SNOWFLAKE.torproject.NET$", true},
	}
	for _, tt := range tests {
		t.Run(tt.rule+"<>"+tt.other, func(t *testing.T) {
			p, o := mustParse(t, tt.rule), mustParse(t, tt.other)
			if got := p.IsSupersetOf(o); got != tt.want {
				t.Errorf("Parse(%q).IsSupersetOf(Parse(%q)) = %v, want %v", tt.rule, tt.other, got, tt.want)
			}
		})
	}
}

func TestLowerASCIINoAlloc(t *testing.T) {
	allocs := testing.AllocsPerRun(100, func() {
		_ = lowerASCII("snowflake.torproject.net")
	})
	if allocs != 0 {
		t.Errorf("lowerASCII of a lower-case name allocates %v times", allocs)
	}
}

func BenchmarkMatch(b *testing.B) {
	p := mustParse(b, "snowflake.torproject.net$")
	b.ReportAllocs()
	for b.Loop() {
		if !p.Match("imaginary-01-Snowflake.torproject.net") {
			b.Fatal("no match")
		}
	}
}
