// Package relaypattern implements the relay hostname patterns that Snowflake
// proxies and brokers exchange (the AcceptedRelayPattern field of a proxy poll
// and the broker's -allowed-relay-pattern flag), with the exact semantics of
// Snowflake v2.14.1's common/namematcher.
//
// # Syntax
//
// A rule must end with '$', with one exception: the empty rule "" is valid
// and matches every hostname. Parsing strips one trailing '$' and then one
// leading '^':
//
//	rule                          kind    what it matches
//	""                            suffix  every hostname
//	"$"                           suffix  every hostname
//	"snowflake.torproject.net$"   suffix  any hostname ending in the string "snowflake.torproject.net"
//	"^snowflake.torproject.net$"  exact   only "snowflake.torproject.net"
//	"snowflake.torproject.net"    invalid (no trailing '$')
//
// No other character is special: the rule is not a regular expression, and
// '.' is a literal dot.
//
// # Suffix matching has no label boundary
//
// A non-exact rule is a pure string-suffix test, not a DNS-label test: the
// rule "example.com$" matches "example.com" and "www.example.com", but also
// "other-domain-example.com" and "evilexample.com". This is Snowflake's
// behaviour and Flurry keeps it for compatibility: brokers and proxies of both
// implementations must agree on which proxies are acceptable. Operators who
// want a label boundary write it into the rule: ".example.com$" matches only
// proper subdomains of example.com.
//
// # Case
//
// Snowflake compares bytes, so to it "Snowflake.TorProject.net" does not
// match "snowflake.torproject.net$". DNS names are case-insensitive
// (RFC 4343), so Flurry folds ASCII letters A-Z to lower case on both sides
// of every comparison, in Match and in IsSupersetOf. Every comparison that
// Snowflake accepts is still accepted; additionally, names that differ only
// in ASCII case are treated as equal. Non-ASCII bytes are compared as they
// are (no Unicode case folding, which could make distinct code points such as
// the Kelvin sign U+212A equal to "k").
//
// # Superset
//
// The broker accepts a proxy iff the proxy's pattern IsSupersetOf the broker's
// pattern: every hostname the broker may hand out must be acceptable to the
// proxy. An exact pattern is a superset only of the identical exact pattern; a
// suffix pattern s is a superset of any pattern (exact or not) whose string
// ends with s. Hence a proxy sending "" accepts every broker, and a broker
// whose pattern is "" rejects every proxy that sends a non-empty suffix.
package relaypattern
