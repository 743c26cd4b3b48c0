// Command flurry-loadgen measures a Flurry or Snowflake broker, relay or
// demo chain over the wire protocol only. See `flurry-loadgen -h` and the
// "Load generator" section of docs/performance.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"net/netip"
	"os"
	"os/signal"
	"strconv"
	"strings"
	"syscall"
	"time"

	"github.com/flurrypt/flurry/common/version"
	"github.com/flurrypt/flurry/internal/commalist"
	"github.com/flurrypt/flurry/loadgen/brokerload"
	"github.com/flurrypt/flurry/loadgen/chainload"
	"github.com/flurrypt/flurry/loadgen/internal/brokerwire"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/internal/tcptarget"
	"github.com/flurrypt/flurry/loadgen/internal/wscarrier"
	"github.com/flurrypt/flurry/loadgen/relayload"
	"github.com/flurrypt/flurry/loadgen/report"
)

const usage = `usage: flurry-loadgen <mode> [flags]

modes:
  broker   simulated proxies and clients against a broker (/proxy, /client, /answer)
  relay    idle WebSocket carriers (memory per carrier) and KCP+smux throughput through a relay
  chain    throughput and time to first byte through a SOCKS5 proxy (a running chain)
  target   a TCP echo, sink, source or random source on loopback, to be a relay's -forward target
  attack   an attack on a broker, relay or any server, beside honest load where it applies ("flurry-loadgen attack" lists them)
  soak     a whole chain of real binaries for a long time with clients arriving and leaving, proxies
           killed and the broker restarting: RSS and goroutines of every process, flagged if they grow
  sidebyside  starts the chains of several implementations (Flurry's, Snowflake's binaries) and
           downloads through them in turn: MB/s, CPU per MB per process, peak RSS, pauses, UDP drops
  relayusers  several implementations' relays in turn under 100, 500, 2000 users (bulk and
           interactive, each its own session as through a proxy): CPU per MB, memory per session,
           starvation
  proxyusers  several implementations' chains in turn, 1, 10, 50 users through one proxy: the
           proxy's peak and steady RSS, CPU per MB, starvation

Every target must be a loopback address unless -allow-non-loopback is given.
Every run stops by itself (durations and counts; -max-time bounds the whole run).
Run "flurry-loadgen <mode> -h" for the flags of a mode, "flurry-loadgen -version" for the version.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

// common are the flags every mode has.
type common struct {
	jsonPath, svgPath string
	quiet             bool
	allowNonLoopback  bool
	insecure          bool
	maxTime           time.Duration
	progressInterval  time.Duration
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.jsonPath, "json", "", "write the machine-readable result to this file")
	fs.StringVar(&c.svgPath, "svg", "", "write SVG plots (latency against load, memory against connections) to this file")
	fs.BoolVar(&c.quiet, "quiet", false, "no progress lines on stderr")
	fs.BoolVar(&c.allowNonLoopback, "allow-non-loopback", false, "allow targets that are not loopback addresses (only for a test system you run)")
	fs.BoolVar(&c.insecure, "insecure", false, "skip TLS certificate verification (self-signed test servers)")
	fs.DurationVar(&c.maxTime, "max-time", 30*time.Minute, "hard limit on the whole run")
	fs.DurationVar(&c.progressInterval, "progress-interval", measure.DefaultProgressInterval, "time between progress lines")
}

// intList is a comma-separated list of integers.
type intList []int

func (l *intList) String() string {
	parts := make([]string, len(*l))
	for i, v := range *l {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

func (l *intList) Set(s string) error {
	*l = nil
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		v, err := strconv.Atoi(part)
		if err != nil {
			return fmt.Errorf("%q is not an integer", part)
		}
		*l = append(*l, v)
	}
	return nil
}

// mixFlag is a brokerload.Mix flag.
type mixFlag struct{ m brokerload.Mix }

func (f *mixFlag) String() string { return f.m.String() }
func (f *mixFlag) Set(s string) error {
	m, err := brokerload.ParseMix(s)
	f.m = m
	return err
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "-version" || args[0] == "--version" {
		fmt.Fprintln(stdout, version.Line("flurry-loadgen"))
		return 0
	}
	mode, args := args[0], args[1:]
	fs := flag.NewFlagSet("flurry-loadgen "+mode, flag.ContinueOnError)
	fs.SetOutput(stderr)
	var c common
	c.register(fs)
	var runFn runFunc
	switch mode {
	case "broker":
		runFn = brokerFlags(fs, &c)
	case "relay":
		runFn = relayFlags(fs, &c, stderr)
	case "chain":
		runFn = chainFlags(fs, &c)
	case "target":
		runFn = targetFlags(fs, &c, stdout)
	case "attack":
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprint(stderr, attackUsage())
			return 0
		}
		var name string
		var ok bool
		if runFn, args, name, ok = attackFlags(fs, &c, args, stderr); !ok {
			return 2
		}
		mode += " " + name
		fs.Init("flurry-loadgen "+mode, flag.ContinueOnError)
	case "sidebyside":
		runFn = sideBySideFlags(fs, &c)
	case "soak":
		runFn = soakFlags(fs, &c)
	case "relayusers":
		runFn = relayUsersFlags(fs, &c)
	case "proxyusers":
		runFn = proxyUsersFlags(fs, &c)
	default:
		fmt.Fprintf(stderr, "unknown mode %q\n\n%s", mode, usage)
		return 2
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %v\n", fs.Args())
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, c.maxTime)
	defer cancel()
	var progress io.Writer = stderr
	if c.quiet {
		progress = nil
	}
	res := report.NewResult(mode)
	err := runFn(ctx, &res, progress)
	if err != nil {
		res.Error = err.Error()
	}
	if res.Broker != nil || res.RelayIdle != nil || res.RelayThroughput != nil || res.Chain != nil || res.BrokerAttack != nil || res.Attack != nil || res.Soak != nil {
		if werr := res.WriteTable(stdout); werr != nil && err == nil {
			err = werr
		}
	}
	if res.SideBySide != nil {
		if werr := chainload.WriteSideBySideTable(stdout, *res.SideBySide); werr != nil && err == nil {
			err = werr
		}
	}
	if res.RelayUsers != nil {
		if werr := relayload.WriteRelayUsersTable(stdout, *res.RelayUsers); werr != nil && err == nil {
			err = werr
		}
	}
	if res.ProxyUsers != nil {
		if werr := chainload.WriteProxyUsersTable(stdout, *res.ProxyUsers); werr != nil && err == nil {
			err = werr
		}
	}
	if c.jsonPath != "" {
		if werr := writeFile(c.jsonPath, res.WriteJSON); werr != nil {
			fmt.Fprintf(stderr, "write %s: %v\n", c.jsonPath, werr)
			return 1
		}
	}
	if c.svgPath != "" {
		if werr := writeFile(c.svgPath, res.WriteSVG); werr != nil {
			fmt.Fprintf(stderr, "write %s: %v\n", c.svgPath, werr)
			return 1
		}
	}
	if err != nil {
		fmt.Fprintf(stderr, "flurry-loadgen %s: %v\n", mode, err)
		if errors.Is(err, measure.ErrInvalidConfig) || errors.Is(err, measure.ErrNotLoopback) {
			return 2
		}
		return 1
	}
	return 0
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}

func brokerFlags(fs *flag.FlagSet, c *common) func(context.Context, *report.Result, io.Writer) error {
	var (
		cfg                           brokerload.BrokerConfig
		clients                       = intList{brokerload.DefaultBrokerClients}
		idle                          intList
		proxyNAT, proxyTypes, cliNATs = mixFlag{}, mixFlag{}, mixFlag{}
	)
	proxyNAT.m, _ = brokerload.ParseMix(brokerload.DefaultProxyNATMix)
	proxyTypes.m, _ = brokerload.ParseMix(brokerload.DefaultProxyTypeMix)
	cliNATs.m, _ = brokerload.ParseMix(brokerload.DefaultClientNATMix)
	fs.StringVar(&cfg.URL, "url", "http://127.0.0.1:8080", "broker base URL")
	fs.Func("check-urls", "comma-separated Prometheus URLs of brokers (e.g. each instance behind -url) whose waiting polls and goroutines are reported once the load has stopped", func(v string) error {
		cfg.CheckURLs = commalist.Split(v)
		return nil
	})
	fs.StringVar(&cfg.ClientURL, "client-url", "", "send the clients' offers here instead of -url (another instance of a broker cluster: every match crosses instances)")
	fs.IntVar(&cfg.Proxies, "proxies", brokerload.DefaultBrokerProxies, "simulated proxies polling during the client steps")
	fs.Var(&clients, "clients", "client concurrency of each step, comma-separated (e.g. 1,10,50)")
	fs.Float64Var(&cfg.Rate, "rate", 0, "total offers per second per step (0: back to back)")
	fs.DurationVar(&cfg.StepDuration, "duration", brokerload.DefaultStepDuration, "duration of each client step")
	fs.Var(&idle, "idle-polls", "idle phase first: hold this many proxy polls at once, comma-separated steps (e.g. 1000,5000); needs -pid")
	fs.BoolVar(&cfg.IdleBurst, "idle-burst", false, "start each idle step's new polls all at once (default: in batches of 250)")
	fs.DurationVar(&cfg.IdleSettle, "idle-settle", brokerload.DefaultIdleSettle, "wait after each idle step's polls are waiting before sampling memory")
	fs.DurationVar(&cfg.IdleWindow, "idle-window", 0, "sample memory every 200ms for this long after -idle-settle and report the largest RSS too (e.g. 20s, two proxy holds: the steady state, waves of returning polls included); 0: five samples over a second")
	fs.Var(&proxyNAT, "proxy-nat", "proxy NAT mix, value=weight,...")
	fs.Var(&proxyTypes, "proxy-types", "proxy type mix, value=weight,...")
	fs.Var(&cliNATs, "client-nat", "client NAT mix, value=weight,...")
	fs.StringVar(&cfg.RelayPattern, "relay-pattern", "", `AcceptedRelayPattern the proxies send: "" accepts every relay; else the broker's -allowed-relay-pattern or a superset`)
	fs.StringVar(&cfg.Fingerprint, "fingerprint", "", "bridge fingerprint the clients ask for (default Snowflake's default bridge)")
	fs.IntVar(&cfg.PID, "pid", 0, "the broker's process ID, for RSS and CPU (Linux /proc)")
	fs.DurationVar(&cfg.RequestTimeout, "request-timeout", brokerwire.DefaultRequestTimeout, "bound on every HTTP request")
	return func(ctx context.Context, res *report.Result, progress io.Writer) error {
		cfg.Clients, cfg.IdlePolls = clients, idle
		cfg.ProxyNAT, cfg.ProxyTypes, cfg.ClientNAT = proxyNAT.m, proxyTypes.m, cliNATs.m
		cfg.Insecure, cfg.AllowNonLoopback = c.insecure, c.allowNonLoopback
		cfg.Progress, cfg.ProgressInterval = progress, c.progressInterval
		b, err := brokerload.RunBroker(ctx, cfg)
		if b.URL != "" {
			res.Broker = &b
		}
		return err
	}
}

