package demo

import (
	"bufio"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"log/slog"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/flurrypt/flurry/internal/childproc"
	"github.com/flurrypt/flurry/messages"
)

// Defaults for zero Config fields.
const (
	DefaultProxies      = 2
	DefaultFileSize     = 20 << 20
	DefaultPollInterval = time.Second
)

// Config describes a Flurry system on loopback: a built-in target, a relay
// in standalone mode forwarding to it, a broker whose bridge list names the
// relay, optionally a NAT probe, proxies and a client in SOCKS mode.
type Config struct {
	// Binaries are the executables (Build or BinariesIn). Required.
	Binaries Binaries
	// Dir receives the log files and generated configuration. Required.
	Dir string
	// Proxies is the number of proxies Start starts; 0 means
	// DefaultProxies, negative none.
	Proxies int
	// FileSize is the target file's size; 0 means DefaultFileSize.
	FileSize int64
	// NATProbe starts flurry-natprobe and points the proxies at it.
	NATProbe bool
	// ClientMax is the client's -max (proxies used at once); 0 means 1.
	ClientMax int
	// PollInterval is the proxies' poll interval, which the broker hands
	// out as NextPoll; 0 means DefaultPollInterval (at least 1 s).
	PollInterval time.Duration
	// ExternalRelayURL, if set, is a relay started elsewhere (for example
	// by tor as its server transport): Start then starts neither target
	// nor relay, and the bridge list maps BridgeFingerprint to this URL.
	ExternalRelayURL string
	// BridgeFingerprint is the bridge list's fingerprint; empty means
	// Snowflake's default bridge, which clients ask for when their bridge
	// line has no fingerprint.
	BridgeFingerprint string
	// NoClient leaves the client out (for example when tor runs it).
	NoClient bool
	// BrokerHost is the IP address the broker listens on; empty means
	// 127.0.0.1. A test whose client runs in a network namespace gives
	// the address the client reaches the broker at.
	BrokerHost string
	// OpenWebRTC lets proxies and client gather WebRTC candidates on every
	// interface (no -loopback-only), as in production. Only for tests
	// whose client is confined to a network namespace that reaches test
	// addresses alone, so that no check can leave the machine.
	OpenWebRTC bool
	// Brokers, if positive, runs that many brokers joined into one
	// cluster through a nats-server, behind an HAProxy (round robin,
	// health checks on /healthz); BrokerURL is then HAProxy's. Needs
	// Debian's nats-server and haproxy (FindTool). 0: one broker alone,
	// no NATS, no HAProxy.
	Brokers int
	// Extra arguments appended to each role's command line.
	BrokerArgs, RelayArgs, ProxyArgs, ClientArgs []string
	// StopTimeout is the grace period after SIGTERM; 0 means
	// childproc.DefaultStopTimeout.
	StopTimeout time.Duration
	// Logger reports what the cluster does; nil discards.
	Logger *slog.Logger
}

// Cluster is a running Flurry system on loopback. Fields are set by Start
// and must not be changed.
type Cluster struct {
	// The processes; NATProbe is nil unless Config.NATProbe. With
	// Config.Brokers, Broker is Brokers[0] and NATS and HAProxy are set.
	Broker, Relay, NATProbe, Client *childproc.Process
	Brokers                         []*childproc.Process
	NATS, HAProxy                   *childproc.Process
	// BrokerAddrs are the brokers' own addresses (host:port), by index,
	// and BrokerMetricsAddrs their operator listeners' (-metrics-addr, on
	// loopback: GET /prometheus); NATSURL is the NATS server's URL with
	// Config.Brokers.
	BrokerAddrs        []string
	BrokerMetricsAddrs []string
	NATSURL            string
	// Target is the built-in HTTP server the relay forwards to.
	Target *Target
	// BrokerURL ("http://127.0.0.1:port/"), RelayURL ("ws://..."),
	// RelayMetricsURL, SOCKSAddr (the client's SOCKS5 listener),
	// NATProbeURL (empty without a NAT probe).
	BrokerURL, RelayURL, RelayMetricsURL, SOCKSAddr, NATProbeURL string
	// BridgeListPath is the broker's bridge list file.
	BridgeListPath string

	cfg  Config
	log  *slog.Logger
	http *HTTPScraper

	mu        sync.Mutex
	proxies   []*Proxy
	nextProxy int
	closed    bool
	closeOnce sync.Once
	closeErr  error

	flagsMu sync.Mutex
	flags   map[string]map[string]bool // binary -> its flags

	addrMu sync.Mutex
	chosen map[string]bool // every address freeAddrs has handed out
}

