package rendezvous

//lint:file-ignore SA1019 uTLS connections need golang.org/x/net/http2's Transport: net/http's own HTTP/2 runs only over crypto/tls connections, and a utls.UConn is not one.

import (
	"context"
	"crypto/tls"
	"crypto/x509"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"sync"
	"time"

	utls "github.com/refraction-networking/utls"
	"golang.org/x/net/http2"
)

// Transport timeouts.
const (
	dialTimeout           = 10 * time.Second
	tlsHandshakeTimeout   = 10 * time.Second
	responseHeaderTimeout = 15 * time.Second // Snowflake's value
	idleConnTimeout       = 90 * time.Second
)

// TransportConfig configures NewTransport. The zero value is a plain HTTPS
// transport with Go's TLS stack and the system's roots.
type TransportConfig struct {
	// UTLSImitate names a uTLS ClientHello to imitate (the utls-imitate
	// bridge-line option, case-insensitive; see UTLSNames). Empty means
	// Go's own TLS.
	UTLSImitate string

	// UTLSRemoveSNI leaves the server name out of the uTLS ClientHello
	// (utls-nosni). The certificate is still checked against the host.
	UTLSRemoveSNI bool

	// RootCAs replaces the system roots (tests).
	RootCAs *x509.CertPool

	// DialContext replaces the TCP dialer (tests, or a proxy).
	DialContext func(ctx context.Context, network, addr string) (net.Conn, error)
}

// utlsNames are the ClientHello names Snowflake's client accepts, lower
// case, and what they map to.
var utlsNames = map[string]utls.ClientHelloID{
	"hellorandomizedalpn":   utls.HelloRandomizedALPN,
	"hellorandomizednoalpn": utls.HelloRandomizedNoALPN,
	"hellofirefox_auto":     utls.HelloFirefox_Auto,
	"hellofirefox_55":       utls.HelloFirefox_55,
	"hellofirefox_56":       utls.HelloFirefox_56,
	"hellofirefox_63":       utls.HelloFirefox_63,
	"hellofirefox_65":       utls.HelloFirefox_65,
	"hellochrome_auto":      utls.HelloChrome_Auto,
	"hellochrome_58":        utls.HelloChrome_58,
	"hellochrome_62":        utls.HelloChrome_62,
	"hellochrome_70":        utls.HelloChrome_70,
	"hellochrome_72":        utls.HelloChrome_72,
	"helloios_auto":         utls.HelloIOS_Auto,
	"helloios_11_1":         utls.HelloIOS_11_1,
	"helloios_12_1":         utls.HelloIOS_12_1,
}

// CheckUTLSName reports whether name is a ClientHello name NewTransport
// accepts (case-insensitive); the empty name is accepted and means none.
func CheckUTLSName(name string) error {
	if name == "" {
		return nil
	}
	if _, ok := utlsNames[strings.ToLower(name)]; !ok {
		return fmt.Errorf("%w: %q", ErrUTLSName, name)
	}
	return nil
}

// warmTransport is a RoundTripper that can open a connection before the
// request that will use it (HTTP.Warm, AMP.Warm): the transports
// NewTransport returns are.
type warmTransport interface {
	http.RoundTripper
	// warm starts opening a connection to addr (host:port) for a
	// request of scheme (http or https) in the background.
	warm(scheme, addr string)
	// answeredBy records that addr answered a request, so that the next
	// warm to it, which would likely find an idle connection, is skipped.
	answeredBy(addr string)
}

// NewTransport returns an http.RoundTripper for broker requests: its own
// http.Transport, no environment proxy, and a uTLS ClientHello when
// cfg.UTLSImitate is set.
func NewTransport(cfg TransportConfig) (http.RoundTripper, error) {
	dial := cfg.DialContext
	if dial == nil {
		dial = (&net.Dialer{Timeout: dialTimeout}).DialContext
	}
	tlsConfig := &tls.Config{RootCAs: cfg.RootCAs, MinVersion: tls.VersionTLS12}
	if cfg.UTLSImitate == "" {
		tcp := newWarmPool(func(ctx context.Context, addr string) (net.Conn, error) { return dial(ctx, "tcp", addr) })
		return &plainTransport{
			Transport: &http.Transport{
				Proxy:                 nil,
				DialContext:           tcp.dialer(dial),
				TLSClientConfig:       tlsConfig,
				TLSHandshakeTimeout:   tlsHandshakeTimeout,
				ResponseHeaderTimeout: responseHeaderTimeout,
				IdleConnTimeout:       idleConnTimeout,
				MaxIdleConns:          4,
				ForceAttemptHTTP2:     true,
			},
			tcp: tcp,
		}, nil
	}
	id, ok := utlsNames[strings.ToLower(cfg.UTLSImitate)]
	if !ok {
		return nil, fmt.Errorf("%w: %q", ErrUTLSName, cfg.UTLSImitate)
	}
	return newUTLSTransport(id, cfg.UTLSRemoveSNI, cfg.RootCAs, dial), nil
}