func relayFlags(fs *flag.FlagSet, c *common, stderr io.Writer) func(context.Context, *report.Result, io.Writer) error {
	var (
		idle         relayload.RelayIdleConfig
		tp           relayload.RelayThroughputConfig
		carriers     = intList{relayload.DefaultIdleCarriers}
		sess         relayload.RelaySessionsConfig
		sessions     intList
		url          string
		pid          int
		serveTarget  string
		skipIdle     bool
		handshakeMax time.Duration
	)
	fs.StringVar(&url, "url", "ws://127.0.0.1:8000/", "relay WebSocket URL (ws:// or wss://)")
	fs.IntVar(&pid, "pid", 0, "the relay's process ID, for memory and CPU (Linux /proc)")
	fs.Var(&carriers, "carriers", "idle carriers to hold, comma-separated ascending steps (e.g. 1000,5000,10000)")
	fs.BoolVar(&skipIdle, "no-idle", false, "skip the idle-carrier phase")
	fs.DurationVar(&idle.Settle, "settle", relayload.DefaultCarrierSettle, "wait after each idle step before sampling memory")
	fs.DurationVar(&idle.KeepAlive, "keepalive", 0, "send a padding chunk on idle carriers this often (0: truly idle; the relay may close them after its idle timeout)")
	idle.SourcePrefix = wscarrier.DefaultSourcePrefix
	fs.Func("source-prefix", "IPv4 prefix idle carriers take their source addresses from in turn when the relay's address is inside it (default 127.0.0.0/8; \"none\": the system's choice)", func(s string) error {
		if s == "none" {
			idle.SourcePrefix = netip.Prefix{}
			return nil
		}
		p, err := netip.ParsePrefix(s)
		idle.SourcePrefix = p
		return err
	})
	fs.IntVar(&idle.DialConcurrency, "dial-concurrency", wscarrier.DefaultDialConcurrency, "concurrent WebSocket handshakes")
	fs.Var(&sessions, "sessions", "after the idle carriers: turbotunnel sessions to hold (carrier, KCP and smux each, the relay's target must echo), comma-separated ascending steps (e.g. 1000,10000); default none")
	fs.BoolVar(&sess.Active, "active-sessions", false, "with -sessions: keep one stream per session open (default: one byte echoed on a stream that is then closed)")
	fs.IntVar(&tp.Carriers, "throughput-carriers", relayload.DefaultThroughputCarriers, "carriers (KCP+smux sessions) for the throughput run; 0 skips it")
	fs.IntVar(&tp.Streams, "streams", 1, "smux streams per throughput carrier")
	fs.DurationVar(&tp.Duration, "duration", relayload.DefaultThroughputDuration, "measured duration of the throughput run")
	fs.StringVar(&tp.Mode, "mode", relayload.ModeEcho, "throughput mode: echo (relay's target echoes) or download (target is a source)")
	fs.StringVar(&serveTarget, "serve-target", "", "start an echo (or, with -mode download, source) target on this loopback address for the relay's -forward")
	fs.DurationVar(&handshakeMax, "handshake-timeout", wscarrier.DefaultHandshakeTimeout, "bound on each WebSocket handshake")
	return func(ctx context.Context, res *report.Result, progress io.Writer) error {
		if serveTarget != "" {
			mode := tcptarget.TargetEcho
			if tp.Mode == relayload.ModeDownload {
				mode = tcptarget.TargetSource
			}
			t, err := tcptarget.StartTarget(tcptarget.TargetConfig{Addr: serveTarget, Mode: mode, AllowNonLoopback: c.allowNonLoopback})
			if err != nil {
				return err
			}
			defer func() {
				t.Close()
				s := t.Stats()
				fmt.Fprintf(stderr, "target: %d connections, %d bytes in, %d bytes out\n", s.Conns, s.BytesIn, s.BytesOut)
			}()
			fmt.Fprintf(stderr, "%s target listening on %s: the relay must forward there (flurry-relay -forward %s)\n", mode, t.Addr(), t.Addr())
		}
		idle.URL, idle.PID, idle.Carriers, idle.HandshakeTimeout = url, pid, carriers, handshakeMax
		idle.Insecure, idle.AllowNonLoopback = c.insecure, c.allowNonLoopback
		idle.Progress, idle.ProgressInterval = progress, c.progressInterval
		if !skipIdle && len(carriers) > 0 {
			r, err := relayload.RunRelayIdle(ctx, idle)
			if r.URL != "" {
				res.RelayIdle = &r
			}
			if err != nil {
				return err
			}
		}
		if len(sessions) > 0 {
			sess.RelayRun, sess.Sessions = idle.RelayRun, sessions
			r, err := relayload.RunRelaySessions(ctx, sess)
			if r.URL != "" {
				res.RelaySessions = &r
			}
			if err != nil {
				return err
			}
		}
		if tp.Carriers > 0 {
			tp.URL, tp.PID, tp.HandshakeTimeout = url, pid, handshakeMax
			tp.Insecure, tp.AllowNonLoopback = c.insecure, c.allowNonLoopback
			tp.Progress, tp.ProgressInterval = progress, c.progressInterval
			r, err := relayload.RunRelayThroughput(ctx, tp)
			if r.URL != "" {
				res.RelayThroughput = &r
			}
			return err
		}
		return nil
	}
}