// Proxy is one proxy process of a Cluster.
type Proxy struct {
	*childproc.Process
	// MetricsURL serves the proxy's Prometheus metrics.
	MetricsURL string
}

// Start starts a whole system and waits until each part is ready; on error
// everything started so far is stopped.
func Start(ctx context.Context, cfg Config) (*Cluster, error) {
	if err := cfg.Binaries.Check(); err != nil {
		return nil, err
	}
	if cfg.Dir == "" {
		return nil, fmt.Errorf("%w: Config.Dir is required", ErrInvalidConfig)
	}
	if cfg.Proxies == 0 {
		cfg.Proxies = DefaultProxies
	}
	if cfg.FileSize == 0 {
		cfg.FileSize = DefaultFileSize
	}
	if cfg.ClientMax == 0 {
		cfg.ClientMax = 1
	}
	if cfg.PollInterval == 0 {
		cfg.PollInterval = DefaultPollInterval
	}
	if cfg.PollInterval < time.Second {
		return nil, fmt.Errorf("%w: PollInterval must be at least 1s", ErrInvalidConfig)
	}
	if cfg.StopTimeout == 0 {
		cfg.StopTimeout = childproc.DefaultStopTimeout
	}
	if cfg.Logger == nil {
		cfg.Logger = slog.New(slog.DiscardHandler)
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	c := &Cluster{cfg: cfg, log: cfg.Logger, http: NewHTTPScraper()}
	if err := c.start(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

// freeAddrs returns n distinct free loopback addresses that differ from
// every address it handed out before: a port chosen earlier may not be
// bound yet, as when all the brokers' addresses are chosen before the
// first broker starts.
func (c *Cluster) freeAddrs(n int) ([]string, error) {
	c.addrMu.Lock()
	defer c.addrMu.Unlock()
	if c.chosen == nil {
		c.chosen = make(map[string]bool)
	}
	out := make([]string, 0, n)
	for range 10 {
		addrs, err := FreeAddrs(n - len(out))
		if err != nil {
			return nil, err
		}
		for _, a := range addrs {
			if !c.chosen[a] {
				c.chosen[a] = true
				out = append(out, a)
			}
		}
		if len(out) == n {
			return out, nil
		}
	}
	return nil, fmt.Errorf("no %d free loopback ports apart from the %d already chosen", n, len(c.chosen))
}

func (c *Cluster) start(ctx context.Context) error {
	addrs, err := c.freeAddrs(5)
	if err != nil {
		return err
	}
	relayAddr, relayMetrics, brokerAddr, probeAddr, socksAddr := addrs[0], addrs[1], addrs[2], addrs[3], addrs[4]
	if c.cfg.BrokerHost != "" {
		if brokerAddr, err = FreeAddrOn(c.cfg.BrokerHost); err != nil {
			return fmt.Errorf("broker address: %w", err)
		}
	}
	c.BrokerURL = "http://" + brokerAddr + "/"

	if c.cfg.ExternalRelayURL != "" {
		c.RelayURL = c.cfg.ExternalRelayURL
	} else {
		c.Target, err = StartTarget(c.cfg.FileSize)
		if err != nil {
			return fmt.Errorf("target: %w", err)
		}
		c.log.Info("target serving", "url", c.Target.URL, "bytes", c.Target.Size, "sha256", c.Target.SHA256Hex())
		c.RelayURL = "ws://" + relayAddr + "/"
		c.RelayMetricsURL = "http://" + relayMetrics + "/metrics"
		// Relay first: proxies check it at start.
		c.Relay, err = childproc.Start(ctx, childproc.Config{
			Name: "relay", Path: c.cfg.Binaries.Relay, LogPath: c.logPath("relay"),
			Supervisor: "demo",
			Args: append([]string{"-disable-tls", "-addr", relayAddr, "-forward", c.Target.Addr,
				"-metrics-addr", relayMetrics, "-unsafe-logging"}, c.cfg.RelayArgs...),
			Ready: HTTPReady(c.RelayMetricsURL, 200),
		})
		if err != nil {
			return err
		}
		c.log.Info("relay ready", "url", c.RelayURL, "pid", c.Relay.PID())
	}

	fingerprint := c.cfg.BridgeFingerprint
	if fingerprint == "" {
		fingerprint = messages.DefaultBridgeFingerprint
	}
	c.BridgeListPath = filepath.Join(c.cfg.Dir, "bridge-list.json")
	if err := WriteBridgeList(c.BridgeListPath, fingerprint, c.RelayURL); err != nil {
		return err
	}
	pollPath := filepath.Join(c.cfg.Dir, "poll-interval.json")
	ms := c.cfg.PollInterval.Milliseconds()
	if err := os.WriteFile(pollPath, fmt.Appendf(nil, `{"unrestricted_poll_interval": %d, "restricted_poll_interval": %d}`+"\n", ms, ms), 0o644); err != nil {
		return err
	}
	brokerArgs := []string{"-disable-tls", "-bridge-list-path", c.BridgeListPath,
		"-poll-interval-filepath", pollPath, "-disable-geoip", "-unsafe-logging"}
	if err := c.startBrokers(ctx, brokerAddr, brokerArgs); err != nil {
		return err
	}
	c.log.Info("broker URL", "url", c.BrokerURL)

	if c.cfg.NATProbe {
		args := []string{"-disable-tls", "-addr", probeAddr, "-unsafe-logging"}
		args = append(args, c.loopbackArgs(ctx, c.cfg.Binaries.NATProbe)...)
		c.NATProbe, err = childproc.Start(ctx, childproc.Config{
			Name: "natprobe", Path: c.cfg.Binaries.NATProbe, LogPath: c.logPath("natprobe"),
			Supervisor: "demo",
			Args:       args, Ready: TCPReady(probeAddr),
		})
		if err != nil {
			return err
		}
		c.NATProbeURL = "http://" + probeAddr + "/probe"
		c.log.Info("NAT probe ready", "url", c.NATProbeURL, "pid", c.NATProbe.PID())
	}

	for range max(c.cfg.Proxies, 0) {
		if _, err := c.StartProxy(ctx); err != nil {
			return err
		}
	}

	if c.cfg.NoClient {
		return nil
	}
	c.SOCKSAddr = socksAddr
	args := []string{"-socks", socksAddr, "-url", c.BrokerURL, "-max", strconv.Itoa(c.cfg.ClientMax), "-unsafe-logging"}
	args = append(args, c.loopbackArgs(ctx, c.cfg.Binaries.Client)...)
	c.Client, err = childproc.Start(ctx, childproc.Config{
		Name: "client", Path: c.cfg.Binaries.Client, LogPath: c.logPath("client"),
		Supervisor: "demo",
		Args:       append(args, c.cfg.ClientArgs...), Ready: TCPReady(socksAddr),
	})
	if err != nil {
		return err
	}
	c.log.Info("client ready", "socks", socksAddr, "pid", c.Client.PID())
	return nil
}

// startBrokers starts the broker, or with Config.Brokers the NATS server,
// the brokers and HAProxy on addr.
func (c *Cluster) startBrokers(ctx context.Context, addr string, args []string) error {
	clustered := c.cfg.Brokers > 0
	var haPath string
	if clustered {
		natsPath, err := FindTool(NATSServerPath, "nats-server", "nats-server")
		if err != nil {
			return err
		}
		if haPath, err = FindTool(HAProxyPath, "haproxy", "haproxy"); err != nil {
			return err
		}
		natsAddrs, err := c.freeAddrs(1)
		if err != nil {
			return err
		}
		natsAddr := natsAddrs[0]
		if c.NATS, err = StartNATS(ctx, NATSConfig{Path: natsPath, Name: "nats", Dir: c.cfg.Dir, Addr: natsAddr}); err != nil {
			return err
		}
		c.NATSURL = "nats://" + natsAddr
		c.log.Info("nats-server ready", "url", c.NATSURL, "pid", c.NATS.PID())
		if c.BrokerAddrs, err = c.freeAddrs(c.cfg.Brokers); err != nil {
			return err
		}
	} else {
		c.BrokerAddrs = []string{addr}
	}
	var err error
	if c.BrokerMetricsAddrs, err = c.freeAddrs(len(c.BrokerAddrs)); err != nil {
		return err
	}
	for i, a := range c.BrokerAddrs {
		name, bargs := "broker", append([]string{"-addr", a, "-metrics-addr", c.BrokerMetricsAddrs[i]}, args...)
		if clustered {
			name = fmt.Sprintf("broker%d", i+1)
			bargs = append(bargs, "-nats", c.NATSURL, "-instance", name)
		}
		p, err := childproc.Start(ctx, childproc.Config{
			Name: name, Path: c.cfg.Binaries.Broker, LogPath: c.logPath(name),
			Supervisor: "demo",
			Args:       append(bargs, c.cfg.BrokerArgs...),
			Ready:      HTTPReady("http://"+a+"/healthz", 200),
		})
		if p != nil {
			c.Brokers = append(c.Brokers, p)
		}
		if err != nil {
			return err
		}
		c.log.Info("broker ready", "name", name, "addr", a, "pid", p.PID())
	}
	c.Broker = c.Brokers[0]
	if !clustered {
		return nil
	}
	c.HAProxy, err = StartHAProxy(ctx, HAProxyConfig{Path: haPath, Dir: c.cfg.Dir, Addr: addr, Brokers: c.BrokerAddrs})
	if err != nil {
		return err
	}
	c.log.Info("haproxy ready", "addr", addr, "pid", c.HAProxy.PID())
	// Each broker takes requests once HAProxy's health checks pass.
	return Poll(ctx, 30*time.Second, HTTPReady(c.BrokerURL+"healthz", 200))
}

func (c *Cluster) logPath(name string) string {
	return filepath.Join(c.cfg.Dir, name+".log")
}

// Dir returns the directory with the log files.
func (c *Cluster) Dir() string { return c.cfg.Dir }

// StartProxy starts one more proxy and waits until it serves its metrics.
func (c *Cluster) StartProxy(ctx context.Context) (*Proxy, error) {
	c.mu.Lock()
	if c.closed {
		c.mu.Unlock()
		return nil, errClosed
	}
	c.nextProxy++
	name := fmt.Sprintf("proxy-%d", c.nextProxy)
	c.mu.Unlock()

	metricsAddrs, err := c.freeAddrs(1)
	if err != nil {
		return nil, err
	}
	metricsAddr := metricsAddrs[0]
	args := []string{"-broker", c.BrokerURL, "-relay", c.RelayURL,
		"-allow-non-tls-relay", "-allow-proxying-to-private-addresses",
		"-poll-interval", c.cfg.PollInterval.String(), "-summary-interval", "0", "-verbose", "-unsafe-logging",
		"-metrics", "-metrics-address", "127.0.0.1", "-metrics-port", Port(metricsAddr)}
	args = append(args, c.loopbackArgs(ctx, c.cfg.Binaries.Proxy)...)
	if c.NATProbeURL != "" {
		args = append(args, "-nat-probe-server", c.NATProbeURL)
	}
	args = append(args, c.cfg.ProxyArgs...)
	metricsURL := "http://" + metricsAddr + "/internal/metrics"
	p, err := childproc.Start(ctx, childproc.Config{
		Name: name, Path: c.cfg.Binaries.Proxy, LogPath: c.logPath(name),
		Supervisor: "demo",
		Args:       args, Ready: HTTPReady(metricsURL, 200),
	})
	if err != nil {
		return nil, err
	}
	px := &Proxy{Process: p, MetricsURL: metricsURL}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.closed {
		p.Kill()
		return nil, errClosed
	}
	c.proxies = append(c.proxies, px)
	c.log.Info("proxy ready", "name", name, "pid", p.PID())
	return px, nil
}

// Proxies returns every proxy started so far, running or not.
func (c *Cluster) Proxies() []*Proxy {
	c.mu.Lock()
	defer c.mu.Unlock()
	return append([]*Proxy(nil), c.proxies...)
}

// ConnectedClients returns a proxy's flurry_proxy_connected_clients gauge.
func (c *Cluster) ConnectedClients(ctx context.Context, p *Proxy) (float64, error) {
	return c.http.Metric(ctx, p.MetricsURL, "flurry_proxy_connected_clients")
}

// ServingProxies returns the running proxies that relay at least one
// client now.
func (c *Cluster) ServingProxies(ctx context.Context) []*Proxy {
	var out []*Proxy
	for _, p := range c.Proxies() {
		if !p.Running() {
			continue
		}
		if n, err := c.ConnectedClients(ctx, p); err == nil && n > 0 {
			out = append(out, p)
		}
	}
	return out
}

// Processes returns every process of the cluster, client first and relay
// last (the order Close stops them in).
func (c *Cluster) Processes() []*childproc.Process {
	var out []*childproc.Process
	if c.Client != nil {
		out = append(out, c.Client)
	}
	for _, p := range c.Proxies() {
		out = append(out, p.Process)
	}
	for _, p := range append(append([]*childproc.Process{c.NATProbe}, c.Brokers...), c.Relay, c.HAProxy, c.NATS) {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// Close stops every process (SIGTERM, then SIGKILL after the grace period;
// client first, then proxies, then the rest) and the target. It returns the
// processes' stop errors (a process killed after the grace period, a
// non-zero exit status, children left behind). It is idempotent.
func (c *Cluster) Close() error {
	c.closeOnce.Do(func() {
		c.mu.Lock()
		c.closed = true
		c.mu.Unlock()
		var errs []error
		stopAll := func(ps []*childproc.Process) {
			var wg sync.WaitGroup
			errc := make([]error, len(ps))
			for i, p := range ps {
				wg.Go(func() { errc[i] = p.Stop(c.cfg.StopTimeout) })
			}
			wg.Wait()
			errs = append(errs, errc...)
		}
		if c.Client != nil {
			stopAll([]*childproc.Process{c.Client})
		}
		var proxies []*childproc.Process
		for _, p := range c.Proxies() {
			proxies = append(proxies, p.Process)
		}
		stopAll(proxies)
		var rest []*childproc.Process
		for _, p := range append([]*childproc.Process{c.NATProbe, c.HAProxy, c.Relay}, c.Brokers...) {
			if p != nil {
				rest = append(rest, p)
			}
		}
		stopAll(rest)
		if c.NATS != nil { // after the brokers, which leave it on shutdown
			stopAll([]*childproc.Process{c.NATS})
		}
		if c.Target != nil {
			errs = append(errs, c.Target.Close())
		}
		c.http.Close()
		c.closeErr = errors.Join(errs...)
	})
	return c.closeErr
}

// WriteBridgeList writes a broker bridge list (Snowflake's NDJSON format)
// with one bridge.
func WriteBridgeList(path, fingerprint, relayURL string) error {
	line, err := json.Marshal(struct {
		DisplayName      string `json:"displayName"`
		WebSocketAddress string `json:"webSocketAddress"`
		Fingerprint      string `json:"fingerprint"`
	}{"flurry-demo", relayURL, fingerprint})
	if err != nil {
		return err
	}
	return os.WriteFile(path, append(line, '\n'), 0o644)
}

// loopbackArgs returns the flags that keep bin's WebRTC on loopback: its
// -loopback-only flag if it has one, else -keep-local-addresses (which
// keeps loopback candidates but still gathers on every interface).
func (c *Cluster) loopbackArgs(ctx context.Context, bin string) []string {
	switch {
	case c.cfg.OpenWebRTC:
		return nil
	case c.hasFlag(ctx, bin, "loopback-only"):
		return []string{"-loopback-only"}
	case c.hasFlag(ctx, bin, "keep-local-addresses"):
		return []string{"-keep-local-addresses"}
	}
	return nil
}

// hasFlag reports whether bin -h lists -name; the answers are cached per
// binary.
func (c *Cluster) hasFlag(ctx context.Context, bin, name string) bool {
	c.flagsMu.Lock()
	defer c.flagsMu.Unlock()
	if c.flags == nil {
		c.flags = map[string]map[string]bool{}
	}
	fl, ok := c.flags[bin]
	if !ok {
		fl = ListFlags(ctx, bin)
		c.flags[bin] = fl
	}
	return fl[name]
}

// ListFlags returns the flag names (without dashes) that bin -h prints.
func ListFlags(ctx context.Context, bin string) map[string]bool {
	fl := map[string]bool{}
	ctx, cancel := context.WithTimeout(ctx, 10*time.Second)
	defer cancel()
	out, _ := exec.CommandContext(ctx, bin, "-h").CombinedOutput()
	sc := bufio.NewScanner(strings.NewReader(string(out)))
	for sc.Scan() {
		f := strings.Fields(sc.Text())
		if len(f) > 0 && strings.HasPrefix(f[0], "-") {
			fl[strings.TrimLeft(f[0], "-")] = true
		}
	}
	return fl
}
