// Command flurry-broker is Flurry's rendezvous broker, a drop-in for
// Snowflake's broker: Snowflake proxies and clients use it unchanged. It
// parses flags into a broker.Config, sets up logging, TLS and signals, and
// serves broker.Handler. See docs/broker.md.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"io"
	stdlog "log"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"runtime/debug"
	"strings"
	"sync"
	"syscall"
	"time"

	"golang.org/x/crypto/acme/autocert"

	"github.com/flurrypt/flurry/broker"
	"github.com/flurrypt/flurry/common/geoip"
	"github.com/flurrypt/flurry/common/safelog"
	"github.com/flurrypt/flurry/internal/clientaddr"
)

// Server limits. The read and write timeouts must exceed the longest a
// handler waits (proxy hold or client timeout), or net/http would cancel the
// long-poll; serverSlack is added on top.
const (
	readHeaderTimeout = 10 * time.Second
	idleTimeout       = 60 * time.Second
	maxHeaderBytes    = 16 << 10
	serverSlack       = 20 * time.Second
	shutdownGrace     = 5 * time.Second // on top of the client timeout
)

// options are the parsed command line.
type options struct {
	addr                string
	disableTLS          bool
	certFile, keyFile   string
	acmeHostnames       string
	acmeEmail           string
	acmeCertCache       string
	acmeHTTPAddr        string
	bridgeListPath      string
	allowedRelayPattern string
	pollIntervalPath    string
	disableGeoIP        bool
	geoipDB, geoip6DB   string
	metricsLog          string
	metricsInterval     time.Duration
	ipCountPrefix       string
	ipCountInterval     time.Duration
	metricsAddr         string
	unsafeLogging       bool
	logLevel            string

	proxyHold, clientTimeout time.Duration
	unansweredPenalty        time.Duration
	proxyRate, clientRate    float64
	proxyBurst, clientBurst  int
	answerRate, ampRate      float64
	answerBurst, ampBurst    int
	globalRates              [5]float64 // proxy, client, answer, amp, sqs
	disableRateLimits        bool
	rateLimitExempt          string
	trustedProxies           string

	sqsName, sqsRegion, sqsProfiles, sqsEndpoint string

	nats, natsCreds, instance string
}

func main() {
	opts, err := parseFlags(flag.CommandLine, os.Args[1:])
	if err != nil {
		if errors.Is(err, flag.ErrHelp) {
			os.Exit(0)
		}
		fmt.Fprintln(os.Stderr, "flurry-broker:", err)
		os.Exit(2)
	}
	if err := run(opts); err != nil {
		fmt.Fprintln(os.Stderr, "flurry-broker:", err)
		os.Exit(1)
	}
}

