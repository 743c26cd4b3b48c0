package attack

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/binary"
	"fmt"
	"io"
	"math/rand/v2"
	"net"
	"net/netip"
	"net/url"
	"sync"
	"sync/atomic"
	"time"

	"github.com/gorilla/websocket"

	"github.com/flurrypt/flurry/common/encapsulation"
	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/internal/sleep"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/internal/tcptarget"
	"github.com/flurrypt/flurry/loadgen/internal/wscarrier"
	"github.com/flurrypt/flurry/loadgen/procstat"
)

// Attacks on a relay (flurry-loadgen attack relay-sessions, carrier-hold).
// Each is bounded in count and time and reports what it achieved and,
// with a PID, the relay's memory.

// First packets a relay-sessions connection sends.
const (
	// PacketHeader is 24 bytes: a KCP push header with no data, as in
	// the attack issue 13 describes.
	PacketHeader = "header"
	// PacketNop is a KCP push (sn 0) carrying a smux NOP frame: it looks
	// like a Snowflake client's first packet but opens no stream.
	PacketNop = "nop"
	// PacketSyn is a KCP push (sn 0) carrying a smux SYN: it opens a
	// stream, which makes the relay dial its target.
	PacketSyn = "syn"
)

// Defaults of the attacks.
const (
	DefaultAttackConns      = 100000
	DefaultFloodConcurrency = 64
	DefaultAttackWatchAfter = 60 * time.Second
	DefaultHoldCarriers     = 2000
	DefaultHoldDuration     = 60 * time.Second
)

// AttackTarget is what the connection attacks (RunSessionFlood,
// RunCarrierHold, RunSlowloris) share: the server, how many connections
// are in flight, where they come from and how the server's memory is
// watched.
type AttackTarget struct {
	// URL is the server's URL (the relay's WebSocket URL for the relay
	// attacks). Required.
	URL string
	// Concurrency bounds connection attempts in flight. Default
	// DefaultFloodConcurrency.
	Concurrency int
	// Source, if set, is the local IP address the attack connects from
	// (e.g. 127.0.0.2, so that an honest client on 127.0.0.1 is another
	// peer).
	Source string
	// PID, if positive, is the server's process ID: its RSS is sampled
	// before, during and WatchAfter after the attack.
	PID int
	// WatchAfter is how long to keep sampling after the attack. Default
	// DefaultAttackWatchAfter (only with PID).
	WatchAfter time.Duration
	// Insecure skips TLS verification (self-signed test servers).
	Insecure bool
	// AllowNonLoopback allows a server that is not on a loopback address.
	AllowNonLoopback bool
	// Progress and ProgressInterval: see BrokerConfig.
	Progress         io.Writer
	ProgressInterval time.Duration
}

// SessionFloodConfig configures RunSessionFlood. With HonestBytes and a
// PID, the relay's memory baseline is taken after a first honest download
// (warm-up).
type SessionFloodConfig struct {
	AttackTarget
	// Conns is how many one-packet connections to make. Default
	// DefaultAttackConns.
	Conns int
	// Packet is PacketHeader (default), PacketNop or PacketSyn.
	Packet string
	// HonestBytes, if positive, has an honest client (from HonestSource)
	// download this many bytes through the relay during the flood and
	// check their SHA-256. The relay must forward to a TargetRandom.
	HonestBytes  int64
	HonestSource string
	// HandshakeTimeout bounds each WebSocket handshake. Default
	// DefaultHandshakeTimeout.
	HandshakeTimeout time.Duration
}

// AttackResult is what an attack run reports.
type AttackResult struct {
	Attack      string                `json:"attack"`
	Target      string                `json:"target"`
	Attempted   int64                 `json:"attempted"`
	Completed   int64                 `json:"completed"`             // connections that did what the attack wanted
	Refused     int64                 `json:"refused"`               // connections the server refused or closed early
	Errors      []string              `json:"errors,omitempty"`      // first distinct error texts
	Elapsed     time.Duration         `json:"elapsed_ns"`            // the attack itself
	Extra       []Figure              `json:"figures,omitempty"`     // attack-specific figures
	Memory      *MemoryFigure         `json:"memory,omitempty"`      // the server's RSS
	HonestCheck *HonestResult         `json:"honest,omitempty"`      // download during the attack
	Notes       []string              `json:"notes,omitempty"`       // what the figures mean
	Samples     []procstat.ProcSample `json:"rss_samples,omitempty"` // every RSS sample
}

// Figure is one named result.
type Figure struct {
	Name  string `json:"name"`
	Value string `json:"value"`
}

// MemoryFigure summarises the server's RSS over an attack.
type MemoryFigure struct {
	BaselineRSS int64         `json:"baseline_rss"`
	PeakRSS     int64         `json:"peak_rss"`
	AfterRSS    int64         `json:"after_rss"` // WatchAfter after the attack ended
	After       time.Duration `json:"after_ns"`
}

