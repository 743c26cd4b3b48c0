package loadgen

import (
	"fmt"
	"os"
	"strconv"
	"strings"
)

// pageSize is the unit of the mem fields of /proc/net/sockstat.
var pageSize = int64(os.Getpagesize())

// socketMemory reads the kernel memory that proto's sockets ("TCP",
// "UDP") hold in this network namespace, in bytes: buffers of every
// process, queued data included, which RSS does not show.
func socketMemory(proto string) (int64, error) {
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
