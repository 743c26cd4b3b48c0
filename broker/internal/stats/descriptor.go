package stats

import (
	"bytes"
	"cmp"
	"context"
	"errors"
	"io"
	"slices"
	"strconv"
	"time"
)

// binCount rounds n up to the next multiple of 8 (0 stays 0), as Snowflake
// does for every count that describes clients or polls.
func binCount(n uint64) uint64 {
	return (n + 7) / 8 * 8
}

// appendCountries appends Snowflake's country list "CC=N,CC=N" (empty for no
// countries): counts rounded up to multiples of 8 if binned, sorted by count
// (after rounding) descending, then by country code ascending.
func appendCountries(b []byte, counts map[string]uint64, binned bool) []byte {
	type record struct {
		cc string
		n  uint64
	}
	rs := make([]record, 0, len(counts))
	for cc, n := range counts {
		if binned {
			n = binCount(n)
		}
		rs = append(rs, record{cc, n})
	}
	slices.SortFunc(rs, func(a, b record) int {
		if c := cmp.Compare(b.n, a.n); c != 0 {
			return c
		}
		return cmp.Compare(a.cc, b.cc)
	})
	for i, r := range rs {
		if i > 0 {
			b = append(b, ',')
		}
		b = append(b, r.cc...)
		b = append(b, '=')
		b = strconv.AppendUint(b, r.n, 10)
	}
	return b
}

func appendLine(b []byte, key string, n uint64) []byte {
	b = append(b, key...)
	b = append(b, ' ')
	b = strconv.AppendUint(b, n, 10)
	return append(b, '\n')
}

func appendCountryLine(b []byte, key string, counts map[string]uint64, binned bool) []byte {
	b = append(b, key...)
	b = append(b, ' ')
	b = appendCountries(b, counts, binned)
	return append(b, '\n')
}

// appendDescriptor appends the period's descriptor in Snowflake's format
// (see the package documentation) for a period of length interval ending
// at end.
func (p *period) appendDescriptor(b []byte, end time.Time, interval time.Duration) []byte {
	b = append(b, "snowflake-stats-end "...)
	b = end.UTC().AppendFormat(b, "2006-01-02 15:04:05")
	b = append(b, " ("...)
	b = strconv.AppendInt(b, int64(interval/time.Second), 10)
	b = append(b, " s)\n"...)

	b = appendCountryLine(b, "snowflake-ips", p.proxyCountries, false)
	for t := range typeIdx(numTypes) {
		if t == typeUnknown {
			continue // Snowflake never prints snowflake-ips-unknown
		}
		b = appendLine(b, "snowflake-ips-"+t.String(), p.ipsByType[t])
	}
	b = appendLine(b, "snowflake-ips-total", p.ipsTotal)
	b = appendLine(b, "snowflake-idle-count", binCount(p.idle))
	b = appendLine(b, "snowflake-proxy-poll-with-relay-url-count", binCount(p.withRelay))
	b = appendLine(b, "snowflake-proxy-poll-without-relay-url-count", binCount(p.withoutRelay))
	b = appendLine(b, "snowflake-proxy-rejected-for-relay-url-count", binCount(p.rejectedRelay))

	b = appendLine(b, "client-denied-count", binCount(p.denied))
	b = appendLine(b, "client-restricted-denied-count", binCount(p.restrictedDenied))
	b = appendLine(b, "client-unrestricted-denied-count", binCount(p.unrestrictedDenied))
	b = appendLine(b, "client-snowflake-match-count", binCount(p.matched))
	b = appendLine(b, "client-snowflake-timeout-count", binCount(p.timeout))

	for m := range methodIdx(numDescriptorMethods) {
		name := m.String()
		b = appendLine(b, "client-"+name+"-count", binCount(p.methodPolls[m]))
		b = appendCountryLine(b, "client-"+name+"-ips", p.methodCountries[m], true)
	}

	for n := range natIdx(numNATs) {
		b = appendLine(b, "snowflake-ips-nat-"+n.String(), p.ipsByNAT[n])
	}
	return b
}

// EndPeriod ends the current period: it writes the descriptor of everything
// counted since the previous period ended (or since New) to w, in one Write
// call, and starts a new period with fresh counts and a fresh key for the
// address hashes. The period ends even if the write fails. Prometheus
// counters are not reset.
func (r *Recorder) EndPeriod(w io.Writer) error {
	fresh := newPeriod() // outside the lock: it allocates
	end := r.now()
	r.mu.Lock()
	p := r.period
	r.period = fresh
	r.mu.Unlock()
	_, err := w.Write(p.appendDescriptor(make([]byte, 0, 1024), end, r.interval))
	return err
}

// Run ends a period every Config.Interval (the first one Interval after Run
// starts), appending its descriptor to Config.MetricsLogPath (or logging it
// when there is none), until ctx is done. It returns nil when ctx is done.
// Errors writing the file are logged; the period ends regardless.
func (r *Recorder) Run(ctx context.Context) error {
	t := time.NewTicker(r.interval)
	defer t.Stop()
	for {
		select {
		case <-ctx.Done():
			return nil
		case <-t.C:
			r.writeDescriptor(ctx)
		}
	}
}

func (r *Recorder) writeDescriptor(ctx context.Context) {
	if r.logPath == "" {
		var buf bytes.Buffer
		_ = r.EndPeriod(&buf) // a bytes.Buffer write cannot fail
		r.log.InfoContext(ctx, "metrics descriptor", "descriptor", buf.String())
		return
	}
	f, err := openMetricsLog(r.logPath)
	if err != nil {
		_ = r.EndPeriod(io.Discard)
		r.log.ErrorContext(ctx, "metrics descriptor lost", "err", err)
		return
	}
	err = r.EndPeriod(f)
	err = errors.Join(err, f.Close())
	if err != nil {
		r.log.ErrorContext(ctx, "writing metrics descriptor", "err", err)
	}
}
