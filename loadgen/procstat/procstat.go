package procstat

import (
	"bytes"
	"errors"
	"fmt"
	"os"
	"strconv"
	"time"
)

// ErrProcStats is returned when a process's statistics cannot be read.
var ErrProcStats = errors.New("cannot read process statistics")

// clockTicks is USER_HZ, the unit of utime and stime in /proc/PID/stat: 100
// on every Linux architecture Go supports.
const clockTicks = 100

// ProcSample is one reading of a process's memory and CPU time.
type ProcSample struct {
	At  time.Time
	RSS int64         // resident set size, bytes (VmRSS)
	HWM int64         // peak resident set size, bytes (VmHWM)
	CPU time.Duration // user + system CPU time consumed so far
}

// ReadProc reads /proc/PID/status and /proc/PID/stat (Linux only).
func ReadProc(pid int) (ProcSample, error) {
	dir := "/proc/" + strconv.Itoa(pid)
	status, err := os.ReadFile(dir + "/status")
	if err != nil {
		return ProcSample{}, fmt.Errorf("%w: %w", ErrProcStats, err)
	}
	stat, err := os.ReadFile(dir + "/stat")
	if err != nil {
		return ProcSample{}, fmt.Errorf("%w: %w", ErrProcStats, err)
	}
	s := ProcSample{At: time.Now()}
	if s.RSS, s.HWM, err = parseStatus(status); err != nil {
		return ProcSample{}, err
	}
	if s.CPU, err = parseStat(stat); err != nil {
		return ProcSample{}, err
	}
	return s, nil
}

// parseStatus returns VmRSS and VmHWM in bytes from /proc/PID/status.
func parseStatus(b []byte) (rss, hwm int64, err error) {
	found := 0
	for line := range bytes.Lines(b) {
		key, rest, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		var dst *int64
		switch string(key) {
		case "VmRSS":
			dst = &rss
		case "VmHWM":
			dst = &hwm
		default:
			continue
		}
		f := bytes.Fields(rest)
		if len(f) != 2 || string(f[1]) != "kB" {
			return 0, 0, fmt.Errorf("%w: status line %q", ErrProcStats, bytes.TrimSpace(line))
		}
		kb, err := strconv.ParseInt(string(f[0]), 10, 64)
		if err != nil {
			return 0, 0, fmt.Errorf("%w: status line %q", ErrProcStats, bytes.TrimSpace(line))
		}
		*dst = kb * 1024
		found++
	}
	if found != 2 {
		return 0, 0, fmt.Errorf("%w: no VmRSS/VmHWM in status", ErrProcStats)
	}
	return rss, hwm, nil
}

// parseStat returns utime+stime from /proc/PID/stat. The command name in
// field 2 is in parentheses and may itself contain spaces and parentheses,
// so fields are counted from the last ')'.
func parseStat(b []byte) (time.Duration, error) {
	i := bytes.LastIndexByte(b, ')')
	if i < 0 {
		return 0, fmt.Errorf("%w: stat has no command field", ErrProcStats)
	}
	f := bytes.Fields(b[i+1:])
	// f[0] is field 3 (state); utime and stime are fields 14 and 15.
	if len(f) < 13 {
		return 0, fmt.Errorf("%w: stat too short", ErrProcStats)
	}
	utime, err1 := strconv.ParseInt(string(f[11]), 10, 64)
	stime, err2 := strconv.ParseInt(string(f[12]), 10, 64)
	if err1 != nil || err2 != nil {
		return 0, fmt.Errorf("%w: stat utime/stime not numbers", ErrProcStats)
	}
	return time.Duration(utime+stime) * time.Second / clockTicks, nil
}

// CPUPercent is the CPU used between two samples as a percentage of one
// core (200 means two cores fully busy).
func CPUPercent(a, b ProcSample) float64 {
	wall := b.At.Sub(a.At)
	if wall <= 0 {
		return 0
	}
	return 100 * float64(b.CPU-a.CPU) / float64(wall)
}

// CPUPerEvent is the CPU time used between two samples divided by n
// events, in microseconds (0 without events).
func CPUPerEvent(a, b ProcSample, n int64) float64 {
	if n <= 0 {
		return 0
	}
	return float64((b.CPU - a.CPU).Microseconds()) / float64(n)
}

// Watcher samples a process if pid > 0; with pid 0 every method is a
// no-op returning zero samples.
type Watcher struct{ PID int }

// Sample reads the process's figures; ok is false without a PID.
func (w Watcher) Sample() (ProcSample, bool, error) {
	if w.PID <= 0 {
		return ProcSample{}, false, nil
	}
	s, err := ReadProc(w.PID)
	return s, err == nil, err
}

// BaselineRSS is the process's RSS before a run: 0 with pid 0, an error if
// the process cannot be read.
func (w Watcher) BaselineRSS() (int64, error) {
	s, _, err := w.Sample()
	return s.RSS, err
}

// ProcIO is a process's count of read and write system calls
// (/proc/PID/io: read, write and their vector forms, socket or not; not
// sendmsg, recvmsg and their kin).
type ProcIO struct {
	Reads, Writes int64
}

// ReadProcIO reads /proc/PID/io (Linux only; the caller must be allowed to
// read it: the same user or root).
func ReadProcIO(pid int) (ProcIO, error) {
	b, err := os.ReadFile("/proc/" + strconv.Itoa(pid) + "/io")
	if err != nil {
		return ProcIO{}, fmt.Errorf("%w: %w", ErrProcStats, err)
	}
	return parseProcIO(b)
}

func parseProcIO(b []byte) (ProcIO, error) {
	var io ProcIO
	found := 0
	for line := range bytes.Lines(b) {
		key, rest, ok := bytes.Cut(line, []byte{':'})
		if !ok {
			continue
		}
		var dst *int64
		switch string(key) {
		case "syscr":
			dst = &io.Reads
		case "syscw":
			dst = &io.Writes
		default:
			continue
		}
		v, err := strconv.ParseInt(string(bytes.TrimSpace(rest)), 10, 64)
		if err != nil {
			return ProcIO{}, fmt.Errorf("%w: io line %q", ErrProcStats, bytes.TrimSpace(line))
		}
		*dst = v
		found++
	}
	if found != 2 {
		return ProcIO{}, fmt.Errorf("%w: no syscr/syscw in io", ErrProcStats)
	}
	return io, nil
}
