//go:build !(linux || darwin)

package loadgen

// raiseFileLimit is a no-op where RLIMIT_NOFILE does not exist or differs.
func raiseFileLimit(need uint64) (uint64, error) { return need, nil }