func parseFlags(fs *flag.FlagSet, args []string) (*options, error) {
	o := &options{}
	fs.StringVar(&o.addr, "addr", ":443", "address to listen on")
	fs.BoolVar(&o.disableTLS, "disable-tls", false, "serve plain HTTP (behind a TLS-terminating proxy or CDN, or for tests); excludes -cert/-key and -acme-hostnames")
	fs.StringVar(&o.certFile, "cert", "", "TLS certificate file (PEM); needs -key")
	fs.StringVar(&o.keyFile, "key", "", "TLS private key file (PEM); needs -cert")
	fs.StringVar(&o.acmeHostnames, "acme-hostnames", "", "comma-separated hostnames to get Let's Encrypt certificates for (ACME HTTP-01, answered on -acme-http-addr)")
	fs.StringVar(&o.acmeEmail, "acme-email", "", "contact email for the ACME account")
	fs.StringVar(&o.acmeCertCache, "acme-cert-cache", "acme-cert-cache", "directory to cache ACME certificates in (created 0700); empty: certificates are not cached and are fetched again at every start")
	fs.StringVar(&o.acmeHTTPAddr, "acme-http-addr", ":80", "address of the plain-HTTP listener for ACME HTTP-01 challenges (with -acme-hostnames)")
	fs.StringVar(&o.bridgeListPath, "bridge-list-path", "", "bridge list file: one JSON object per line with displayName, webSocketAddress and fingerprint (default: one bridge, fingerprint "+"2B280B23E1107BB62ABFC40DDCC8824814F80A72 at "+broker.DefaultRelayURL+")")
	fs.StringVar(&o.allowedRelayPattern, "allowed-relay-pattern", "", "relay hostname pattern (ending in '$', leading '^' for an exact name): proxies whose AcceptedRelayPattern is not a superset are told \"incorrect relay pattern\", and every bridge must match it. Empty: accept any proxy whose pattern accepts at least one bridge")
	fs.StringVar(&o.pollIntervalPath, "poll-interval-filepath", "", `JSON file with the proxies' NextPoll per pool in milliseconds, {"unrestricted_poll_interval": 20000, "restricted_poll_interval": 20000}; reloaded on SIGHUP`)
	fs.BoolVar(&o.disableGeoIP, "disable-geoip", false, "do not load geoip databases: every country in the statistics is \"??\"")
	fs.StringVar(&o.geoipDB, "geoipdb", "/usr/share/tor/geoip", "tor-format IPv4 geoip file; reloaded on SIGHUP (empty: no IPv4 table)")
	fs.StringVar(&o.geoip6DB, "geoip6db", "/usr/share/tor/geoip6", "tor-format IPv6 geoip file; reloaded on SIGHUP (empty: no IPv6 table)")
	fs.StringVar(&o.metricsLog, "metrics-log", "", "file the metrics descriptor is appended to every -metrics-interval, served at /metrics (empty: descriptors are logged and /metrics is 404)")
	fs.DurationVar(&o.metricsInterval, "metrics-interval", broker.DefaultMetricsInterval, "period of the metrics descriptor (at least 1s)")
	fs.StringVar(&o.ipCountPrefix, "ip-count-prefix", "", "count distinct proxy addresses per -ip-count-interval into files <prefix>-<category>-<start>.log (six categories, as Snowflake; counts binned to multiples of 8, addresses never stored); empty: off")
	fs.DurationVar(&o.ipCountInterval, "ip-count-interval", time.Hour, "period of the -ip-count-prefix counts (at least 1s)")
	fs.StringVar(&o.metricsAddr, "metrics-addr", "", "serve GET /prometheus on this separate plain-HTTP listener instead of the main one")
	fs.BoolVar(&o.unsafeLogging, "unsafe-logging", false, "do not scrub IP addresses from logs")
	fs.StringVar(&o.logLevel, "log-level", "info", "log level: debug, info, warn or error")
	fs.DurationVar(&o.proxyHold, "proxy-hold", broker.DefaultProxyHold, "how long a proxy's poll is held waiting for a client")
	fs.DurationVar(&o.clientTimeout, "client-timeout", broker.DefaultClientTimeout, "budget of a whole client request, including waiting for the proxy's answer")
	fs.DurationVar(&o.unansweredPenalty, "unanswered-penalty", broker.DefaultUnansweredPenalty, "how long a proxy that took a client's offer and sent no answer within -client-timeout is matched after other proxies (per address: IPv4 address, IPv6 /64; each such strike counts for between half of this and all of it); 0 disables")
	fs.Float64Var(&o.proxyRate, "proxy-rate", broker.DefaultProxyRate, "POST /proxy requests per second allowed per address (IPv6: per /64); negative disables the limit")
	fs.IntVar(&o.proxyBurst, "proxy-burst", broker.DefaultProxyBurst, "POST /proxy burst per address")
	fs.Float64Var(&o.clientRate, "client-rate", broker.DefaultClientRate, "POST /client requests per second allowed per address (IPv6: per /64); negative disables the limit")
	fs.IntVar(&o.clientBurst, "client-burst", broker.DefaultClientBurst, "POST /client burst per address")
	fs.Float64Var(&o.answerRate, "answer-rate", broker.DefaultAnswerRate, "POST /answer requests per second allowed per address (IPv6: per /64); negative disables the limit")
	fs.IntVar(&o.answerBurst, "answer-burst", broker.DefaultAnswerBurst, "POST /answer burst per address")
	fs.Float64Var(&o.ampRate, "amp-rate", broker.DefaultAMPRate, "GET /amp/client/ requests per second allowed per address (the AMP cache's, or a client's that skips the cache); negative disables the limit")
	fs.IntVar(&o.ampBurst, "amp-burst", broker.DefaultAMPBurst, "GET /amp/client/ burst per address")
	for i, g := range [...]struct {
		name, what string
		def        float64
	}{
		{"proxy", "POST /proxy", broker.DefaultProxyGlobalRate},
		{"client", "POST /client", broker.DefaultClientGlobalRate},
		{"answer", "POST /answer", broker.DefaultAnswerGlobalRate},
		{"amp", "GET /amp/client/", broker.DefaultAMPGlobalRate},
		{"sqs", "SQS messages handled (beyond it they are deleted unanswered)", broker.DefaultSQSGlobalRate},
	} {
		fs.Float64Var(&o.globalRates[i], g.name+"-global-rate", g.def, g.what+": requests per second over all addresses, bursts of twice that; negative disables the limit")
	}
	fs.BoolVar(&o.disableRateLimits, "disable-rate-limits", false, "turn every rate limit off (benchmarks on a closed test network only)")
	fs.StringVar(&o.rateLimitExempt, "rate-limit-exempt", "", "comma-separated CIDRs or addresses no rate limit applies to (none by default: loopback and private addresses are limited too)")
	fs.StringVar(&o.trustedProxies, "trusted-proxies", "", "comma-separated CIDRs or addresses of reverse proxies/CDNs whose Forwarded and X-Forwarded-For headers are believed (for rate limits and statistics)")
	fs.StringVar(&o.sqsName, "broker-sqs-name", "", "Amazon SQS queue to take client poll requests from (created if missing); needs -broker-sqs-region")
	fs.StringVar(&o.sqsRegion, "broker-sqs-region", "", "AWS region of -broker-sqs-name, e.g. us-east-1")
	fs.StringVar(&o.sqsProfiles, "sqs-profiles", "", "comma-separated AWS shared-config profiles: one SQS reader per profile (empty: the SDK's default credentials)")
	fs.StringVar(&o.sqsEndpoint, "broker-sqs-endpoint", "", "SQS endpoint instead of AWS's, e.g. http://127.0.0.1:4100 (a local SQS-compatible server)")
	fs.StringVar(&o.nats, "nats", "", "join a cluster of brokers that act as one (docs/cluster.md): NATS server URL, or comma-separated URLs, e.g. nats://10.0.0.5:4222,nats://10.0.0.6:4222 (empty: standalone)")
	fs.StringVar(&o.natsCreds, "nats-creds", "", "NATS credentials file (JWT and NKey seed) for -nats")
	fs.StringVar(&o.instance, "instance", broker.DefaultInstance(), "this broker's name in the cluster's metrics and logs (A-Z a-z 0-9 . _ -, at most 64)")
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), "Usage: flurry-broker (-disable-tls | -cert FILE -key FILE | -acme-hostnames NAMES) [flags]\n\nA Snowflake-compatible rendezvous broker. See docs/broker.md.\n\nFlags:\n")
		fs.PrintDefaults()
	}
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	if _, err := o.tlsMode(); err != nil {
		return nil, err
	}
	if (o.sqsName == "") != (o.sqsRegion == "") {
		return nil, errors.New("-broker-sqs-name and -broker-sqs-region must be given together")
	}
	if o.nats == "" && o.natsCreds != "" {
		return nil, errors.New("-nats-creds needs -nats")
	}
	if !broker.ValidInstance(o.instance) {
		return nil, fmt.Errorf("-instance %q: 1 to 64 of A-Z a-z 0-9 . _ -", o.instance)
	}
	if o.sqsName == "" && (o.sqsProfiles != "" || o.sqsEndpoint != "") {
		return nil, errors.New("-sqs-profiles and -broker-sqs-endpoint need -broker-sqs-name")
	}
	return o, nil
}

