package main

import (
	"flag"
	"fmt"
	"os"
	"path/filepath"
	"runtime"
	"time"

	"github.com/flurrypt/flurry/internal/clientaddr"
	"github.com/flurrypt/flurry/internal/idlemem"
	"github.com/flurrypt/flurry/internal/servercmd"
	"github.com/flurrypt/flurry/internal/torpt"
	"github.com/flurrypt/flurry/relay"
)

// quietInterval is how long the relay must go without a garbage
// collection before it returns its idle memory to the operating system.
const quietInterval = 15 * time.Second

// options are the flags beyond relay.Config.
type options struct {
	tls                                  servercmd.TLSFlags
	relayKeyFile, orportSrcAddr, logFile string
	unsafeLogging, showVersion           bool
}

func parseFlags(fs *flag.FlagSet, args []string) (relay.Config, *options, error) {
	var c relay.Config
	var o options
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: %s [flags]

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
`, fs.Name())
		fs.PrintDefaults()
		fmt.Fprint(fs.Output(), idlemem.Help(quietInterval, 0))
	}
	fs.StringVar(&c.ListenAddr, "addr", relay.DefaultListenAddr, "standalone mode: address to listen on for WebSocket connections")
	fs.StringVar(&c.ForwardAddr, "forward", "", "standalone mode: TCP address every client stream is forwarded to (required outside managed mode unless -backend is given)")
	fs.Func("backend", "standalone mode, repeatable: a target to balance streams over (least open streams, failed ones retried with back-off):\n"+
		"tcp:HOST:PORT[,name=NAME] (tor's ORPort or any TCP service) or\n"+
		"extorport:HOST:PORT,cookie=FILE[,name=NAME] (a tor ExtORPort and that tor's extended_orport_auth_cookie)",
		func(s string) error {
			b, err := relay.ParseBackend(s)
			if err == nil {
				c.Backends = append(c.Backends, b)
			}
			return err
		})
	fs.StringVar(&c.Path, "path", "", "accept WebSockets only on this URL path (default: any path, as Snowflake)")
	o.tls.Register(fs, defaultACMECache())
	fs.Var(fs.Lookup("acme-cert-cache").Value, "acme-cache", "deprecated alias of -acme-cert-cache")
	fs.StringVar(&c.MetricsAddr, "metrics-addr", "", "address to serve Prometheus metrics on at /metrics (default: off)")
	fs.IntVar(&c.NumTurbotunnel, "num-turbotunnel", runtime.NumCPU(), "number of KCP state machines (tor's ServerTransportOptions num-turbotunnel overrides it)")
	fs.IntVar(&c.MaxConns, "max-conns", relay.DefaultMaxConns, "maximum concurrent WebSocket connections (negative: no limit)")
	fs.DurationVar(&c.HandshakeTimeout, "handshake-timeout", relay.DefaultHandshakeTimeout, "time allowed for the TLS handshake and the HTTP upgrade request")
	fs.DurationVar(&c.TokenTimeout, "token-timeout", relay.DefaultTokenTimeout, "time allowed for the token and ClientID after the upgrade")
	fs.Func("trusted-proxies", "comma-separated CIDRs or addresses of reverse proxies/CDNs whose Forwarded and X-Forwarded-For headers are believed (for the per-address limits); from other peers the headers are ignored",
		func(s string) (err error) {
			c.TrustedProxies, err = clientaddr.ParsePrefixes("trusted-proxies", s)
			return err
		})
	fs.IntVar(&c.MaxCarriersPerAddr, "max-carriers-per-addr", relay.DefaultMaxCarriersPerAddr, "maximum concurrent connections from one proxy address (IPv6: one /64); beyond it 503 or a close (negative: no limit)")
	fs.Float64Var(&c.NewSessionRate, "new-session-rate", relay.DefaultNewSessionRate, "new KCP sessions per second one proxy address may start, sustained (negative: no limit)")
	fs.IntVar(&c.NewSessionBurst, "new-session-burst", relay.DefaultNewSessionBurst, "new KCP sessions one proxy address may start at once")
	fs.IntVar(&c.MaxSessions, "max-sessions", relay.DefaultMaxSessions, "maximum live KCP sessions (negative: no limit)")
	fs.DurationVar(&c.SessionOpenTimeout, "session-open-timeout", relay.DefaultSessionOpenTimeout, "close a KCP session that has opened no stream and has no carrier after this long (with a carrier, after 6 times this)")
	fs.StringVar(&o.orportSrcAddr, "orport-srcaddr", "", "managed mode: IP address or CIDR prefix to take ORPort source addresses from (tor's ServerTransportOptions orport-srcaddr overrides it)")
	fs.StringVar(&o.relayKeyFile, "relay-key-file", defaultRelayKeyFile(), "file holding the relay's X25519 key, created on first start; its public key goes in bridge lines as relay-key= (sealed carriers: no proxy can inject into or steal a session). Empty: Snowflake carriers only")
	fs.IntVar(&c.MaxCarriersPerClient, "max-carriers-per-client", relay.DefaultMaxCarriersPerClient, "maximum concurrent carriers of one Snowflake (unsealed) ClientID (negative: no limit)")
	fs.StringVar(&o.logFile, "log", "", "append logs to this file (default: stderr)")
	fs.BoolVar(&o.unsafeLogging, "unsafe-logging", false, "do not scrub IP addresses from logs")
	fs.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	if err := fs.Parse(args); err != nil {
		return c, nil, err
	}
	if fs.NArg() > 0 {
		return c, nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	return c, &o, nil
}

// defaultACMECache is where the relay keeps its ACME certificates unless
// -acme-cert-cache says: under tor, in the transport's state directory (as
// Snowflake's server), else in the user's cache directory.
func defaultACMECache() string {
	if dir := torpt.StateDir(); dir != "" {
		return filepath.Join(dir, "snowflake-certificate-cache")
	}
	if base, err := os.UserCacheDir(); err == nil {
		return filepath.Join(base, "flurry-relay", "acme")
	}
	return ""
}

// defaultRelayKeyFile is where the relay keeps its sealing key: under tor,
// in the transport's state directory; standalone, nowhere (sealed carriers
// off unless -relay-key-file is given).
func defaultRelayKeyFile() string {
	if dir := torpt.StateDir(); dir != "" {
		return filepath.Join(dir, "flurry-relay-key")
	}
	return ""
}
