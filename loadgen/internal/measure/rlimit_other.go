//go:build !(linux || darwin)

package measure

// RaiseFileLimit is a no-op where RLIMIT_NOFILE does not exist or differs.
func RaiseFileLimit(need uint64) (uint64, error) { return need, nil }