// HonestResult is the honest download made during an attack.
type HonestResult struct {
	Bytes    int64         `json:"bytes"`
	Intact   bool          `json:"sha256_intact"`
	Elapsed  time.Duration `json:"elapsed_ns"`
	Error    string        `json:"error,omitempty"`
	Finished bool          `json:"finished"` // before the attack ended
}

// WriteText prints r for people.
func (r AttackResult) WriteText(w io.Writer) error {
	var b bytes.Buffer
	fmt.Fprintf(&b, "attack %s on %s\n", r.Attack, r.Target)
	rate := 0.0
	if r.Elapsed > 0 {
		rate = float64(r.Attempted) / r.Elapsed.Seconds()
	}
	fmt.Fprintf(&b, "  connections: %d attempted in %.1f s (%.0f/s), %d completed, %d refused or closed early\n",
		r.Attempted, r.Elapsed.Seconds(), rate, r.Completed, r.Refused)
	for _, f := range r.Extra {
		fmt.Fprintf(&b, "  %s: %s\n", f.Name, f.Value)
	}
	if m := r.Memory; m != nil {
		fmt.Fprintf(&b, "  server RSS: baseline %s, peak %s (growth %s), %s after the attack %s (%+.1f%% of baseline)\n",
			measure.MiB(m.BaselineRSS), measure.MiB(m.PeakRSS), measure.MiB(m.PeakRSS-m.BaselineRSS), m.After.Round(time.Second), measure.MiB(m.AfterRSS),
			100*float64(m.AfterRSS-m.BaselineRSS)/float64(max(m.BaselineRSS, 1)))
	}
	if h := r.HonestCheck; h != nil {
		fmt.Fprintf(&b, "  honest download: %d bytes in %.1f s, SHA-256 intact: %v, during the attack: %v", h.Bytes, h.Elapsed.Seconds(), h.Intact, h.Finished)
		if h.Error != "" {
			fmt.Fprintf(&b, ", error: %s", h.Error)
		}
		b.WriteString("\n")
	}
	for _, e := range r.Errors {
		fmt.Fprintf(&b, "  error sample: %s\n", e)
	}
	for _, n := range r.Notes {
		fmt.Fprintf(&b, "  note: %s\n", n)
	}
	_, err := w.Write(b.Bytes())
	return err
}

// firstPacket builds the packet a relay-sessions connection sends.
func firstPacket(kind string, conv uint32) []byte {
	var data []byte
	switch kind {
	case PacketNop:
		data = []byte{2, 3, 0, 0, 0, 0, 0, 0} // smux v2 NOP, stream 0
	case PacketSyn:
		data = []byte{2, 0, 0, 0, 1, 0, 0, 0} // smux v2 SYN, stream 1
	}
	p := make([]byte, 24, 24+len(data))
	binary.LittleEndian.PutUint32(p, conv)
	p[4] = 81 // push
	binary.LittleEndian.PutUint16(p[6:], 128)
	binary.LittleEndian.PutUint32(p[20:], uint32(len(data)))
	return append(p, data...)
}

func (cfg SessionFloodConfig) withDefaults() (SessionFloodConfig, *url.URL, error) {
	u, err := measure.ParseURL(cfg.URL, cfg.AllowNonLoopback, "ws", "wss")
	if err != nil {
		return cfg, nil, err
	}
	if cfg.Conns == 0 {
		cfg.Conns = DefaultAttackConns
	}
	if cfg.Concurrency == 0 {
		cfg.Concurrency = DefaultFloodConcurrency
	}
	if cfg.Packet == "" {
		cfg.Packet = PacketHeader
	}
	if cfg.WatchAfter == 0 {
		cfg.WatchAfter = DefaultAttackWatchAfter
	}
	if cfg.HandshakeTimeout == 0 {
		cfg.HandshakeTimeout = wscarrier.DefaultHandshakeTimeout
	}
	if cfg.HonestSource == "" {
		cfg.HonestSource = "127.0.0.1"
	}
	switch {
	case cfg.Conns < 0 || cfg.Concurrency < 0 || cfg.HonestBytes < 0:
		return cfg, nil, fmt.Errorf("%w: negative count", measure.ErrInvalidConfig)
	case cfg.Packet != PacketHeader && cfg.Packet != PacketNop && cfg.Packet != PacketSyn:
		return cfg, nil, fmt.Errorf("%w: packet %q: want header, nop or syn", measure.ErrInvalidConfig, cfg.Packet)
	}
	for _, s := range []string{cfg.Source, cfg.HonestSource} {
		if s == "" {
			continue
		}
		if err := measure.CheckHost(s, cfg.AllowNonLoopback); err != nil {
			return cfg, nil, err
		}
		if _, err := netip.ParseAddr(s); err != nil {
			return cfg, nil, fmt.Errorf("%w: source %q is not an IP address", measure.ErrInvalidConfig, s)
		}
	}
	return cfg, u, nil
}

