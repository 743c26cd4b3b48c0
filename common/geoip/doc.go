// Package geoip maps IP addresses to country codes using tor's geoip
// databases, for the broker's and proxy's per-country statistics.
//
// # File formats
//
// The input files are the ones tor reads (Debian package tor-geoipdb:
// /usr/share/tor/geoip and /usr/share/tor/geoip6), produced by tor's
// geoip-db-tool. Both are ASCII text, one range per line:
//
//	# comment lines start with '#'; blank lines are ignored
//	IPv4 file:  INTLOW,INTHIGH,CC     e.g. 134744064,134744319,US
//	IPv6 file:  IPV6LOW,IPV6HIGH,CC   e.g. 2001:4860::,2001:4860:ffff:ffff:ffff:ffff:ffff:ffff,US
//
// INTLOW and INTHIGH are decimal uint32 values of the big-endian IPv4
// address; IPV6LOW and IPV6HIGH are textual IPv6 addresses. Ranges are
// inclusive at both ends. CC is two characters from [A-Z0-9] (ISO 3166
// codes plus the registries' "EU", "AP", "A1" and the like), or "??", which
// the files use for ranges of unknown country. Spaces around fields and a
// trailing CR are tolerated.
//
// # Validation
//
// Snowflake loses all proxy statistics silently when a database cannot be
// read (docs/design.md, weakness 17). Here every problem is a load error
// that names the file and the line: a malformed line, a range whose low end
// is above its high end, ranges that overlap, a country code outside
// [A-Z0-9]{2} (other than "??"), a line longer than 1 KiB, a file larger than
// 64 MiB or with more than 4 Mi ranges, and a file with no ranges at all.
// Ranges need not be sorted in the file.
//
// # Representation and lookup
//
// A [Table] is immutable. Each address family is stored as a sorted list of
// boundaries: the start address of a run of addresses with one country
// (IPv4 as uint32, IPv6 as two uint64) and a parallel []uint16 index into the
// table's interned country-code strings, with index 0 meaning unknown (gaps
// between ranges and "??" ranges). Adjacent ranges of one country are merged.
// [Table.Lookup] is a binary search and does not allocate; IPv4-mapped IPv6
// addresses (::ffff:a.b.c.d) are looked up in the IPv4 table, so IPv6-file
// ranges inside ::ffff:0:0/96 (none in tor's files) are never consulted.
//
// Debian's files of 2026 (386k IPv4 and 277k IPv6 ranges) load in about
// 0.15 s into 7.4 MiB of tables; a lookup takes 15 to 150 ns.
//
// [DB] holds the current Table behind an atomic pointer: lookups never block,
// and [DB.Reload] (run on SIGHUP) swaps in a new table only if the files load
// without error, keeping the old one otherwise.
package geoip
