package demo

import (
	"context"
	"fmt"
	"io"
	"slices"
	"strings"
	"time"

	"github.com/flurrypt/flurry/internal/childproc"
)

// Show tells a person at a terminal what a demo does: its steps, the
// processes of a cluster, a download's progress and figures, and how to
// measure a held chain. flurry-demo is its user.
type Show struct {
	// Out receives the steps and figures.
	Out io.Writer
	// CPU returns the CPU time process pid has used so far; nil leaves the
	// CPU per megabyte out.
	CPU func(pid int) (time.Duration, error)
}

// showTick is how often a download's progress line is redrawn.
const showTick = 250 * time.Millisecond

// downloadTimeout bounds a shown download.
const downloadTimeout = 5 * time.Minute

// Step prints the start of a step.
func (s Show) Step(format string, args ...any) {
	fmt.Fprintf(s.Out, "==> "+format+"\n", args...)
}

// Done prints a detail of the current step.
func (s Show) Done(format string, args ...any) {
	fmt.Fprintf(s.Out, "    "+format+"\n", args...)
}

// Since is the time since t, rounded for a person.
func Since(t time.Time) time.Duration {
	return time.Since(t).Round(10 * time.Millisecond)
}

// Cluster lists the cluster's processes with their addresses and PIDs.
func (s Show) Cluster(c *Cluster) {
	if c.HAProxy != nil {
		s.Done("haproxy %s   (pid %d) -> %d brokers", c.BrokerURL, c.HAProxy.PID(), len(c.Brokers))
		for i, b := range c.Brokers {
			s.Done("%s http://%s/   (pid %d)", b.Name(), c.BrokerAddrs[i], b.PID())
		}
		s.Done("nats    %s   (pid %d)", c.NATSURL, c.NATS.PID())
	} else {
		s.Done("broker  %s   (pid %d)", c.BrokerURL, c.Broker.PID())
	}
	s.Done("relay   %s   (pid %d) -> target %s", c.RelayURL, c.Relay.PID(), c.Target.Addr)
	s.Done("natprobe %s   (pid %d)", c.NATProbeURL, c.NATProbe.PID())
	for _, p := range c.Proxies() {
		s.Done("%s (pid %d)", p.Name(), p.PID())
	}
	s.Done("client  socks5://%s   (pid %d)", c.SOCKSAddr, c.Client.PID())
}

// Download fetches the target's file of size bytes through the cluster's
// client, redrawing a progress line, and prints what happened: rendezvous
// time, time to first byte, throughput, the SHA-256 check, the proxies
// that carried it and each process's CPU per megabyte.
func (s Show) Download(ctx context.Context, c *Cluster, size int64) error {
	s.Step("Downloading %s (%s) through client -> proxy -> relay -> target", c.Target.URL, FormatBytes(float64(size)))
	var progress Progress
	cpuBefore := s.cpuTimes(c.Processes())
	type result struct {
		res FetchResult
		err error
	}
	resc := make(chan result, 1)
	start := time.Now()
	fctx, cancel := context.WithTimeout(ctx, downloadTimeout)
	defer cancel()
	go func() {
		res, err := FetchTarget(fctx, c.SOCKSAddr, c.Target, &progress)
		resc <- result{res, err}
	}()
	tick := time.NewTicker(showTick)
	defer tick.Stop()
	var r result
	var servedBy []string // proxies seen carrying the client, in order
	for waiting := true; waiting; {
		select {
		case r = <-resc:
			waiting = false
		case <-tick.C:
			for _, p := range c.ServingProxies(fctx) {
				if !slices.Contains(servedBy, p.Name()) {
					servedBy = append(servedBy, p.Name())
				}
			}
		}
		progressLine(s.Out, progress.Bytes(), size, time.Since(start))
	}
	fmt.Fprintln(s.Out)
	if r.err != nil {
		if ctx.Err() != nil {
			return fmt.Errorf("interrupted: %w", ctx.Err())
		}
		return fmt.Errorf("download failed: %w", r.err)
	}
	s.Step("What happened")
	if rv, ok := RendezvousTime(c.Client.LogPath()); ok {
		s.Done("rendezvous (offer to broker answer)  %v", rv.Round(time.Millisecond))
	}
	// The client grants a SOCKS connection once its session has a proxy:
	// broker rendezvous, WebRTC (ICE, DTLS, SCTP) and the relay's WebSocket.
	s.Done("rendezvous + WebRTC (SOCKS grant)   %v", r.res.Granted.Round(time.Millisecond))
	s.Done("time to first byte                  %v", r.res.FirstByte.Round(time.Millisecond))
	s.Done("whole transfer                      %v", r.res.Total.Round(time.Millisecond))
	s.Done("throughput                          %s/s", FormatBytes(r.res.Throughput()))
	s.Done("SHA-256                             %x  matches the file", r.res.SHA256)
	if len(servedBy) > 0 {
		s.Done("carried by                          %s", strings.Join(servedBy, ", "))
	}
	s.printCPU(c.Processes(), cpuBefore, size)
	return nil
}

