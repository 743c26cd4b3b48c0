package servercmd

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
	"time"

	"golang.org/x/crypto/acme"
	"golang.org/x/crypto/acme/autocert"

	"github.com/flurrypt/flurry/internal/commalist"
	"github.com/flurrypt/flurry/internal/httperrlog"
)

// acmeHTTPOff as -acme-http-addr runs no HTTP-01 listener: certificates are
// then validated by TLS-ALPN-01 on the server's own port.
const acmeHTTPOff = "off"

// Limits of the HTTP-01 challenge listener: it answers one small request
// per validation and redirects anything else to https.
const (
	challengeHeaderTimeout = 5 * time.Second
	challengeTimeout       = 10 * time.Second
	challengeIdleTimeout   = 30 * time.Second
	challengeHeaderBytes   = 8 << 10
)

// TLSFlags are a server command's TLS flags: exactly one of -disable-tls,
// -cert with -key, or -acme-hostnames.
type TLSFlags struct {
	Disable           bool
	CertFile, KeyFile string
	ACMEHostnames     string
	ACMEEmail         string
	ACMECertCache     string
	ACMEHTTPAddr      string
	ACMEDirectory     string
}

// Register defines the flags on fs; cacheDefault is the default of
// -acme-cert-cache.
func (f *TLSFlags) Register(fs *flag.FlagSet, cacheDefault string) {
	fs.BoolVar(&f.Disable, "disable-tls", false, "serve without TLS (behind a TLS-terminating front end, or for tests); excludes -cert/-key and -acme-hostnames")
	fs.StringVar(&f.CertFile, "cert", "", "TLS certificate `file` (PEM); needs -key")
	fs.StringVar(&f.KeyFile, "key", "", "TLS private key `file` (PEM); needs -cert")
	fs.StringVar(&f.ACMEHostnames, "acme-hostnames", "", "comma-separated `hostnames` to get TLS certificates for by ACME (HTTP-01 on -acme-http-addr, or TLS-ALPN-01)")
	fs.StringVar(&f.ACMEEmail, "acme-email", "", "optional contact `email` for the ACME account")
	fs.StringVar(&f.ACMECertCache, "acme-cert-cache", cacheDefault, "`directory` the ACME account key and certificates are kept in (created 0700); empty: none, certificates are fetched again at every start")
	fs.StringVar(&f.ACMEHTTPAddr, "acme-http-addr", "", "`address` of the plain-HTTP listener for ACME HTTP-01 challenges (default: port 80 on the host of the listen address; \"off\": none, TLS-ALPN-01 only)")
	fs.StringVar(&f.ACMEDirectory, "acme-directory", acme.LetsEncryptURL, "ACME directory `URL` of the certificate authority (its own TLS certificate is checked against the system's roots, which the SSL_CERT_FILE environment variable replaces)")
}

// Check reports a contradictory or incomplete choice.
func (f *TLSFlags) Check() error {
	acmeSet := f.ACMEHostnames != ""
	files := f.CertFile != "" || f.KeyFile != ""
	switch {
	case acmeSet && files:
		return errors.New("-acme-hostnames cannot be combined with -cert/-key")
	case f.Disable && (acmeSet || files):
		return errors.New("-disable-tls cannot be combined with -acme-hostnames or -cert/-key")
	case files && (f.CertFile == "" || f.KeyFile == ""):
		return errors.New("-cert and -key must be given together")
	case acmeSet && len(commalist.Split(f.ACMEHostnames)) == 0:
		return errors.New("-acme-hostnames names no host")
	case !acmeSet && !files && !f.Disable:
		return errors.New("one of -acme-hostnames, -cert and -key, or -disable-tls is required")
	}
	return nil
}

// TLS is the TLS set-up the flags chose.
type TLS struct {
	// Config serves TLS; nil with -disable-tls.
	Config *tls.Config
	// Hostnames are the -acme-hostnames.
	Hostnames []string
	// Mode names the choice for a log line: off, cert files or acme.
	Mode string

	challenge *http.Server // nil unless ACME with an HTTP-01 listener
	served    chan struct{}
}

