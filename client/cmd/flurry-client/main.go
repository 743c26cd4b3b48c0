// Command flurry-client is Flurry's client: a Tor pluggable transport
// ("snowflake", wire-compatible with Snowflake v2.14.1) that reaches a bridge
// through volunteer WebRTC proxies, or, with -socks, a plain SOCKS5 proxy
// whose every connection is carried to whatever the relay forwards to.
// See docs/client.md.
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
	"strings"
	"sync"
	"syscall"
	"time"

	pt "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/goptlib"

	"github.com/flurrypt/flurry/client"
	"github.com/flurrypt/flurry/client/sqs"
	"github.com/flurrypt/flurry/common/covertdtls"
	"github.com/flurrypt/flurry/common/safelog"
	"github.com/flurrypt/flurry/common/version"
	"github.com/flurrypt/flurry/internal/commalist"
	"github.com/flurrypt/flurry/internal/networkpreset"
	"github.com/flurrypt/flurry/internal/pionruntime"
	"github.com/flurrypt/flurry/internal/servercmd"
)

// methodName is the transport name tor knows us by (Snowflake's).
const methodName = "snowflake"

// dialTimeout bounds the wait for a session's first proxy.
const dialTimeout = 2 * time.Minute

// copyBufferSize is the buffer of each direction of a SOCKS connection.
const copyBufferSize = 16 << 10

// torBridgeLines are Tor's Snowflake bridge lines, shown when no broker is
// configured. They are only examples: nothing defaults to them.
var torBridgeLines = strings.Join(networkpreset.Tor().BridgeLines(), "\n  ")

type flags struct {
	url, front, fronts, ice, ampcache, sqsqueue, sqscreds string
	covertDTLS, covertFingerprint                         string
	maxProxies                                            int
	logFile                                               string
	logToStateDir, keepLocal, unsafeLogging, showVersion  bool
	socks, socks5Proxy                                    string
	loopbackOnly                                          bool
}

func parseFlags(fs *flag.FlagSet, args []string) (*flags, error) {
	var f flags
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: %s [flags]

flurry-client reaches a Snowflake or Flurry bridge through volunteer WebRTC
proxies found by a broker. It speaks Snowflake v2.14.1's protocol.

Under tor (TOR_PT_* environment) it is a managed pluggable transport named
"snowflake": the bridge line's arguments (url=, fronts=, ice=, max=,
fingerprint=, utls-imitate=, ...) override the flags below. torrc:

  UseBridges 1
  ClientTransportPlugin snowflake exec /usr/bin/flurry-client -log /var/log/tor/flurry-client.log
  %s

Without tor, -socks ADDR runs a plain SOCKS5 proxy: every connection is
carried through a proxy to the relay, which forwards it to its own target
(tor's ORPort, or the relay's -forward address). The destination named in
the SOCKS CONNECT request is NOT used, as with Snowflake.

  flurry-client -url https://broker.example/ -socks 127.0.0.1:1080

Behind a firewall that only lets a SOCKS5 proxy out, all of the client's own
traffic (broker HTTPS, STUN, WebRTC) can go through that proxy; it must
support UDP ASSOCIATE. Under tor, set it in torrc, and tor passes it to the
client (TOR_PT_PROXY; the client answers PROXY DONE once a test UDP ASSOCIATE
worked, PROXY-ERROR otherwise):

  Socks5Proxy 127.0.0.1:1080

With -socks, use -socks5-proxy socks5://[user:pass@]host:port.

No flag defaults to a public host: set -url (or url= in the bridge line).

