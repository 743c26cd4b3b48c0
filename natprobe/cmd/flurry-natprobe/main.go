// Command flurry-natprobe is a NAT test peer for Snowflake and Flurry
// proxies: an HTTP(S) server with Snowflake's /probe endpoint that answers
// a proxy's WebRTC offer and reports, by whether the connection opens,
// whether the proxy's NAT is restrictive. It is only truthful when it runs
// behind a restrictive NAT itself; see docs/proxy.md.
package main

import (
	"context"
	"crypto/tls"
	"errors"
	"flag"
	"fmt"
	"log/slog"
	"net"
	"net/http"
	"os"
	"os/signal"
	"strings"
	"syscall"
	"time"

	"golang.org/x/crypto/acme/autocert"

	"github.com/flurrypt/flurry/common/safelog"
	"github.com/flurrypt/flurry/common/version"
	"github.com/flurrypt/flurry/natprobe"
)

func main() {
	os.Exit(run())
}

func run() int {
	fs := flag.NewFlagSet("flurry-natprobe", flag.ContinueOnError)
	var (
		addr          = fs.String("addr", "127.0.0.1:8443", "listen `address`")
		acmeHosts     = fs.String("acme-hostnames", "", "comma-separated `hostnames` for automatic Let's Encrypt certificates (also listens on :80 for HTTP-01)")
		acmeEmail     = fs.String("acme-email", "", "contact `email` for Let's Encrypt")
		acmeCache     = fs.String("acme-cert-cache", "acme-cert-cache", "`directory` for ACME certificates")
		certFile      = fs.String("cert", "", "TLS certificate `file` (with -key)")
		keyFile       = fs.String("key", "", "TLS private key `file` (with -cert)")
		disableTLS    = fs.Bool("disable-tls", false, "serve plain HTTP (behind a TLS-terminating front end, or for tests)")
		stun          = fs.String("stun", "", "comma-separated STUN `URLs` so that answers carry the probe's NATed address; empty: host candidates only")
		keepLocal     = fs.Bool("keep-local-addresses", false, "keep private candidates in answers (lab setups)")
		loopbackOnly  = fs.Bool("loopback-only", false, "gather WebRTC candidates on loopback only (tests and the demo on one machine)")
		unsafeLogging = fs.Bool("unsafe-logging", false, "do not scrub IP addresses from the log")
		maxProbes     = fs.Int("max-probes", natprobe.DefaultMaxConcurrent, "most probes in progress at once; more get 503")
		maxPerAddr    = fs.Int("max-probes-per-address", natprobe.DefaultMaxPerAddress, "most probes in progress from one address (IPv6: one /64), the TCP peer's; more get 503")
		verbose       = fs.Bool("verbose", false, "debug logging")
		showVersion   = fs.Bool("version", false, "print the version and exit")
	)
	if err := fs.Parse(os.Args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if *showVersion {
		fmt.Fprintln(os.Stderr, "flurry-natprobe", version.String())
		return 0
	}
	level := slog.LevelInfo
	if *verbose {
		level = slog.LevelDebug
	}
	var h slog.Handler = slog.NewTextHandler(os.Stderr, &slog.HandlerOptions{Level: level})
	if !*unsafeLogging {
		h = safelog.NewHandler(h)
	}
	log := slog.New(h)

	var tlsConfig *tls.Config
	var acme *autocert.Manager
	switch {
	case *acmeHosts != "" && (*certFile != "" || *keyFile != ""):
		fmt.Fprintln(os.Stderr, "flurry-natprobe: -acme-hostnames and -cert/-key exclude each other")
		return 2
	case *acmeHosts != "":
		if err := os.MkdirAll(*acmeCache, 0o700); err != nil {
			fmt.Fprintln(os.Stderr, "flurry-natprobe:", err)
			return 1
		}
		acme = &autocert.Manager{
			Prompt:     autocert.AcceptTOS,
			HostPolicy: autocert.HostWhitelist(strings.Split(*acmeHosts, ",")...),
			Email:      *acmeEmail,
			Cache:      autocert.DirCache(*acmeCache),
		}
		tlsConfig = acme.TLSConfig()
	case *certFile != "" || *keyFile != "":
		cert, err := tls.LoadX509KeyPair(*certFile, *keyFile)
		if err != nil {
			fmt.Fprintln(os.Stderr, "flurry-natprobe:", err)
			return 1
		}
		tlsConfig = &tls.Config{Certificates: []tls.Certificate{cert}, MinVersion: tls.VersionTLS12}
	case *disableTLS:
	default:
		fmt.Fprintln(os.Stderr, "flurry-natprobe: the -acme-hostnames, -cert and -key, or -disable-tls option is required")
		return 2
	}

	cfg := natprobe.Config{KeepLocalAddresses: *keepLocal, LoopbackOnly: *loopbackOnly, Logger: log,
		MaxConcurrent: *maxProbes, MaxPerAddress: *maxPerAddr}
	if *stun != "" {
		cfg.STUNURLs = strings.Split(*stun, ",")
	}
	probes, err := natprobe.New(cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-natprobe:", err)
		return 2
	}
	defer probes.Close()

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	servers := []*http.Server{newServer(probes.Handler(), tlsConfig, log)}
	ln, err := net.Listen("tcp", *addr)
	if err != nil {
		log.Error("listen", "err", err)
		return 1
	}
	if tlsConfig != nil {
		ln = tls.NewListener(ln, tlsConfig)
	}
	errc := make(chan error, 2)
	go func() { errc <- servers[0].Serve(ln) }()
	if acme != nil {
		challenge := newServer(acme.HTTPHandler(nil), nil, log)
		challenge.Addr = ":80"
		servers = append(servers, challenge)
		go func() { errc <- challenge.ListenAndServe() }()
	}
	log.Info("natprobe listening", "address", ln.Addr().String(), "path", natprobe.Path, "tls", tlsConfig != nil)

	code := 0
	select {
	case <-ctx.Done():
	case err := <-errc:
		log.Error("server stopped", "err", err)
		code = 1
	}
	sctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	for _, s := range servers {
		s.Shutdown(sctx)
	}
	return code
}

func newServer(h http.Handler, tlsConfig *tls.Config, log *slog.Logger) *http.Server {
	return &http.Server{
		Handler:           h,
		TLSConfig:         tlsConfig,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      30 * time.Second, // ICE gathering takes at most 10 s
		IdleTimeout:       60 * time.Second,
		MaxHeaderBytes:    8 << 10,
		ErrorLog:          slog.NewLogLogger(log.Handler(), slog.LevelDebug),
	}
}
