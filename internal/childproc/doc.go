// Package childproc supervises child processes: the demo's cluster, the
// load generator's chains and soak, and the tests that run real binaries.
//
// A Process runs one child in its own process group, with its output
// appended to a log file, and waits for it to be ready by polling a probe
// under a deadline. Kill sends SIGKILL to the group; Stop sends SIGTERM
// (or the configured signal), waits a grace period, then kills the group,
// and reports a process that needed killing, exited non-zero or left
// children behind; Restart is Stop then Start; LogTail reads the end of
// the log. On Linux the kernel kills every child should the supervising
// program itself die.
package childproc
