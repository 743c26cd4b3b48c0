package procstat

import (
	"errors"
	"os"
	"runtime"
	"testing"
	"time"
)

// FuzzParseProc checks that the /proc parsers never panic.
func FuzzParseProc(f *testing.F) {
	f.Add([]byte("VmHWM:\t 2048 kB\nVmRSS:\t 1024 kB\n"), []byte("1 (x) S 1 1 1 0 -1 0 0 0 0 0 250 150 0 0\n"))
	f.Add([]byte("VmRSS: x kB"), []byte("1 (a) b) S"))
	f.Fuzz(func(t *testing.T, status, stat []byte) {
		_, _, _ = parseStatus(status)
		_, _ = parseStat(stat)
	})
}

func TestParseProc(t *testing.T) {
	status := []byte("Name:\tflurry-broker\nVmPeak:\t  99 kB\nVmHWM:\t    2048 kB\nVmRSS:\t    1024 kB\nThreads:\t7\n")
	rss, hwm, err := parseStatus(status)
	if err != nil || rss != 1024*1024 || hwm != 2048*1024 {
		t.Fatalf("parseStatus = %d, %d, %v", rss, hwm, err)
	}
	if _, _, err := parseStatus([]byte("VmRSS: 12 MB\nVmHWM: 1 kB\n")); !errors.Is(err, ErrProcStats) {
		t.Fatalf("bad unit: %v", err)
	}
	if _, _, err := parseStatus([]byte("Name: x\n")); !errors.Is(err, ErrProcStats) {
		t.Fatalf("missing fields: %v", err)
	}
	// A command name with spaces and parentheses; utime 250, stime 150 ticks.
	stat := []byte("1234 (a (b) c) S 1 1234 1234 0 -1 4194560 100 0 0 0 250 150 0 0 20 0 7 0 100 1000000 256 18446744073709551615\n")
	cpu, err := parseStat(stat)
	if err != nil || cpu != 4*time.Second {
		t.Fatalf("parseStat = %v, %v; want 4s", cpu, err)
	}
	if _, err := parseStat([]byte("1234 (x) S 1")); !errors.Is(err, ErrProcStats) {
		t.Fatalf("short stat: %v", err)
	}
}

func TestReadProcSelf(t *testing.T) {
	if runtime.GOOS != "linux" {
		t.Skip("needs /proc")
	}
	s, err := ReadProc(os.Getpid())
	if err != nil {
		t.Fatal(err)
	}
	if s.RSS <= 0 || s.HWM < s.RSS || s.CPU < 0 {
		t.Fatalf("implausible sample %+v", s)
	}
	if _, err := ReadProc(-5); !errors.Is(err, ErrProcStats) {
		t.Fatalf("bad pid: %v", err)
	}
}

func TestParseUDPCounter(t *testing.T) {
	const snmp = `Ip: Forwarding DefaultTTL
Ip: 1 64
Udp: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
Udp: 1000 2 702 900 702 0 0 0 0
UdpLite: InDatagrams NoPorts InErrors OutDatagrams RcvbufErrors SndbufErrors InCsumErrors IgnoredMulti MemErrors
UdpLite: 0 0 0 0 5 0 0 0 0
`
	got, err := parseUDPCounter(snmp, "RcvbufErrors")
	if err != nil || got != 702 {
		t.Errorf("RcvbufErrors = %d, %v; want 702", got, err)
	}
	if got, err := parseUDPCounter(snmp, "OutDatagrams"); err != nil || got != 900 {
		t.Errorf("OutDatagrams = %d, %v; want 900", got, err)
	}
	if _, err := parseUDPCounter("Ip: Forwarding\nIp: 1\n", "RcvbufErrors"); err == nil {
		t.Error("no Udp lines: want an error")
	}
}

func TestParseSockstat(t *testing.T) {
	const text = "sockets: used 15\nTCP: inuse 1 orphan 16 tw 8 alloc 17 mem 1962\nUDP: inuse 3 mem 7\nUDPLITE: inuse 0\n"
	if got, err := parseSockstat(text, "TCP"); err != nil || got != 1962*pageSize {
		t.Errorf("TCP = %d, %v", got, err)
	}
	if got, err := parseSockstat(text, "UDP"); err != nil || got != 7*pageSize {
		t.Errorf("UDP = %d, %v", got, err)
	}
	if _, err := parseSockstat(text, "UDPLITE"); err == nil {
		t.Error("UDPLITE has no mem: want an error")
	}
}

func TestParseProcIO(t *testing.T) {
	got, err := parseProcIO([]byte("rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 3\nread_bytes: 0\n"))
	if err != nil || got != (ProcIO{Reads: 10, Writes: 3}) {
		t.Errorf("got %+v, %v", got, err)
	}
	if _, err := parseProcIO([]byte("rchar: 1\n")); !errors.Is(err, ErrProcStats) {
		t.Errorf("no counters: err = %v", err)
	}
}
