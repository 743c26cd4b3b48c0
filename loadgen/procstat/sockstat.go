package procstat

import (
	"fmt"
	"os"
	"slices"
	"strconv"
	"strings"
)

// UDPCounter reads the Udp counter called name from /proc/net/snmp.
func UDPCounter(name string) (int64, error) {
	b, err := os.ReadFile("/proc/net/snmp")
	if err != nil {
		return 0, err
	}
	return parseUDPCounter(string(b), name)
}

// parseUDPCounter finds the counter called name in the two "Udp:" lines of
// /proc/net/snmp (names, then values).
func parseUDPCounter(snmp, name string) (int64, error) {
	var names []string
	for line := range strings.Lines(snmp) {
		rest, ok := strings.CutPrefix(line, "Udp: ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		if names == nil {
			names = f
			continue
		}
		if i := slices.Index(names, name); i >= 0 && i < len(f) {
			var v int64
			if _, err := fmt.Sscan(f[i], &v); err != nil {
				return 0, err
			}
			return v, nil
		}
		break
	}
	return 0, fmt.Errorf("no Udp %s in /proc/net/snmp", name)
}

// pageSize is the unit of the mem fields of /proc/net/sockstat.
var pageSize = int64(os.Getpagesize())

// SocketMemory reads the kernel memory that proto's sockets ("TCP",
// "UDP") hold in this network namespace, in bytes: buffers of every
// process, queued data included, which RSS does not show.
func SocketMemory(proto string) (int64, error) {
	b, err := os.ReadFile("/proc/net/sockstat")
	if err != nil {
		return 0, err
	}
	return parseSockstat(string(b), proto)
}

// parseSockstat finds "mem N" (pages) on proto's line of /proc/net/sockstat.
func parseSockstat(text, proto string) (int64, error) {
	for line := range strings.Lines(text) {
		rest, ok := strings.CutPrefix(line, proto+": ")
		if !ok {
			continue
		}
		f := strings.Fields(rest)
		for i := 0; i+1 < len(f); i += 2 {
			if f[i] == "mem" {
				pages, err := strconv.ParseInt(f[i+1], 10, 64)
				if err != nil {
					return 0, fmt.Errorf("sockstat %s mem %q: %w", proto, f[i+1], err)
				}
				return pages * pageSize, nil
			}
		}
	}
	return 0, fmt.Errorf("no %s mem in /proc/net/sockstat", proto)
}