// wsDialerFrom is newWSDialer binding to the local address src.
func wsDialerFrom(src string, insecure, allow bool, handshake time.Duration) *websocket.Dialer {
	d := wscarrier.NewWSDialer(insecure, allow, handshake, nil)
	if src != "" {
		nd := measure.NewDialer(allow)
		nd.LocalAddr = &net.TCPAddr{IP: net.ParseIP(src)}
		measure.BindLate(nd)
		d.NetDialContext = nd.DialContext
	}
	return d
}

// memWatch samples a process's RSS until stopped.
type memWatch struct {
	pid  int
	mu   sync.Mutex
	list []procstat.ProcSample
	stop chan struct{}
	done chan struct{}
}

// withRSS appends the server's last RSS sample to the progress lines of
// line; who names the server.
func (m *memWatch) withRSS(who string, line func() string) func() string {
	return func() string {
		l := line()
		if s, ok := m.last(); ok {
			l += ", " + who + " RSS " + measure.MiB(s.RSS)
		}
		return l
	}
}

func startMemWatch(pid int, every time.Duration) (*memWatch, error) {
	m := &memWatch{pid: pid, stop: make(chan struct{}), done: make(chan struct{})}
	if pid <= 0 {
		close(m.done)
		return m, nil
	}
	s, err := procstat.ReadProc(pid)
	if err != nil {
		return nil, err
	}
	m.list = append(m.list, s)
	go func() {
		defer close(m.done)
		t := time.NewTicker(every)
		defer t.Stop()
		for {
			select {
			case <-m.stop:
				return
			case <-t.C:
				if s, err := procstat.ReadProc(pid); err == nil {
					m.mu.Lock()
					m.list = append(m.list, s)
					m.mu.Unlock()
				}
			}
		}
	}()
	return m, nil
}

func (m *memWatch) last() (procstat.ProcSample, bool) {
	m.mu.Lock()
	defer m.mu.Unlock()
	if len(m.list) == 0 {
		return procstat.ProcSample{}, false
	}
	return m.list[len(m.list)-1], true
}

// finish stops sampling and summarises: baseline is the first sample, the
// peak the largest, after the last.
func (m *memWatch) finish(after time.Duration) (*MemoryFigure, []procstat.ProcSample) {
	if m.pid <= 0 {
		return nil, nil
	}
	close(m.stop)
	<-m.done
	if s, err := procstat.ReadProc(m.pid); err == nil {
		m.list = append(m.list, s)
	}
	f := &MemoryFigure{BaselineRSS: m.list[0].RSS, AfterRSS: m.list[len(m.list)-1].RSS, After: after}
	for _, s := range m.list {
		f.PeakRSS = max(f.PeakRSS, s.RSS)
	}
	return f, m.list
}

// sessionFlood counts one RunSessionFlood call's connections.
type sessionFlood struct {
	errs                         measure.ErrorSamples
	attempted, completed, refuse atomic.Int64
}

// RunSessionFlood makes cfg.Conns connections that each send the token, a
// random ClientID and one KCP packet, then close: the "sessions for
// nothing" attack.
func RunSessionFlood(ctx context.Context, cfg SessionFloodConfig) (AttackResult, error) {
	cfg, u, err := cfg.withDefaults()
	if err != nil {
		return AttackResult{}, err
	}
	res := AttackResult{Attack: "relay-sessions", Target: u.String()}
	res.Extra = append(res.Extra, Figure{"packet", fmt.Sprintf("%s (%d bytes), from %s", cfg.Packet, len(firstPacket(cfg.Packet, 0)), orDefault(cfg.Source, "any address"))})
	if _, err := measure.RaiseFileLimit(uint64(cfg.Concurrency) + 256); err != nil {
		return res, err
	}
	var honestTunnel *wscarrier.Tunnel
	if cfg.HonestBytes > 0 {
		if honestTunnel, err = openHonest(ctx, cfg, u, &res); err != nil {
			return res, err
		}
		defer honestTunnel.Close()
	}
	mem, err := startMemWatch(cfg.PID, 250*time.Millisecond)
	if err != nil {
		return res, err
	}
	d := wsDialerFrom(cfg.Source, cfg.Insecure, cfg.AllowNonLoopback, cfg.HandshakeTimeout)
	var f sessionFlood
	attackDone := make(chan struct{})
	var honest *HonestResult
	var honestWG sync.WaitGroup
	if cfg.HonestBytes > 0 {
		honest = &HonestResult{}
		honestWG.Go(func() {
			*honest = honestDownload(ctx, honestTunnel, cfg.HonestBytes)
			select {
			case <-attackDone:
			default:
				honest.Finished = true
			}
		})
	}
	prog := measure.StartProgress(cfg.Progress, cfg.ProgressInterval, mem.withRSS("relay", func() string {
		return fmt.Sprintf("relay-sessions: %d/%d connections, %d refused", f.attempted.Load(), cfg.Conns, f.refuse.Load())
	}))
	start := time.Now()
	measure.RunPool(ctx, cfg.Concurrency, cfg.Conns, func() { f.one(ctx, d, u, cfg) })
	res.Elapsed = time.Since(start)
	close(attackDone)
	prog.Stop()
	measure.Say(cfg.Progress, "relay-sessions: flood over after %.1f s", res.Elapsed.Seconds())
	honestWG.Wait()
	if cfg.PID > 0 {
		measure.Say(cfg.Progress, "relay-sessions: watching the relay's memory for %v", cfg.WatchAfter)
		sleep.For(ctx, cfg.WatchAfter)
	}
	res.Memory, res.Samples = mem.finish(cfg.WatchAfter)
	res.Attempted, res.Completed, res.Refused = f.attempted.Load(), f.completed.Load(), f.refuse.Load()
	res.Errors = f.errs.Get()
	res.HonestCheck = honest
	res.Notes = append(res.Notes, "completed: handshake, token, ClientID and packet written; what the relay did with them is in its metrics (flurry_relay_sessions_refused_total, flurry_relay_sessions_reclaimed_total)")
	return res, ctx.Err()
}

