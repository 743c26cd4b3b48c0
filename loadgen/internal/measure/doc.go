// Package measure holds what every load run shares: the loopback-only
// checks and dialers (ErrNotLoopback), configuration errors, progress
// lines, latency percentiles and error samples, the open-file limit, a
// worker pool and pacing, and the tables and SVG plots of the results.
package measure
