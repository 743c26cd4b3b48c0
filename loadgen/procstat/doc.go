// Package procstat reads a process's memory (VmRSS, VmHWM), CPU time,
// threads and I/O from /proc/PID, and the kernel's socket memory and UDP
// drop counters, for the load generator's figures and the tests that
// measure real processes. It needs Linux.
package procstat
