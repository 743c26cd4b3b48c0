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
	const offered, answered = "offer created", "broker answered"
	offer, ok := EventTimes(logPath, time.Time{}, offered)[offered]
	if !ok {
		return 0, false
	}
	answer, ok := EventTimes(logPath, offer, answered)[answered]
	if !ok {
		return 0, false
	}
	return answer.Sub(offer), true
}

// EventTimes reads a flurry-client log (slog text format) and returns, for
// each of events, the time of the first line at or after from whose
// message contains it ("proxy lost", "offer created", ...). An event
// without such a line is missing from the map.
func EventTimes(logPath string, from time.Time, events ...string) map[string]time.Time {
	out := map[string]time.Time{}
	f, err := os.Open(logPath)
	if err != nil {
		return out
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() && len(out) < len(events) {
		line := sc.Text()
		t, ok := logTime(line)
		if !ok || t.Before(from) {
			continue
		}
		for _, e := range events {
			if _, seen := out[e]; !seen && strings.Contains(line, e) {
				out[e] = t
			}
		}
	}
	return out
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
