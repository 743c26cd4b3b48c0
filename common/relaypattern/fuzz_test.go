package relaypattern

import "testing"

var fuzzSeeds = []string{
	"", "$", "^$", "^", "$$", "^^$", "a$$",
	"snowflake.torproject.net$", "^snowflake.torproject.net$", "Snowflake.TorProject.NET$",
	"snowflake.torproject.net", "^1.1.1.1$", ".example.com$", "😀$", "\u212a$", "\xff$",
}

// FuzzParse checks that Parse never panics and that a parsed pattern is a
// superset of itself, round-trips through String and Parse, and matches the
// host its rule names.
func FuzzParse(f *testing.F) {
	for _, s := range fuzzSeeds {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, rule string) {
		p, err := Parse(rule)
		if err != nil {
			if rule == "" || rule[len(rule)-1] == '$' {
				t.Fatalf("Parse(%q) rejected a valid rule: %v", rule, err)
			}
			return
		}
		if !p.IsSupersetOf(p) {
			t.Errorf("Parse(%q) is not a superset of itself", rule)
		}
		if p.String() != rule {
			t.Errorf("String() = %q, want %q", p.String(), rule)
		}
		q, err := Parse(p.String())
		if err != nil || q != p {
			t.Errorf("Parse(String()) = %+v, %v, want %+v", q, err, p)
		}
		if !p.Match(p.suffix) {
			t.Errorf("Parse(%q) does not match its own host %q", rule, p.suffix)
		}
	})
}

// FuzzSuperset checks the meaning of IsSupersetOf: if a is a superset of b,
// every host b matches is matched by a.
func FuzzSuperset(f *testing.F) {
	for i, a := range fuzzSeeds {
		b := fuzzSeeds[(i+3)%len(fuzzSeeds)]
		f.Add(a, b, "snowflake.torproject.net")
		f.Add(a, a, "x.example.com")
	}
	f.Add("torproject.net$", "^snowflake.torproject.net$", "snowflake.torproject.net")
	f.Fuzz(func(t *testing.T, ruleA, ruleB, host string) {
		a, errA := Parse(ruleA)
		b, errB := Parse(ruleB)
		if errA != nil || errB != nil {
			return
		}
		if a.IsSupersetOf(b) && b.Match(host) && !a.Match(host) {
			t.Errorf("%q is a superset of %q, which matches %q, but it does not", ruleA, ruleB, host)
		}
		if b.Match(b.suffix) && !a.Match(b.suffix) && a.IsSupersetOf(b) {
			t.Errorf("%q is a superset of %q but does not match %q", ruleA, ruleB, b.suffix)
		}
	})
}