// tlsMode is how the broker serves: exactly one of the three.
type tlsMode int

const (
	modePlain tlsMode = iota
	modeCertFile
	modeACME
)

func (o *options) tlsMode() (tlsMode, error) {
	acme := o.acmeHostnames != ""
	files := o.certFile != "" || o.keyFile != ""
	switch {
	case acme && files:
		return 0, errors.New("-acme-hostnames cannot be combined with -cert/-key")
	case o.disableTLS && (acme || files):
		return 0, errors.New("-disable-tls cannot be combined with -acme-hostnames or -cert/-key")
	case acme:
		return modeACME, nil
	case files:
		if o.certFile == "" || o.keyFile == "" {
			return 0, errors.New("-cert and -key must be given together")
		}
		return modeCertFile, nil
	case o.disableTLS:
		return modePlain, nil
	}
	return 0, errors.New("one of -acme-hostnames, -cert and -key, or -disable-tls is required")
}

// penaltyConfig maps -unanswered-penalty to Config.UnansweredPenalty, where
// zero means the default: 0 (or less) disables the penalty.
func penaltyConfig(d time.Duration) time.Duration {
	if d <= 0 {
		return -1
	}
	return d
}

func newLogger(w io.Writer, level string, unsafeLogging bool) (*slog.Logger, error) {
	var lvl slog.Level
	if err := lvl.UnmarshalText([]byte(level)); err != nil {
		return nil, fmt.Errorf("-log-level: %w", err)
	}
	var h slog.Handler = slog.NewTextHandler(w, &slog.HandlerOptions{
		Level: lvl,
		ReplaceAttr: func(groups []string, a slog.Attr) slog.Attr {
			if a.Key == slog.TimeKey && len(groups) == 0 {
				a.Value = slog.TimeValue(a.Value.Time().UTC())
			}
			return a
		},
	})
	if !unsafeLogging {
		h = safelog.NewHandler(h)
	}
	return slog.New(h), nil
}