// Setup names what a download's figures were measured on, so that they
// are not taken for the side-by-side benchmark's.
func (s Show) Setup(size int64, clientMax, proxies int) {
	s.Done("set-up                              flurry-demo: one %s download, client -max %d, %d proxies polling,\n"+
		"                                        -loopback-only, Flurry's own flags, all processes on this machine's shared\n"+
		"                                        cores; whole transfer includes the rendezvous. Not the side-by-side\n"+
		"                                        benchmark (flurry-loadgen sidebyside, docs/performance.md)",
		FormatBytes(float64(size)), clientMax, proxies)
}

// Hold keeps the chain running until ctx ends (Ctrl-C, SIGTERM) and prints
// how to measure it with flurry-loadgen. It returns an error if one of the
// processes exits on its own meanwhile.
func (s Show) Hold(ctx context.Context, c *Cluster) error {
	s.Step("Holding the chain until Ctrl-C or SIGTERM")
	s.Done("SOCKS5 proxy   %s", c.SOCKSAddr)
	s.Done("target URL     %s (%s, SHA-256 %s)", c.Target.URL, FormatBytes(float64(c.Target.Size)), c.Target.SHA256Hex())
	s.Done("measure it with\n        %s", LoadgenCommand(c.SOCKSAddr, c.Target.URL))
	s.Done("(every SOCKS connection is a session of its own: -concurrency N runs N sessions at once)")
	tick := time.NewTicker(time.Second)
	defer tick.Stop()
	for {
		select {
		case <-ctx.Done():
			fmt.Fprintln(s.Out)
			return nil
		case <-tick.C:
			for _, p := range c.Processes() {
				select {
				case <-p.Done():
					return fmt.Errorf("%s exited while holding: %v\n%s", p.Name(), p.ExitErr(), p.LogTail(10))
				default:
				}
			}
		}
	}
}

// LoadgenCommand is a ready-to-paste flurry-loadgen command that fetches
// url through the SOCKS5 proxy at socks.
func LoadgenCommand(socks, url string) string {
	return fmt.Sprintf("go run ./loadgen/cmd/flurry-loadgen chain -socks %s -url %s -requests 5 -concurrency 1 -json chain.json", socks, url)
}

// progressLine redraws a download's progress bar on w.
func progressLine(w io.Writer, n, total int64, elapsed time.Duration) {
	const width = 30
	frac := float64(n) / float64(total)
	bar := strings.Repeat("#", int(frac*width)) + strings.Repeat(".", width-int(frac*width))
	rate := 0.0
	if s := elapsed.Seconds(); s > 0 {
		rate = float64(n) / s
	}
	fmt.Fprintf(w, "\r    [%s] %5.1f%%  %s / %s  %s/s   ", bar, 100*frac, FormatBytes(float64(n)), FormatBytes(float64(total)), FormatBytes(rate))
}

// cpuTimes reads the CPU time each process has used so far (processes it
// cannot read are left out).
func (s Show) cpuTimes(procs []*childproc.Process) map[string]time.Duration {
	out := make(map[string]time.Duration, len(procs))
	if s.CPU == nil {
		return out
	}
	for _, p := range procs {
		if d, err := s.CPU(p.PID()); err == nil {
			out[p.Name()] = d
		}
	}
	return out
}

// printCPU reports the CPU time each process spent since before, per
// megabyte carried: what the chain costs, role by role.
func (s Show) printCPU(procs []*childproc.Process, before map[string]time.Duration, size int64) {
	if s.CPU == nil {
		return
	}
	after := s.cpuTimes(procs)
	mb := float64(size) / 1e6
	var parts []string
	for _, p := range procs {
		b, okb := before[p.Name()]
		a, oka := after[p.Name()]
		if okb && oka {
			parts = append(parts, fmt.Sprintf("%s %.1f ms", p.Name(), float64((a-b).Milliseconds())/mb))
		}
	}
	s.Done("CPU per MB during the download      %s", strings.Join(parts, ", "))
}
