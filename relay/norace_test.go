//go:build !race

package relay

// raceEnabled reports whether the race detector is on: allocation counts
// are not meaningful under it (see TestCarrierAllocsPerPacket).
const raceEnabled = false