// Setup checks the flags, loads the certificate files or prepares ACME,
// and returns the TLS configuration, whose ALPN offers protos (and, with
// ACME, TLS-ALPN-01's). With ACME it also starts the HTTP-01 listener
// (-acme-http-addr, by default port 80 on the host of listenAddr); Close
// stops it.
func (f *TLSFlags) Setup(listenAddr string, log *slog.Logger, protos ...string) (*TLS, error) {
	if err := f.Check(); err != nil {
		return nil, err
	}
	switch {
	case f.Disable:
		return &TLS{Mode: "off"}, nil
	case f.CertFile != "":
		cert, err := tls.LoadX509KeyPair(f.CertFile, f.KeyFile)
		if err != nil {
			return nil, fmt.Errorf("-cert/-key: %w", err)
		}
		cfg := &tls.Config{MinVersion: tls.VersionTLS12, Certificates: []tls.Certificate{cert}, NextProtos: protos}
		return &TLS{Config: cfg, Mode: "cert files"}, nil
	}
	t := &TLS{Hostnames: commalist.Split(f.ACMEHostnames), Mode: "acme"}
	m := &autocert.Manager{
		Prompt:     autocert.AcceptTOS,
		HostPolicy: autocert.HostWhitelist(t.Hostnames...),
		Email:      f.ACMEEmail,
		Client:     &acme.Client{DirectoryURL: f.ACMEDirectory},
	}
	if f.ACMECertCache != "" {
		if err := os.MkdirAll(f.ACMECertCache, 0o700); err != nil {
			return nil, fmt.Errorf("-acme-cert-cache: %w", err)
		}
		m.Cache = autocert.DirCache(f.ACMECertCache)
	}
	t.Config = &tls.Config{
		MinVersion:     tls.VersionTLS12,
		GetCertificate: m.GetCertificate,
		NextProtos:     append(append([]string(nil), protos...), acme.ALPNProto),
	}
	if f.ACMEHTTPAddr == acmeHTTPOff {
		return t, nil
	}
	addr := f.ACMEHTTPAddr
	if addr == "" {
		host, _, err := net.SplitHostPort(listenAddr)
		if err != nil {
			return nil, fmt.Errorf("listen address %q: %w", listenAddr, err)
		}
		addr = net.JoinHostPort(host, "80")
	}
	var lc net.ListenConfig
	ln, err := lc.Listen(context.Background(), "tcp", addr)
	if err != nil {
		return nil, fmt.Errorf("ACME HTTP-01 listener (-acme-http-addr): %w", err)
	}
	t.challenge = &http.Server{
		Handler:           withoutPort(m.HTTPHandler(nil)),
		ReadHeaderTimeout: challengeHeaderTimeout,
		ReadTimeout:       challengeTimeout,
		WriteTimeout:      challengeTimeout,
		IdleTimeout:       challengeIdleTimeout,
		MaxHeaderBytes:    challengeHeaderBytes,
		ErrorLog:          httperrlog.ErrorLog(log.Handler(), slog.LevelDebug),
	}
	t.served = make(chan struct{})
	go func() {
		defer close(t.served)
		if err := t.challenge.Serve(ln); !errors.Is(err, http.ErrServerClosed) {
			log.Error("ACME HTTP-01 listener stopped", "err", err)
		}
	}()
	log.Info("ACME HTTP-01 listener", "addr", ln.Addr().String())
	return t, nil
}

// withoutPort strips the port from each request's Host before h sees it.
// autocert checks the Host header, port included, against the host
// policy: on any port but 80 (behind a port forward, or in a test) it would
// refuse every challenge.
func withoutPort(h http.Handler) http.Handler {
	return http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		if host, _, err := net.SplitHostPort(r.Host); err == nil {
			r.Host = host
		}
		h.ServeHTTP(w, r)
	})
}

// Close stops the HTTP-01 listener, if any.
func (t *TLS) Close() error {
	if t.challenge == nil {
		return nil
	}
	err := t.challenge.Close()
	<-t.served
	return err
}