// plainTransport is an http.Transport (Go's TLS) that can open the TCP
// connection of a request ahead of it.
type plainTransport struct {
	*http.Transport
	tcp *warmPool
}

func (t *plainTransport) warm(_, addr string)    { t.tcp.warm(addr) }
func (t *plainTransport) answeredBy(addr string) { t.tcp.answeredBy(addr) }

// CloseIdleConnections closes the transport's idle connections and those
// opened ahead and not used.
func (t *plainTransport) CloseIdleConnections() {
	t.Transport.CloseIdleConnections()
	t.tcp.closeIdle()
}

// utlsTransport sends https requests over uTLS connections, through an
// HTTP/2 or an HTTP/1.1 transport depending on the ALPN protocol the server
// chose; plain http requests go through the HTTP/1.1 transport without TLS.
//
// The protocol of a host is learnt by the first connection to it, which is
// then handed to the matching transport (pending) so the handshake is not
// wasted.
type utlsTransport struct {
	id        utls.ClientHelloID
	removeSNI bool
	rootCAs   *x509.CertPool
	dial      func(ctx context.Context, network, addr string) (net.Conn, error)
	h1        *http.Transport
	h2        *http2.Transport
	tcp       *warmPool // TCP connections opened ahead, for plain http
	tls       *warmPool // uTLS connections opened ahead, for https

	mu      sync.Mutex               // guards the fields below
	proto   map[string]string        // host:port -> negotiated ALPN ("h2" or other)
	pending map[string][]*utls.UConn // host:port -> handshaken conns not yet used
}

func newUTLSTransport(id utls.ClientHelloID, removeSNI bool, roots *x509.CertPool,
	dial func(ctx context.Context, network, addr string) (net.Conn, error)) *utlsTransport {
	t := &utlsTransport{
		id:        id,
		removeSNI: removeSNI,
		rootCAs:   roots,
		dial:      dial,
		proto:     make(map[string]string),
		pending:   make(map[string][]*utls.UConn),
	}
	t.tcp = newWarmPool(func(ctx context.Context, addr string) (net.Conn, error) { return dial(ctx, "tcp", addr) })
	t.tls = newWarmPool(func(ctx context.Context, addr string) (net.Conn, error) { return t.handshake(ctx, "tcp", addr) })
	t.h1 = &http.Transport{
		Proxy:                 nil,
		DialContext:           t.tcp.dialer(dial),
		DialTLSContext:        t.dialTLSForTransport,
		ResponseHeaderTimeout: responseHeaderTimeout,
		IdleConnTimeout:       idleConnTimeout,
		MaxIdleConns:          4,
	}
	t.h2 = &http2.Transport{
		DialTLSContext: func(ctx context.Context, network, addr string, _ *tls.Config) (net.Conn, error) {
			return t.dialTLSForTransport(ctx, network, addr)
		},
		ReadIdleTimeout: 30 * time.Second,
	}
	return t
}

// RoundTrip implements http.RoundTripper.
func (t *utlsTransport) RoundTrip(req *http.Request) (*http.Response, error) {
	if req.URL.Scheme != "https" {
		return t.h1.RoundTrip(req)
	}
	addr := hostPort(req.URL.Host, "443")
	t.mu.Lock()
	proto, known := t.proto[addr]
	t.mu.Unlock()
	if !known {
		// Learn the protocol with a first handshake, kept for the
		// transport that will use it.
		conn, err := t.takeOrHandshake(req.Context(), addr)
		if err != nil {
			return nil, err
		}
		proto = conn.ConnectionState().NegotiatedProtocol
		t.mu.Lock()
		t.proto[addr] = proto
		t.pending[addr] = append(t.pending[addr], conn)
		t.mu.Unlock()
	}
	if proto == http2.NextProtoTLS {
		return t.h2.RoundTrip(req)
	}
	return t.h1.RoundTrip(req)
}

func (t *utlsTransport) warm(scheme, addr string) {
	if scheme == "https" {
		t.tls.warm(addr)
	} else {
		t.tcp.warm(addr)
	}
}