func chainFlags(fs *flag.FlagSet, c *common) func(context.Context, *report.Result, io.Writer) error {
	var cfg chainload.ChainConfig
	fs.StringVar(&cfg.SOCKSAddr, "socks", "127.0.0.1:1080", "SOCKS5 proxy address (the chain's client)")
	fs.StringVar(&cfg.SOCKSUsername, "socks-user", "", "SOCKS5 username (RFC 1929; tor passes bridge arguments this way)")
	fs.StringVar(&cfg.SOCKSPassword, "socks-pass", "", "SOCKS5 password")
	fs.StringVar(&cfg.Mode, "mode", "", "get (HTTP GET of -url), read (read -bytes from a source -target) or echo (write and read back -bytes); default get with -url, else read")
	fs.StringVar(&cfg.URL, "url", "", "http:// URL to GET through the proxy")
	fs.StringVar(&cfg.Target, "target", "127.0.0.1:9000", "host:port the proxy connects to in read and echo modes")
	fs.Int64Var(&cfg.Bytes, "bytes", 0, "bytes per request (read, echo: default 10 MiB; get: at most this much of each body, 0 = all)")
	fs.IntVar(&cfg.Requests, "requests", chainload.DefaultChainRequests, "total requests")
	fs.IntVar(&cfg.Concurrency, "concurrency", 1, "requests at once")
	fs.DurationVar(&cfg.RequestTimeout, "timeout", chainload.DefaultChainRequestTimeout, "bound on each request")
	return func(ctx context.Context, res *report.Result, progress io.Writer) error {
		cfg.AllowNonLoopback = c.allowNonLoopback
		cfg.Progress, cfg.ProgressInterval = progress, c.progressInterval
		r, err := chainload.RunChain(ctx, cfg)
		if r.SOCKS != "" {
			res.Chain = &r
		}
		return err
	}
}

