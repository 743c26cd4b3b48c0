// Command flurry-relay is Flurry's bridge: it accepts WebSocket connections
// from proxies, runs the turbotunnel (KCP + smux) server, and forwards each
// client stream to tor (when run by tor as a managed pluggable transport) or
// to any TCP address (standalone mode). See docs/relay.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"runtime"
	"strconv"
	"sync"
	"syscall"
	"time"

	pt "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/goptlib"

	"github.com/flurrypt/flurry/common/version"
	"github.com/flurrypt/flurry/internal/clientaddr"
	"github.com/flurrypt/flurry/internal/idlemem"
	"github.com/flurrypt/flurry/internal/servercmd"
	"github.com/flurrypt/flurry/relay"
)

// methodName is the transport name tor knows us by.
const methodName = "snowflake"

type flags struct {
	relayKeyFile                    string
	maxCarriersPerClient            int
	addr, forward, path             string
	backends                        []relay.Backend
	tls                             servercmd.TLSFlags
	metricsAddr                     string
	numTurbotunnel, maxConns        int
	handshakeTimeout, tokenTimeout  time.Duration
	trustedProxies                  string
	maxSessions, maxCarriersPerAddr int
	newSessionRate                  float64
	newSessionBurst                 int
	sessionOpenTimeout              time.Duration
	orportSrcAddr                   string
	logFile                         string
	unsafeLogging, showVersion      bool
}

func parseFlags() *flags {
	var f flags
	flag.Usage = func() {
		fmt.Fprintf(flag.CommandLine.Output(), `Usage: %s [flags]

flurry-relay accepts WebSocket connections from Snowflake/Flurry proxies and
forwards each client stream to tor or, standalone, to -forward.

Managed mode: when started by tor (TOR_PT_* environment), it listens where
ServerTransportListenAddr says and forwards to tor's ExtORPort or ORPort;
-addr and -forward are then ignored.
Standalone mode: flurry-relay -addr 127.0.0.1:8000 -disable-tls -forward 127.0.0.1:9000
Several tor instances (standalone, no HAProxy, each with its own cookie):
  flurry-relay -acme-hostnames relay.example.org -addr :443 \
    -backend extorport:127.0.0.1:10001,cookie=/var/lib/tor-instances/b1/extended_orport_auth_cookie,name=b1 \
    -backend extorport:127.0.0.1:10002,cookie=/var/lib/tor-instances/b2/extended_orport_auth_cookie,name=b2

Flags:
`, os.Args[0])
		flag.PrintDefaults()
		fmt.Fprint(flag.CommandLine.Output(), idlemem.Help(quietInterval))
	}
	flag.StringVar(&f.addr, "addr", relay.DefaultListenAddr, "standalone mode: address to listen on for WebSocket connections")
	flag.StringVar(&f.forward, "forward", "", "standalone mode: TCP address every client stream is forwarded to (required outside managed mode unless -backend is given)")
	flag.Func("backend", "standalone mode, repeatable: a target to balance streams over (least open streams, failed ones retried with back-off):\n"+
		"tcp:HOST:PORT[,name=NAME] (tor's ORPort or any TCP service) or\n"+
		"extorport:HOST:PORT,cookie=FILE[,name=NAME] (a tor ExtORPort and that tor's extended_orport_auth_cookie)",
		func(s string) error {
			b, err := relay.ParseBackend(s)
			if err != nil {
				return err
			}
			f.backends = append(f.backends, b)
			return nil
		})
	flag.StringVar(&f.path, "path", "", "accept WebSockets only on this URL path (default: any path, as Snowflake)")
	f.tls.Register(flag.CommandLine, defaultACMECache())
	flag.Var(flag.Lookup("acme-cert-cache").Value, "acme-cache", "deprecated alias of -acme-cert-cache")
	flag.StringVar(&f.metricsAddr, "metrics-addr", "", "address to serve Prometheus metrics on at /metrics (default: off)")
	flag.IntVar(&f.numTurbotunnel, "num-turbotunnel", runtime.NumCPU(), "number of KCP state machines (tor's ServerTransportOptions num-turbotunnel overrides it)")
	flag.IntVar(&f.maxConns, "max-conns", relay.DefaultMaxConns, "maximum concurrent WebSocket connections (negative: no limit)")
	flag.DurationVar(&f.handshakeTimeout, "handshake-timeout", relay.DefaultHandshakeTimeout, "time allowed for the TLS handshake and the HTTP upgrade request")
	flag.DurationVar(&f.tokenTimeout, "token-timeout", relay.DefaultTokenTimeout, "time allowed for the token and ClientID after the upgrade")
	flag.StringVar(&f.trustedProxies, "trusted-proxies", "", "comma-separated CIDRs or addresses of reverse proxies/CDNs whose Forwarded and X-Forwarded-For headers are believed (for the per-address limits); from other peers the headers are ignored")
	flag.IntVar(&f.maxCarriersPerAddr, "max-carriers-per-addr", relay.DefaultMaxCarriersPerAddr, "maximum concurrent connections from one proxy address (IPv6: one /64); beyond it 503 or a close (negative: no limit)")
	flag.Float64Var(&f.newSessionRate, "new-session-rate", relay.DefaultNewSessionRate, "new KCP sessions per second one proxy address may start, sustained (negative: no limit)")
	flag.IntVar(&f.newSessionBurst, "new-session-burst", relay.DefaultNewSessionBurst, "new KCP sessions one proxy address may start at once")
	flag.IntVar(&f.maxSessions, "max-sessions", relay.DefaultMaxSessions, "maximum live KCP sessions (negative: no limit)")
	flag.DurationVar(&f.sessionOpenTimeout, "session-open-timeout", relay.DefaultSessionOpenTimeout, "close a KCP session that has opened no stream and has no carrier after this long (with a carrier, after 6 times this)")
	flag.StringVar(&f.orportSrcAddr, "orport-srcaddr", "", "managed mode: IP address or CIDR prefix to take ORPort source addresses from (tor's ServerTransportOptions orport-srcaddr overrides it)")
	flag.StringVar(&f.relayKeyFile, "relay-key-file", defaultRelayKeyFile(), "file holding the relay's X25519 key, created on first start; its public key goes in bridge lines as relay-key= (sealed carriers: no proxy can inject into or steal a session). Empty: Snowflake carriers only")
	flag.IntVar(&f.maxCarriersPerClient, "max-carriers-per-client", relay.DefaultMaxCarriersPerClient, "maximum concurrent carriers of one Snowflake (unsealed) ClientID (negative: no limit)")
	flag.StringVar(&f.logFile, "log", "", "append logs to this file (default: stderr)")
	flag.BoolVar(&f.unsafeLogging, "unsafe-logging", false, "do not scrub IP addresses from logs")
	flag.BoolVar(&f.showVersion, "version", false, "print the version and exit")
	flag.Parse()
	return &f
}