// openHonest opens the honest client's tunnel and, given the relay's
// PID, makes one download first, so that what its session holds is in the
// baseline as it is afterwards (the RSS before it goes into res too).
func openHonest(ctx context.Context, cfg SessionFloodConfig, u *url.URL, res *AttackResult) (*wscarrier.Tunnel, error) {
	hd := wsDialerFrom(cfg.HonestSource, cfg.Insecure, cfg.AllowNonLoopback, cfg.HandshakeTimeout)
	t, err := wscarrier.OpenTunnel(ctx, hd, u)
	if err != nil {
		return nil, fmt.Errorf("honest client: %w", err)
	}
	if cfg.PID <= 0 {
		return t, nil
	}
	fresh, err := procstat.ReadProc(cfg.PID)
	if err != nil {
		t.Close()
		return nil, err
	}
	warm := honestDownload(ctx, t, cfg.HonestBytes)
	if !warm.Intact {
		t.Close()
		return nil, fmt.Errorf("warm-up download: %d bytes, intact %v, %s", warm.Bytes, warm.Intact, warm.Error)
	}
	res.Extra = append(res.Extra, Figure{"server RSS before the warm-up download (fresh)", measure.MiB(fresh.RSS)})
	return t, nil
}

// one makes one flood connection: handshake, token, ClientID, one packet,
// close.
func (f *sessionFlood) one(ctx context.Context, d *websocket.Dialer, u *url.URL, cfg SessionFloodConfig) {
	f.attempted.Add(1)
	ws, err := wscarrier.DialCarrier(ctx, d, u, turbotunnel.NewClientID())
	if err != nil {
		f.refuse.Add(1)
		f.errs.Add(err.Error())
		return
	}
	var msg bytes.Buffer
	_, _ = encapsulation.WriteData(&msg, firstPacket(cfg.Packet, rand.Uint32()))
	_ = ws.SetWriteDeadline(time.Now().Add(cfg.HandshakeTimeout))
	if err := ws.WriteMessage(websocket.BinaryMessage, msg.Bytes()); err != nil {
		f.refuse.Add(1)
		f.errs.Add(err.Error())
	} else {
		f.completed.Add(1)
	}
	ws.Close()
}

func orDefault(s, def string) string {
	if s == "" {
		return def
	}
	return s
}

// honestDownload opens a stream on a Snowflake-style tunnel through the
// relay, asks its TargetRandom for n bytes and checks their SHA-256.
func honestDownload(ctx context.Context, t *wscarrier.Tunnel, n int64) HonestResult {
	start := time.Now()
	res := HonestResult{}
	st, err := t.Mux.OpenStream()
	if err != nil {
		res.Error = err.Error()
		return res
	}
	defer st.Close()
	stop := context.AfterFunc(ctx, func() { st.Close() })
	defer stop()
	var req [8]byte
	binary.BigEndian.PutUint64(req[:], uint64(n))
	if _, err := st.Write(req[:]); err != nil {
		res.Error = err.Error()
		return res
	}
	h := sha256.New()
	res.Bytes, err = io.Copy(h, st) // until the target closes
	res.Elapsed = time.Since(start)
	if err != nil {
		res.Error = err.Error()
		return res
	}
	res.Intact = res.Bytes == n && bytes.Equal(h.Sum(nil), tcptarget.RandomStreamDigest(n))
	return res
}
