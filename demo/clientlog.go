package demo

import (
	"bufio"
	"os"
	"strings"
	"time"
)

// RendezvousTime reads a flurry-client log (slog text format) and returns
// the time from its first "offer created" event to the first "broker
// answered" event after it: how long the first rendezvous with the broker
// took. ok is false if the log has no such pair.
func RendezvousTime(logPath string) (d time.Duration, ok bool) {
	f, err := os.Open(logPath)
	if err != nil {
		return 0, false
	}
	defer f.Close()
	var offer time.Time
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		line := sc.Text()
		switch {
		case offer.IsZero() && strings.Contains(line, "offer created"):
			offer, _ = logTime(line)
		case !offer.IsZero() && strings.Contains(line, "broker answered"):
			if t, good := logTime(line); good {
				return t.Sub(offer), true
			}
		}
	}
	return 0, false
}

// logTime parses the time= attribute of a slog text line.
func logTime(line string) (time.Time, bool) {
	i := strings.Index(line, "time=")
	if i < 0 {
		return time.Time{}, false
	}
	v := line[i+len("time="):]
	if j := strings.IndexByte(v, ' '); j >= 0 {
		v = v[:j]
	}
	t, err := time.Parse(time.RFC3339Nano, v)
	return t, err == nil
}