// quietInterval is how long the relay must go without a garbage
// collection before it returns its idle memory to the operating system.
const quietInterval = 15 * time.Second

func main() {
	idlemem.Start(quietInterval)
	f := parseFlags()
	if f.showVersion {
		fmt.Println(version.Line("flurry-relay"))
		return
	}
	if flag.NArg() > 0 {
		fmt.Fprintf(os.Stderr, "unexpected arguments: %q\n", flag.Args())
		os.Exit(2)
	}
	logger, closeLog, err := servercmd.OpenLog(f.logFile, os.Stderr, servercmd.LogOptions{Unsafe: f.unsafeLogging})
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		os.Exit(1)
	}
	defer closeLog()
	if err := run(f, logger); err != nil {
		logger.Error("flurry-relay stopped", "err", err)
		closeLog()
		os.Exit(1)
	}
}

func run(f *flags, logger *slog.Logger) error {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()

	managed := os.Getenv("TOR_PT_MANAGED_TRANSPORT_VER") != ""
	cfg := relay.Config{
		ListenAddr:       f.addr,
		Path:             f.path,
		ForwardAddr:      f.forward,
		NumTurbotunnel:   f.numTurbotunnel,
		MaxConns:         f.maxConns,
		HandshakeTimeout: f.handshakeTimeout,
		TokenTimeout:     f.tokenTimeout,
		MetricsAddr:      f.metricsAddr,
		Logger:           logger,

		MaxSessions:        f.maxSessions,
		MaxCarriersPerAddr: f.maxCarriersPerAddr,
		NewSessionRate:     f.newSessionRate,
		NewSessionBurst:    f.newSessionBurst,
		SessionOpenTimeout: f.sessionOpenTimeout,

		MaxCarriersPerClient: f.maxCarriersPerClient,
	}
	if f.relayKeyFile != "" {
		key, pub, err := loadRelayKey(f.relayKeyFile)
		if err != nil {
			return err
		}
		cfg.RelayKey = &key
		logger.Info("sealed carriers on: add to bridge lines", "relay-key", pub)
		fmt.Fprintf(os.Stderr, "relay-key=%s\n", pub)
	}
	trusted, err := clientaddr.ParsePrefixes("trusted-proxies", f.trustedProxies)
	if err != nil {
		return err
	}
	cfg.TrustedProxies = trusted
	if !managed {
		cfg.Backends = f.backends
		switch {
		case f.forward == "" && len(f.backends) == 0:
			return errors.New("standalone mode needs -forward or -backend (or run flurry-relay from tor as a pluggable transport)")
		case f.forward != "" && len(f.backends) > 0:
			return errors.New("choose -forward or -backend, not both")
		}
		t, err := f.tls.Setup(f.addr, logger, "http/1.1")
		if err != nil {
			return err
		}
		defer t.Close()
		cfg.TLSConfig = t.Config
		r, err := relay.New(cfg)
		if err != nil {
			return err
		}
		logger.Info("flurry-relay starting", "version", version.String(), "forward", f.forward, "backends", len(f.backends), "tls", t.Mode)
		return r.Run(ctx)
	}
	return runManaged(ctx, f, cfg, logger)
}