func run(o *options) error {
	log, err := newLogger(os.Stderr, o.logLevel, o.unsafeLogging)
	if err != nil {
		return err
	}
	exempt, err := clientaddr.ParsePrefixes("rate-limit-exempt", o.rateLimitExempt)
	if err != nil {
		return err
	}
	trusted, err := clientaddr.ParsePrefixes("trusted-proxies", o.trustedProxies)
	if err != nil {
		return err
	}
	geo, err := openGeoIP(o)
	if err != nil {
		return err
	}

	b, err := broker.New(broker.Config{
		BridgeListPath:      o.bridgeListPath,
		AllowedRelayPattern: o.allowedRelayPattern,
		PollIntervalPath:    o.pollIntervalPath,
		ProxyHold:           o.proxyHold,
		ClientTimeout:       o.clientTimeout,
		UnansweredPenalty:   penaltyConfig(o.unansweredPenalty),
		ProxyRate:           o.proxyRate,
		ProxyBurst:          o.proxyBurst,
		ClientRate:          o.clientRate,
		ClientBurst:         o.clientBurst,
		AnswerRate:          o.answerRate,
		AnswerBurst:         o.answerBurst,
		AMPRate:             o.ampRate,
		AMPBurst:            o.ampBurst,
		ProxyGlobalRate:     o.globalRates[0],
		ClientGlobalRate:    o.globalRates[1],
		AnswerGlobalRate:    o.globalRates[2],
		AMPGlobalRate:       o.globalRates[3],
		SQSGlobalRate:       o.globalRates[4],
		DisableRateLimits:   o.disableRateLimits,
		RateLimitExempt:     exempt,
		TrustedProxies:      trusted,
		GeoIP:               geo,
		MetricsLogPath:      o.metricsLog,
		MetricsInterval:     o.metricsInterval,
		IPCountPrefix:       o.ipCountPrefix,
		IPCountInterval:     o.ipCountInterval,
		SeparatePrometheus:  o.metricsAddr != "",
		NATS:                o.nats,
		NATSCreds:           o.natsCreds,
		Instance:            o.instance,
		Logger:              log,
	})
	if err != nil {
		return err
	}
	cfg := b.Config()
	errorLog := slog.NewLogLogger(log.Handler(), slog.LevelWarn)
	srv := newServer(b.Handler(), cfg, errorLog)

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	mode, _ := o.tlsMode()
	var acmeSrv *http.Server
	// TLS is done by the broker's listener (not ServeTLS), so that the
	// connections of parked proxy polls can be handed back to srv.
	var tlsConfig *tls.Config
	if mode == modeACME {
		m := &autocert.Manager{
			Prompt:     autocert.AcceptTOS,
			HostPolicy: autocert.HostWhitelist(splitList(o.acmeHostnames)...),
			Email:      o.acmeEmail,
		}
		if o.acmeCertCache != "" {
			if err := os.MkdirAll(o.acmeCertCache, 0o700); err != nil {
				log.Warn("cannot create the ACME certificate cache; certificates will not be cached", "err", err)
			} else {
				m.Cache = autocert.DirCache(o.acmeCertCache)
			}
		}
		tlsConfig = m.TLSConfig() // offers h2, http/1.1 and acme-tls/1
		tlsConfig.MinVersion = tls.VersionTLS12
		acmeSrv = &http.Server{
			Addr:              o.acmeHTTPAddr,
			Handler:           m.HTTPHandler(nil),
			ReadHeaderTimeout: readHeaderTimeout,
			ReadTimeout:       serverSlack,
			WriteTimeout:      serverSlack,
			IdleTimeout:       idleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
			ErrorLog:          errorLog,
		}
	} else if mode == modeCertFile {
		cert, err := tls.LoadX509KeyPair(o.certFile, o.keyFile)
		if err != nil {
			return fmt.Errorf("-cert/-key: %w", err)
		}
		tlsConfig = &tls.Config{
			MinVersion:   tls.VersionTLS12,
			Certificates: []tls.Certificate{cert},
			NextProtos:   []string{"h2", "http/1.1"},
		}
	}

	var metricsSrv *http.Server
	var metricsLn net.Listener
	if o.metricsAddr != "" {
		metricsSrv = &http.Server{
			Handler:           b.PrometheusHandler(),
			ReadHeaderTimeout: readHeaderTimeout,
			ReadTimeout:       serverSlack,
			WriteTimeout:      serverSlack,
			IdleTimeout:       idleTimeout,
			MaxHeaderBytes:    maxHeaderBytes,
			ErrorLog:          errorLog,
		}
		if metricsLn, err = net.Listen("tcp", o.metricsAddr); err != nil {
			return fmt.Errorf("-metrics-addr: %w", err)
		}
	}
	ln, err := net.Listen("tcp", o.addr)
	if err != nil {
		if metricsLn != nil {
			metricsLn.Close()
		}
		return err
	}
	var wg sync.WaitGroup
	var sqsProfiles []string
	if o.sqsName != "" {
		sqsProfiles = splitList(o.sqsProfiles)
		if len(sqsProfiles) == 0 {
			sqsProfiles = []string{""} // the SDK's default credentials
		}
	}
	serveErr := make(chan error, 3+len(sqsProfiles))
	wg.Go(func() {
		if err := srv.Serve(b.Listener(ln, tlsConfig)); !errors.Is(err, http.ErrServerClosed) {
			serveErr <- err
		}
	})
	if acmeSrv != nil {
		wg.Go(func() {
			if err := acmeSrv.ListenAndServe(); !errors.Is(err, http.ErrServerClosed) {
				serveErr <- fmt.Errorf("ACME HTTP-01 listener: %w", err)
			}
		})
	}
	if metricsSrv != nil {
		wg.Go(func() {
			if err := metricsSrv.Serve(metricsLn); !errors.Is(err, http.ErrServerClosed) {
				serveErr <- fmt.Errorf("metrics listener: %w", err)
			}
		})
		log.Info("metrics listening", "addr", metricsLn.Addr().String())
	}
	wg.Go(func() { _ = b.Run(ctx) })
	for _, p := range sqsProfiles {
		wg.Go(func() {
			err := b.RunSQS(ctx, broker.SQSConfig{QueueName: o.sqsName, Region: o.sqsRegion, Profile: p, Endpoint: o.sqsEndpoint})
			if err != nil {
				serveErr <- fmt.Errorf("SQS rendezvous (profile %q): %w", p, err)
			}
		})
	}
	wg.Go(func() { reloadOnSIGHUP(ctx, b, log) })
	log.Info("flurry-broker listening", "addr", ln.Addr().String(), "tls", [...]string{"off", "cert files", "acme"}[mode])

	var runErr error
	select {
	case <-ctx.Done():
		log.Info("shutting down")
	case runErr = <-serveErr:
		stop()
	}
	// Waiting proxies get "no match" now; clients in flight finish.
	b.Shutdown()
	sctx, cancel := context.WithTimeout(context.Background(), cfg.ClientTimeout+shutdownGrace)
	defer cancel()
	if err := srv.Shutdown(sctx); err != nil {
		log.Warn("shutdown", "err", err)
		srv.Close()
	}
	if acmeSrv != nil {
		if err := acmeSrv.Shutdown(sctx); err != nil {
			acmeSrv.Close()
		}
	}
	if metricsSrv != nil {
		if err := metricsSrv.Shutdown(sctx); err != nil {
			metricsSrv.Close()
		}
	}
	wg.Wait()
	return runErr
}

