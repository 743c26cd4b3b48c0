// Package strikes counts, per proxy address, the client offers a proxy took
// and never answered, so that the broker can match such proxies last.
//
// # Identity
//
// A Snowflake proxy draws a fresh session id for every poll, so the only
// identity a proxy has is its address. The table never stores an address:
// [Table.Key] masks it (IPv4 to the address itself, /32; IPv6 to its /64,
// since one host's privacy addresses share a /64) and hashes the result with
// hash/maphash under a seed drawn at random for each table. Keys cannot be
// turned back into addresses, and two tables (two broker runs) give the same
// address different keys.
//
// # Lifetime and memory
//
// Strikes live in two generations of maps, current and previous, each
// covering half of [Config.Period]. A strike is recorded in the current
// generation; when a half-period boundary passes, the current generation
// becomes the previous one and the old previous one is forgotten. Boundaries
// lie on a fixed grid counted from [New], and the table rotates lazily, on
// the first call after a boundary, so no goroutine and no scan is needed.
// [Table.Count] is the sum of both generations, so a strike counts for more
// than Period/2 and at most Period.
//
// The current generation holds at most [Config.MaxEntries] keys: a strike
// for a new key while it is full is not recorded, only counted
// ([Table.Dropped]). The table therefore never holds more than twice
// MaxEntries keys (a 64-bit key and a 32-bit count each).
package strikes
