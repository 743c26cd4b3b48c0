package main

import (
	"flag"
	"fmt"
	"strings"

	"github.com/flurrypt/flurry/client"
	"github.com/flurrypt/flurry/client/sqs"
	"github.com/flurrypt/flurry/common/covertdtls"
	"github.com/flurrypt/flurry/internal/commalist"
	"github.com/flurrypt/flurry/internal/networkpreset"
	"github.com/flurrypt/flurry/internal/pionruntime"
)

// torBridgeLines are Tor's Snowflake bridge lines, shown when no broker is
// configured. They are only examples: nothing defaults to them.
var torBridgeLines = strings.Join(networkpreset.Tor().BridgeLines(), "\n  ")

// options are the flags beyond client.Config.
type options struct {
	front, fronts, covertDTLS, covertFingerprint string
	logFile, socks                               string
	logToStateDir, unsafeLogging, showVersion    bool
}

func parseFlags(fs *flag.FlagSet, args []string) (client.Config, *options, error) {
	var c client.Config
	var o options
	fs.Usage = func() {
		fmt.Fprintf(fs.Output(), `Usage: %s [flags]

flurry-client reaches a Snowflake or Flurry bridge through volunteer WebRTC
proxies found by a broker, with Snowflake v2.14.1's protocol. No flag
defaults to a public host: set -url (or url= in the bridge line).
See docs/client.md.

Under tor (TOR_PT_* environment) it is the managed pluggable transport
"snowflake"; the bridge line's arguments (url=, fronts=, ice=, max=, ...)
override the flags below. torrc:

  UseBridges 1
  ClientTransportPlugin snowflake exec /usr/bin/flurry-client -log /var/log/tor/flurry-client.log
  %s

With -socks ADDR it is a plain SOCKS5 proxy; the destination named in the
SOCKS CONNECT request is NOT used (as with Snowflake): every connection
goes to the relay's target.

  flurry-client -url https://broker.example/ -socks 127.0.0.1:1080

Behind a firewall that only lets a SOCKS5 proxy with UDP ASSOCIATE out,
all of the client's own traffic goes through it: torrc's Socks5Proxy under
tor (PROXY DONE once a test association worked), else -socks5-proxy.

Environment: GOMAXPROCS (default %d: a download's bursts need two); GOGC (default 100,
memory first; 400 takes about a sixth less CPU per MB for 10-20 MiB more).

Flags:
`, fs.Name(), torBridgeLines, pionruntime.ClientMaxProcs)
		fs.PrintDefaults()
	}
	fs.StringVar(&c.BrokerURL, "url", "", "URL of the broker (the bridge line's url=)")
	fs.StringVar(&o.front, "front", "", "front domain(s), comma-separated (legacy; see -fronts)")
	fs.StringVar(&o.fronts, "fronts", "", "comma-separated front domains: each broker request goes to a random one, with the broker's host in the Host header")
	fs.Func("ice", "comma-separated ICE servers: stun:host:port, turn:user:pass@host:port[?transport=tcp], turns:user:pass@host:port (credentials percent-encoded); empty means none",
		func(s string) error { c.ICEServers = commalist.Split(s); return nil })
	fs.IntVar(&c.Max, "max", client.DefaultMax, "number of proxies to keep connected (2 or more: all carry traffic at once)")
	fs.BoolVar(&c.Standby, "standby", false, "keep one more proxy connected, idle, to take over at once when one in use is lost (with Flurry's relay; costs a volunteer's proxy)")
	fs.StringVar(&c.AMPCacheURL, "ampcache", "", "AMP cache URL for rendezvous (with -url)")
	fs.StringVar(&c.SQSQueueURL, "sqsqueue", "", "SQS queue URL for rendezvous, https://sqs.<region>.amazonaws.com/<account>/<queue> (instead of -url)")
	fs.StringVar(&c.SQSCredentials, "sqscreds", "", "base64 credentials for -sqsqueue (see common/sqscreds)")
	fs.StringVar(&o.covertDTLS, "covertdtls-config", "mimic", "covert DTLS mode: the shape of the client's DTLS and ICE checks: mimic (Chromium's, which also lets the client select a candidate pair with a Flurry proxy without waiting for its nomination: about 200 ms sooner connected), randomizemimic (a browser's hello picked per connection), randomize, disable (pion's own, Snowflake's client's default); see docs/fingerprinting.md")
	fs.StringVar(&o.covertFingerprint, "covertdtls-fingerprint", "", "with -covertdtls-config other than disable: replay this raw ClientHello (hex, as Snowflake's)")
	fs.StringVar(&o.logFile, "log", "", "append logs to this file (default: no logs under tor, stderr with -socks)")
	fs.BoolVar(&o.logToStateDir, "log-to-state-dir", false, "resolve -log relative to tor's pluggable-transport state directory")
	fs.BoolVar(&o.logToStateDir, "logToStateDir", false, "deprecated alias of -log-to-state-dir")
	fs.BoolVar(&c.KeepLocalAddresses, "keep-local-addresses", false, "offer local (private, loopback) addresses as ICE candidates")
	fs.BoolVar(&c.KeepLocalAddresses, "keepLocalAddresses", false, "deprecated alias of -keep-local-addresses")
	fs.BoolVar(&o.unsafeLogging, "unsafe-logging", false, "do not scrub IP addresses from logs")
	fs.BoolVar(&o.showVersion, "version", false, "print the version and exit")
	fs.StringVar(&o.socks, "socks", "", "run a plain SOCKS5 proxy on this address instead of a tor pluggable transport (e.g. 127.0.0.1:1080)")
	fs.StringVar(&c.SOCKS5Proxy, "socks5-proxy", "", "send all of the client's own traffic (broker, STUN, WebRTC) through this SOCKS5 proxy, socks5://[user:pass@]host:port; it must support UDP ASSOCIATE (under tor, torrc's Socks5Proxy takes precedence)")
	fs.BoolVar(&c.LoopbackOnly, "loopback-only", false, "use only loopback addresses for WebRTC, no STUN (tests and local demos)")
	if err := fs.Parse(args); err != nil {
		return c, nil, err
	}
	if fs.NArg() > 0 {
		return c, nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	c.NewSQSRendezvous = sqs.New // also for sqsqueue= in bridge lines
	c.Fronts = commalist.Split(o.fronts)
	if len(c.Fronts) == 0 {
		c.Fronts = commalist.Split(o.front)
	}
	var err error
	if c.CovertDTLS, err = covertdtls.Parse(o.covertDTLS, o.covertFingerprint); err != nil {
		return c, nil, fmt.Errorf("-covertdtls-config/-covertdtls-fingerprint: %w", err)
	}
	return c, &o, nil
}