// newServer returns the broker's main HTTP server for h, with its limits:
// the read and write timeouts outlast the longest long-poll of cfg.
func newServer(h http.Handler, cfg broker.Config, errorLog *stdlog.Logger) *http.Server {
	longest := max(cfg.ProxyHold, cfg.ClientTimeout)
	return &http.Server{
		Handler:           h,
		ReadHeaderTimeout: readHeaderTimeout,
		ReadTimeout:       longest + serverSlack,
		WriteTimeout:      longest + serverSlack,
		IdleTimeout:       idleTimeout,
		MaxHeaderBytes:    maxHeaderBytes,
		ErrorLog:          errorLog,
	}
}

// openGeoIP loads the geoip databases the flags name, or returns nil with
// -disable-geoip. A file that is missing, unreadable or malformed is an
// error: the broker does not start without the statistics it was asked for.
func openGeoIP(o *options) (*geoip.DB, error) {
	if o.disableGeoIP {
		return nil, nil
	}
	db, err := geoip.Open(o.geoipDB, o.geoip6DB)
	if err != nil {
		return nil, fmt.Errorf("loading geoip databases (-geoipdb %q, -geoip6db %q; -disable-geoip runs without): %w", o.geoipDB, o.geoip6DB, err)
	}
	// Parsing tor's files allocates ~90 MB that is garbage once the ~8 MB
	// tables are built: give it back to the OS now rather than at the
	// runtime's leisure, so the broker's resident size reflects its load.
	debug.FreeOSMemory()
	return db, nil
}

// reloadOnSIGHUP reloads the geoip databases and the poll-interval file on
// every SIGHUP until ctx ends; what fails to load keeps its old contents.
func reloadOnSIGHUP(ctx context.Context, b *broker.Broker, log *slog.Logger) {
	hup := make(chan os.Signal, 1)
	signal.Notify(hup, syscall.SIGHUP)
	defer signal.Stop(hup)
	for {
		select {
		case <-ctx.Done():
			return
		case <-hup:
			if err := b.ReloadGeoIP(); err != nil {
				log.Error("SIGHUP: keeping the old geoip tables", "err", err)
			}
			debug.FreeOSMemory() // as after the first load
			if err := b.ReloadPollIntervals(); err != nil {
				log.Error("SIGHUP: poll intervals not reloaded", "err", err)
			}
		}
	}
}

func splitList(s string) []string {
	var out []string
	for f := range strings.SplitSeq(s, ",") {
		if f = strings.TrimSpace(f); f != "" {
			out = append(out, f)
		}
	}
	return out
}