func (t *utlsTransport) answeredBy(addr string) {
	t.tls.answeredBy(addr)
	t.tcp.answeredBy(addr)
}

// takeOrHandshake returns the uTLS connection opened ahead to addr, or a
// new one.
func (t *utlsTransport) takeOrHandshake(ctx context.Context, addr string) (*utls.UConn, error) {
	if c, ok := t.tls.take(ctx, addr); ok {
		return c.(*utls.UConn), nil
	}
	return t.handshake(ctx, "tcp", addr)
}

// CloseIdleConnections closes the idle connections of both transports and
// any handshaken connection no transport has taken.
func (t *utlsTransport) CloseIdleConnections() {
	t.h1.CloseIdleConnections()
	t.h2.CloseIdleConnections()
	t.tcp.closeIdle()
	t.tls.closeIdle()
	t.mu.Lock()
	pending := t.pending
	t.pending = make(map[string][]*utls.UConn)
	t.mu.Unlock()
	for _, conns := range pending {
		for _, c := range conns {
			_ = c.Close()
		}
	}
}

// dialTLSForTransport gives a transport a pending connection to addr if
// there is one, else one opened ahead, else a new uTLS connection.
func (t *utlsTransport) dialTLSForTransport(ctx context.Context, _, addr string) (net.Conn, error) {
	t.mu.Lock()
	if conns := t.pending[addr]; len(conns) > 0 {
		c := conns[len(conns)-1]
		t.pending[addr] = conns[:len(conns)-1]
		t.mu.Unlock()
		return c, nil
	}
	t.mu.Unlock()
	return t.takeOrHandshake(ctx, addr)
}

// randomizedAttempts is how many handshakes a randomized ClientHello gets.
// uTLS v1.8.2 sometimes builds a randomized hello it cannot complete (for
// example a HelloRetryRequest for a group it advertised without a key share
// fails with "CurvePreferences includes unsupported curve"); a fresh
// randomization usually works.
const randomizedAttempts = 3

// handshake dials addr and runs a uTLS handshake imitating t.id, checking
// the server's certificate against the host name. Randomized hellos are
// retried with a new randomization when the handshake itself fails.
func (t *utlsTransport) handshake(ctx context.Context, network, addr string) (*utls.UConn, error) {
	attempts := 1
	if t.id == utls.HelloRandomizedALPN || t.id == utls.HelloRandomizedNoALPN {
		attempts = randomizedAttempts
	}
	var err error
	for range attempts {
		var conn *utls.UConn
		conn, err = t.handshakeOnce(ctx, network, addr)
		if err == nil {
			return conn, nil
		}
		var ne net.Error
		if ctx.Err() != nil || errors.As(err, &ne) {
			break // a network or deadline error: another hello will not help
		}
	}
	return nil, err
}

func (t *utlsTransport) handshakeOnce(ctx context.Context, network, addr string) (*utls.UConn, error) {
	host, _, err := net.SplitHostPort(addr)
	if err != nil {
		host = addr
	}
	ctx, cancel := context.WithTimeout(ctx, tlsHandshakeTimeout)
	defer cancel()
	raw, err := t.dial(ctx, network, addr)
	if err != nil {
		return nil, err
	}
	config := &utls.Config{ServerName: host, RootCAs: t.rootCAs, MinVersion: utls.VersionTLS12}
	if t.removeSNI {
		// Send no SNI but still verify the certificate against host.
		config.ServerName = ""
		config.InsecureSkipVerify = true
		config.VerifyConnection = func(cs utls.ConnectionState) error {
			return verifyChain(cs.PeerCertificates, host, t.rootCAs)
		}
	}
	conn := utls.UClient(raw, config, t.id)
	if err := conn.HandshakeContext(ctx); err != nil {
		_ = raw.Close()
		return nil, fmt.Errorf("utls handshake: %w", err)
	}
	return conn, nil
}

// verifyChain checks a certificate chain against host as crypto/tls would.
func verifyChain(certs []*x509.Certificate, host string, roots *x509.CertPool) error {
	if len(certs) == 0 {
		return fmt.Errorf("no server certificate")
	}
	inter := x509.NewCertPool()
	for _, c := range certs[1:] {
		inter.AddCert(c)
	}
	_, err := certs[0].Verify(x509.VerifyOptions{DNSName: host, Roots: roots, Intermediates: inter})
	return err
}

// hostPort adds defaultPort to host if it has no port.
func hostPort(host, defaultPort string) string {
	if _, _, err := net.SplitHostPort(host); err == nil {
		return host
	}
	return net.JoinHostPort(strings.Trim(host, "[]"), defaultPort)
}