Environment:
  GOMAXPROCS  processors the client uses (default %d: less CPU per MB, and
              one user's traffic never needs more than one core)
  GOGC        the Go collector's target (default %d: less CPU per MB)

Flags:
`, fs.Name(), torBridgeLines, pionruntime.MaxProcs, pionruntime.GCPercent)
		fs.PrintDefaults()
	}
	fs.StringVar(&f.url, "url", "", "URL of the broker (the bridge line's url=)")
	fs.StringVar(&f.front, "front", "", "front domain(s), comma-separated (legacy; see -fronts)")
	fs.StringVar(&f.fronts, "fronts", "", "comma-separated front domains: each broker request goes to a random one, with the broker's host in the Host header")
	fs.StringVar(&f.ice, "ice", "", "comma-separated ICE servers: stun:host:port, turn:user:pass@host:port[?transport=tcp], turns:user:pass@host:port (credentials percent-encoded); empty means none")
	fs.IntVar(&f.maxProxies, "max", client.DefaultMax, "number of proxies to keep connected (2 or more: all carry traffic at once)")
	fs.StringVar(&f.ampcache, "ampcache", "", "AMP cache URL for rendezvous (with -url)")
	fs.StringVar(&f.sqsqueue, "sqsqueue", "", "SQS queue URL for rendezvous, https://sqs.<region>.amazonaws.com/<account>/<queue> (instead of -url)")
	fs.StringVar(&f.sqscreds, "sqscreds", "", "base64 credentials for -sqsqueue (see common/sqscreds)")
	fs.StringVar(&f.covertDTLS, "covertdtls-config", "disable", "covert DTLS mode of the ClientHello: disable (pion's own), mimic (a recent Chrome's), randomize, randomizemimic (a browser's picked per connection); see docs/fingerprinting.md")
	fs.StringVar(&f.covertFingerprint, "covertdtls-fingerprint", "", "with -covertdtls-config other than disable: replay this raw ClientHello (hex, as Snowflake's)")
	fs.StringVar(&f.logFile, "log", "", "append logs to this file (default: no logs under tor, stderr with -socks)")
	fs.BoolVar(&f.logToStateDir, "log-to-state-dir", false, "resolve -log relative to tor's pluggable-transport state directory")
	fs.BoolVar(&f.logToStateDir, "logToStateDir", false, "deprecated alias of -log-to-state-dir")
	fs.BoolVar(&f.keepLocal, "keep-local-addresses", false, "offer local (private, loopback) addresses as ICE candidates")
	fs.BoolVar(&f.keepLocal, "keepLocalAddresses", false, "deprecated alias of -keep-local-addresses")
	fs.BoolVar(&f.unsafeLogging, "unsafe-logging", false, "do not scrub IP addresses from logs")
	fs.BoolVar(&f.showVersion, "version", false, "print the version and exit")
	fs.StringVar(&f.socks, "socks", "", "run a plain SOCKS5 proxy on this address instead of a tor pluggable transport (e.g. 127.0.0.1:1080)")
	fs.StringVar(&f.socks5Proxy, "socks5-proxy", "", "send all of the client's own traffic (broker, STUN, WebRTC) through this SOCKS5 proxy, socks5://[user:pass@]host:port; it must support UDP ASSOCIATE (under tor, torrc's Socks5Proxy takes precedence)")
	fs.BoolVar(&f.loopbackOnly, "loopback-only", false, "use only loopback addresses for WebRTC, no STUN (tests and local demos)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	return &f, nil
}

// baseConfig turns the flags into a client.Config (bridge-line arguments
// are applied per connection).
func (f *flags) baseConfig(logger *slog.Logger) (client.Config, error) {
	cfg := client.Config{
		BrokerURL:          f.url,
		ICEServers:         commalist.Split(f.ice),
		Max:                f.maxProxies,
		AMPCacheURL:        f.ampcache,
		SQSQueueURL:        f.sqsqueue,
		SQSCredentials:     f.sqscreds,
		NewSQSRendezvous:   sqs.New, // also for sqsqueue= in bridge lines
		KeepLocalAddresses: f.keepLocal,
		LoopbackOnly:       f.loopbackOnly,
		SOCKS5Proxy:        f.socks5Proxy,
		Logger:             logger,
	}
	switch {
	case f.fronts != "":
		cfg.Fronts = commalist.Split(f.fronts)
	case f.front != "":
		cfg.Fronts = commalist.Split(f.front)
	}
	c, err := covertdtls.Parse(f.covertDTLS, f.covertFingerprint)
	if err != nil {
		return cfg, fmt.Errorf("-covertdtls-config/-covertdtls-fingerprint: %w", err)
	}
	cfg.CovertDTLS = c
	return cfg, nil
}

func main() {
	pionruntime.Apply()
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	fs := flag.NewFlagSet("flurry-client", flag.ContinueOnError)
	f, err := parseFlags(fs, args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 2
	}
	if f.showVersion {
		fmt.Println(version.Line("flurry-client"))
		return 0
	}
	managed := f.socks == ""
	if managed && os.Getenv("TOR_PT_MANAGED_TRANSPORT_VER") == "" {
		fmt.Fprintln(os.Stderr, "flurry-client: not started by tor (no TOR_PT_* environment); use -socks ADDR to run a plain SOCKS5 proxy, or -h for help")
		return 2
	}
	if !managed && f.url == "" && f.sqsqueue == "" {
		fmt.Fprintf(os.Stderr, "flurry-client: set -url to the broker's URL (and -fronts, -ice as your bridge line says). For example, Tor's Snowflake bridge lines are:\n  %s\n", torBridgeLines)
		return 2
	}

	logger, closeLog, err := newLogger(f, managed)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		if managed {
			pt.Log(pt.LogSeverityError, err.Error())
		}
		return 1
	}
	defer closeLog()

	base, err := f.baseConfig(logger)
	if err == nil {
		// Check the flags once, so that a mistake shows at startup. A
		// missing url is fine under tor: bridge lines carry it.
		var c *client.Client
		c, err = client.New(base)
		if c != nil {
			_ = c.Close()
		}
		if errors.Is(err, client.ErrNoRendezvous) && managed {
			logger.Info("no -url: each bridge line must carry url=")
			err = nil
		}
	}
	if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-client:", err)
		if managed {
			pt.Log(pt.LogSeverityError, err.Error())
		}
		return 1
	}

	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()

	if !managed && base.SOCKS5Proxy != "" {
		// As under tor: check the proxy's UDP support before serving.
		if err := checkProxy(ctx, base.SOCKS5Proxy); err != nil {
			fmt.Fprintln(os.Stderr, "flurry-client:", err)
			return 1
		}
		logger.Info("SOCKS5 proxy accepts UDP ASSOCIATE: all traffic goes through it")
	}

	srv := &server{base: base, log: logger}
	srv.bridges = newBridges(func(args pt.Args) (*client.Client, error) {
		cfg, err := client.ApplyBridgeArgs(srv.base, args)
		if err != nil {
			return nil, err
		}
		return client.New(cfg)
	})
	if managed {
		return srv.runManaged(ctx, stop)
	}
	return srv.runSOCKS(ctx, stop, f.socks)
}

// newLogger opens the log: -log (relative to the state directory with
// -log-to-state-dir), else nothing under tor (tor reads our stderr; writing
// there can block old tors) and stderr with -socks. IP addresses are
// scrubbed unless -unsafe-logging.
func newLogger(f *flags, managed bool) (*slog.Logger, func(), error) {
	var w io.Writer
	closeLog := func() {}
	switch {
	case f.logFile != "":
		path := f.logFile
		if f.logToStateDir {
			dir, err := pt.MakeStateDir()
			if err != nil {
				return nil, nil, fmt.Errorf("state directory: %w", err)
			}
			path = filepath.Join(dir, f.logFile)
		}
		file, err := servercmd.OpenLogFile(path)
		if err != nil {
			return nil, nil, fmt.Errorf("open log: %w", err)
		}
		w, closeLog = file, func() { _ = file.Close() }
	case managed:
		return slog.New(slog.DiscardHandler), closeLog, nil
	default:
		w = os.Stderr
	}
	return servercmd.NewLogger(w, servercmd.LogOptions{Unsafe: f.unsafeLogging}), closeLog, nil
}

// server accepts SOCKS connections and carries each through a session.
type server struct {
	base client.Config
	log  *slog.Logger

	bridges *bridges       // a Client per bridge line
	wg      sync.WaitGroup // accept loops and connection handlers
}

// runManaged is the tor pluggable-transport mode.
func (s *server) runManaged(ctx context.Context, stop context.CancelFunc) int {
	info, err := pt.ClientSetup(nil)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-client:", err)
		return 1
	}
	pt.ReportVersion("flurry-client", version.String())
	if info.ProxyURL != nil {
		// tor's upstream proxy (torrc Socks5Proxy and friends): as
		// Snowflake, accept only SOCKS5, check that it relays UDP, and
		// send everything through it.
		if info.ProxyURL.Scheme != "socks5" {
			_ = pt.ProxyError(fmt.Sprintf("proxy scheme %q is not supported: flurry-client needs a socks5 proxy with UDP ASSOCIATE (torrc Socks5Proxy)", safeScheme(info.ProxyURL.Scheme)))
			return 1
		}
		proxyURL := info.ProxyURL.String()
		if err := checkProxy(ctx, proxyURL); err != nil {
			_ = pt.ProxyError(safelog.Scrub(err.Error()))
			return 1
		}
		pt.ProxyDone()
		if s.base.SOCKS5Proxy != "" && s.base.SOCKS5Proxy != proxyURL {
			s.log.Info("tor's proxy (TOR_PT_PROXY) replaces -socks5-proxy")
		}
		s.base.SOCKS5Proxy = proxyURL
		s.log.Info("all traffic goes through tor's SOCKS5 proxy")
	}
	if os.Getenv("TOR_PT_EXIT_ON_STDIN_CLOSE") == "1" {
		go func() {
			_, _ = io.Copy(io.Discard, os.Stdin)
			s.log.Info("stdin closed: exiting")
			stop()
		}()
	}

	var listeners []net.Listener
	for _, name := range info.MethodNames {
		if name != methodName {
			_ = pt.CmethodError(name, "no such method")
			continue
		}
		ln, err := net.Listen("tcp", "127.0.0.1:0")
		if err != nil {
			_ = pt.CmethodError(name, err.Error())
			continue
		}
		listeners = append(listeners, ln)
		pt.Cmethod(name, "socks5", ln.Addr())
		s.log.Info("listening", "method", name, "addr", ln.Addr().String())
	}
	pt.CmethodsDone()
	if len(listeners) == 0 {
		return 1
	}
	stopEvents := s.reportEvents(ctx, func(e client.Event) {
		pt.Log(pt.LogSeverityNotice, safelog.Scrub(e.String()))
	})
	for _, ln := range listeners {
		s.wg.Add(1)
		go s.acceptLoop(ctx, ln, stop)
	}
	<-ctx.Done()
	for _, ln := range listeners {
		_ = ln.Close()
	}
	s.shutdown()
	stopEvents()
	return 0
}

// proxyCheckTimeout bounds the UDP ASSOCIATE test at startup.
const proxyCheckTimeout = 15 * time.Second

// checkProxy checks that a SOCKS5 proxy accepts UDP ASSOCIATE.
func checkProxy(ctx context.Context, proxyURL string) error {
	ctx, cancel := context.WithTimeout(ctx, proxyCheckTimeout)
	defer cancel()
	if err := client.CheckSOCKS5Proxy(ctx, proxyURL); err != nil {
		return fmt.Errorf("SOCKS5 proxy unusable (it must support UDP ASSOCIATE): %w", err)
	}
	return nil
}

// safeScheme keeps a URL scheme printable and short for a message to tor.
func safeScheme(s string) string {
	if len(s) > 16 || strings.IndexFunc(s, func(r rune) bool { return r < '!' || r > '~' || r == '"' }) >= 0 {
		return "?"
	}
	return s
}

// reportEvents passes the clients' events to report until ctx ends; the
// returned function waits for that. Set it up before the first client.
func (s *server) reportEvents(ctx context.Context, report func(client.Event)) (wait func()) {
	events := make(chan client.Event, 64)
	s.base.Events = events
	var wg sync.WaitGroup
	wg.Go(func() {
		for {
			select {
			case e := <-events:
				report(e)
			case <-ctx.Done():
				return
			}
		}
	})
	return wg.Wait
}

// runSOCKS is the plain SOCKS5 mode.
func (s *server) runSOCKS(ctx context.Context, stop context.CancelFunc, addr string) int {
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-client:", err)
		return 1
	}
	s.log.Info("SOCKS5 proxy listening (the CONNECT destination is ignored: streams go to the relay's target)", "addr", ln.Addr().String())
	fmt.Fprintf(os.Stderr, "flurry-client: SOCKS5 proxy on %s\n", ln.Addr())
	stopEvents := s.reportEvents(ctx, func(e client.Event) { s.log.Info(e.String()) })
	s.wg.Add(1)
	go s.acceptLoop(ctx, ln, stop)
	<-ctx.Done()
	_ = ln.Close()
	s.shutdown()
	stopEvents()
	return 0
}

// shutdown closes every client (their sessions end, so handlers return) and
// waits for the handlers.
func (s *server) shutdown() {
	s.bridges.close()
	s.wg.Wait()
}

// handle carries one SOCKS connection through a new session.
func (s *server) handle(ctx context.Context, conn *pt.SocksConn) {
	defer conn.Close()
	c, release, err := s.bridges.acquire(conn.Req.Args)
	if errors.Is(err, errTooManyBridges) || errors.Is(err, client.ErrClosed) {
		s.log.Warn("SOCKS connection refused", "err", err)
		_ = conn.Reject()
		return
	}
	if err != nil {
		s.log.Error("bad bridge arguments", "err", err)
		if errors.Is(err, client.ErrNoRendezvous) {
			s.log.Error("example bridge line: " + networkpreset.Tor().BridgeLines()[0])
		}
		_ = conn.Reject()
		return
	}
	defer release()
	dctx, cancel := context.WithTimeout(ctx, dialTimeout)
	stream, err := c.Dial(dctx)
	cancel()
	if err != nil {
		s.log.Warn("no proxy for SOCKS connection", "err", err)
		_ = conn.Reject()
		return
	}
	defer stream.Close()
	if err := conn.Grant(&net.TCPAddr{IP: net.IPv4zero, Port: 0}); err != nil {
		return
	}
	// Copy both ways; when either direction ends, close both (and a
	// shutdown closes the stream through the client).
	done := make(chan struct{}, 2)
	go func() {
		buf := make([]byte, copyBufferSize)
		_, _ = io.CopyBuffer(stream, conn, buf)
		done <- struct{}{}
	}()
	go func() {
		buf := make([]byte, copyBufferSize)
		_, _ = io.CopyBuffer(conn, stream, buf)
		done <- struct{}{}
	}()
	pending := 2
	select {
	case <-done:
		pending--
	case <-ctx.Done():
	}
	// The SOCKS connection first: closing the stream lingers (see
	// client.Conn.Close).
	_ = conn.Close()
	_ = stream.Close()
	for ; pending > 0; pending-- {
		<-done
	}
}
