//go:build !unix

package broker

// fileLimit returns 0: the file limit is unknown here, so connections per
// address have no fair share under pressure.
func fileLimit() int { return 0 }