func targetFlags(fs *flag.FlagSet, c *common, stdout io.Writer) func(context.Context, *report.Result, io.Writer) error {
	var (
		cfg      tcptarget.TargetConfig
		duration time.Duration
	)
	fs.StringVar(&cfg.Addr, "addr", "127.0.0.1:9000", "listen address")
	fs.StringVar(&cfg.Mode, "mode", tcptarget.TargetEcho, "echo, sink, source or random (a fixed pseudo-random stream, for attack relay-sessions -honest-bytes)")
	fs.DurationVar(&duration, "duration", 10*time.Minute, "serve this long, then exit")
	return func(ctx context.Context, _ *report.Result, _ io.Writer) error {
		cfg.AllowNonLoopback = c.allowNonLoopback
		t, err := tcptarget.StartTarget(cfg)
		if err != nil {
			return err
		}
		fmt.Fprintf(stdout, "%s target listening on %s for %v (give the relay -forward %s)\n", cfg.Mode, t.Addr(), duration, t.Addr())
		timer := time.NewTimer(duration)
		select {
		case <-ctx.Done():
		case <-timer.C:
		}
		timer.Stop()
		t.Close()
		s := t.Stats()
		fmt.Fprintf(stdout, "target: %d connections, %d bytes in, %d bytes out\n", s.Conns, s.BytesIn, s.BytesOut)
		return nil
	}
}