// runManaged runs the relay as tor's managed server transport.
func runManaged(ctx context.Context, f *flags, cfg relay.Config, logger *slog.Logger) error {
	if len(f.backends) > 0 {
		return errors.New("-backend is for standalone mode; under tor the relay forwards to that tor")
	}
	info, err := pt.ServerSetup(nil)
	if err != nil {
		return fmt.Errorf("pt server setup: %w", err)
	}
	pt.ReportVersion("flurry-relay", version.String())
	if os.Getenv("TOR_PT_EXIT_ON_STDIN_CLOSE") == "1" {
		var cancel context.CancelFunc
		ctx, cancel = context.WithCancel(ctx)
		defer cancel()
		go func() {
			// tor closes our stdin when it wants us gone.
			io.Copy(io.Discard, os.Stdin)
			cancel()
		}()
	}

	var ours []pt.Bindaddr
	for _, b := range info.Bindaddrs {
		if b.MethodName != methodName {
			pt.SmethodError(b.MethodName, "no such method")
			continue
		}
		ours = append(ours, b)
	}
	if len(ours) == 0 {
		pt.SmethodsDone()
		return errors.New("tor asked for no snowflake transport")
	}
	torCfg := relay.TorConfig{Info: &info, Transport: methodName}
	srcAddr := f.orportSrcAddr
	if v, ok := ours[0].Options.Get("orport-srcaddr"); ok {
		srcAddr = v
	}
	if srcAddr != "" {
		p, err := relay.ParseSourcePrefix(srcAddr)
		if err != nil {
			pt.SmethodError(methodName, "bad orport-srcaddr")
			return err
		}
		torCfg.SourcePrefix = p
	}
	if v, ok := ours[0].Options.Get("num-turbotunnel"); ok {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			pt.SmethodError(methodName, "bad num-turbotunnel")
			return fmt.Errorf("bad num-turbotunnel option %q", v)
		}
		cfg.NumTurbotunnel = n
	}
	cfg.Dial = relay.TorDialer(torCfg)
	cfg.ForwardAddr = ""

	t, err := f.tls.Setup(ours[0].Addr.String(), logger, "http/1.1")
	if err != nil {
		pt.SmethodError(methodName, "TLS setup failed")
		return err
	}
	defer t.Close()
	cfg.TLSConfig = t.Config
	r, err := relay.New(cfg)
	if err != nil {
		pt.SmethodError(methodName, "relay setup failed")
		return err
	}
	defer r.Close()

	var listeners []net.Listener
	for _, b := range ours {
		ln, err := net.ListenTCP("tcp", b.Addr)
		if err != nil {
			pt.SmethodError(b.MethodName, "listen failed")
			logger.Error("listen", "err", err)
			continue
		}
		args := pt.Args{}
		if t.Config != nil {
			args.Add("tls", "yes")
			for _, h := range t.Hostnames {
				args.Add("hostname", h)
			}
		} else {
			args.Add("tls", "no")
		}
		pt.SmethodArgs(b.MethodName, ln.Addr(), args)
		listeners = append(listeners, ln)
	}
	pt.SmethodsDone()
	if len(listeners) == 0 {
		return errors.New("no listener")
	}
	logger.Info("flurry-relay running as a managed transport", "version", version.String(), "listeners", len(listeners))

	if f.metricsAddr != "" {
		mln, err := net.Listen("tcp", f.metricsAddr)
		if err != nil {
			return fmt.Errorf("listen for metrics: %w", err)
		}
		stopMetrics := make(chan struct{})
		metricsDone := make(chan struct{})
		go func() {
			defer close(metricsDone)
			r.ServeMetrics(stopMetrics, mln)
		}()
		defer func() {
			close(stopMetrics)
			<-metricsDone
		}()
	}

	var wg sync.WaitGroup
	for _, ln := range listeners {
		wg.Add(1)
		go func() {
			defer wg.Done()
			if err := r.Serve(ctx, ln); err != nil && !errors.Is(err, relay.ErrClosed) {
				logger.Error("serve", "err", err)
			}
		}()
	}
	wg.Wait()
	logger.Info("flurry-relay shutting down")
	return nil
}

// defaultACMECache is where the relay keeps its ACME certificates unless
// -acme-cert-cache says: under tor, in the transport's state directory (as
// Snowflake's server), else in the user's cache directory.
func defaultACMECache() string {
	if dir := os.Getenv("TOR_PT_STATE_LOCATION"); dir != "" {
		return filepath.Join(dir, "snowflake-certificate-cache")
	}
	if base, err := os.UserCacheDir(); err == nil {
		return filepath.Join(base, "flurry-relay", "acme")
	}
	return ""
}
