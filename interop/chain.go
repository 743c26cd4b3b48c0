package interop

import (
	"bufio"
	"cmp"
	"context"
	"encoding/binary"
	"encoding/hex"
	"errors"
	"fmt"
	"io/fs"
	"net/netip"
	"net/url"
	"os"
	"path"
	"path/filepath"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"time"

	"github.com/flurrypt/flurry/common/sqscreds"
	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/childproc"
	"github.com/flurrypt/flurry/loadgen/procstat"
	"github.com/flurrypt/flurry/messages"
	"github.com/flurrypt/flurry/netlab"
)

// Impl names an implementation of a role.
type Impl uint8

// The two implementations.
const (
	Flurry Impl = iota
	Snowflake
)

func (i Impl) String() string {
	if i == Snowflake {
		return "snowflake"
	}
	return "flurry"
}

// Roles says which implementation plays each role of a chain.
type Roles struct {
	Broker, Proxy, Client, Relay Impl
}

// String names the chain for test names and the matrix, e.g.
// "broker=flurry,proxy=snowflake,client=snowflake,relay=snowflake".
func (r Roles) String() string {
	return fmt.Sprintf("broker=%s,proxy=%s,client=%s,relay=%s", r.Broker, r.Proxy, r.Client, r.Relay)
}

// Matrix returns the chains every interop run checks: all-Flurry,
// all-Snowflake, and each role of one implementation swapped into a chain
// of the other (ten chains).
func Matrix() []Roles {
	out := []Roles{{}, {Snowflake, Snowflake, Snowflake, Snowflake}}
	for _, base := range []Impl{Snowflake, Flurry} {
		other := Snowflake - base
		b := Roles{base, base, base, base}
		swapped := []Roles{b, b, b, b}
		swapped[0].Broker = other
		swapped[1].Proxy = other
		swapped[2].Client = other
		swapped[3].Relay = other
		out = append(out, swapped...)
	}
	return out
}

// ChainConfig describes a chain: which binaries play which role, where its
// files go, and the size of the file it serves.
type ChainConfig struct {
	Roles     Roles
	Flurry    demo.Binaries
	Snowflake SnowflakeBinaries
	// Dir receives logs, the bridge list and the PT state directories.
	Dir string
	// FileSize is the target file's size; 0 means 20 MiB.
	FileSize int64
	// STUN is a STUN server URL for proxies and client (a loopback test
	// server); empty means none is given.
	STUN string
	// Covert is the -covertdtls-config given to the client and to every
	// proxy; empty means the flag is not given (each binary's default).
	Covert string
	// ProxyCovert, if set, gives the -covertdtls-config of the first
	// len(ProxyCovert) proxies, in the order they start, instead of
	// Covert ("" leaves the flag out); later proxies take Covert.
	ProxyCovert []string
	// Front, if set, is a front (an address, port 80) through which the
	// client reaches the broker by domain fronting: its -url names the
	// broker as FrontedBrokerHost and its -fronts is Front. The caller runs
	// the CDN at Front that forwards those requests to BrokerURL.
	Front string
	// AMPCache, if set with Front, is the AMP cache URL the client gives
	// -ampcache: its rendezvous then goes through the cache (the CDN at
	// Front stands in for it too).
	AMPCache string
	// ClientICE, if set, is the client's -ice instead of STUN.
	ClientICE string
	// SQS, if set, makes the client rendezvous through Amazon SQS instead
	// of the broker's URL; nil is direct HTTP rendezvous.
	SQS *ChainSQS
	// ClientMax is the client's -max, the proxies it keeps connected at
	// once; 0 means 1, as in Snowflake's bridge lines.
	ClientMax int
	// ClientStandby gives Flurry's client -standby: one more proxy
	// connected, idle until it takes over.
	ClientStandby bool
	// ProxyCapacity is every proxy's -capacity, the clients it serves at
	// once; 0 leaves the flag out (unlimited).
	ProxyCapacity int
	// NoProxy starts no proxy process: the caller brings its own (a
	// browser proxy, which polls the broker from a page).
	NoProxy bool
	// RelayTLS, if set, makes the relay serve wss:// with this certificate
	// instead of ws:// (Flurry's relay only: Snowflake's server gets its
	// certificates by ACME). RelayURL and the bridge list name wss://.
	RelayTLS *RelayTLS
	// NATProbeAllInterfaces makes the NAT probe gather candidates on every
	// interface instead of loopback only: a browser gathers none on
	// loopback, so it reaches the probe at another address.
	NATProbeAllInterfaces bool
	// Lab, if set, puts the chain across a network lab: the client on its
	// client side, every other role (and the target and STUN server the
	// caller starts there) on its outside, so that all the client sends
	// and receives crosses the lab's middlebox. Nil keeps the whole chain
	// on 127.0.0.1.
	Lab *netlab.Lab
}

// ChainSQS is a chain's SQS rendezvous: the broker reads the queue
// (-broker-sqs-name and -broker-sqs-region, from QueueURL) with the key in
// Creds (through AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY), and the
// client sends its poll requests there (-sqsqueue QueueURL, -sqscreds
// Creds). Both use AWS's endpoint for the queue's region: the caller runs
// the SQS-compatible server that endpoint's name resolves to, on both
// sides of a lab, with a certificate signed by the CA in CAFile.
type ChainSQS struct {
	// QueueURL is the broker's queue,
	// https://sqs.<region>.amazonaws.com/<account>/<queue>.
	QueueURL string
	// Creds is the AWS key in sqscreds form (package common/sqscreds).
	Creds string
	// CAFile, if set, is a PEM file of the CA the broker and client
	// trust (SSL_CERT_FILE and AWS_CA_BUNDLE) instead of the system's.
	CAFile string
}

// RelayTLS is a relay's certificate and key (PEM files).
type RelayTLS struct {
	CertFile, KeyFile string
}

// FrontedBrokerHost is the broker's name in a fronted client's -url: the
// Host header a CDN stand-in routes by.
const FrontedBrokerHost = "broker.flurry.example"

// Chain is a running chain of processes on 127.0.0.1: a target HTTP
// server, the relay as a tor pluggable-transport server whose ORPort is the
// target, a NAT probe (flurry-natprobe, so that proxies learn they are
// unrestricted), the broker, proxies and the client as a tor
// pluggable-transport client whose SOCKS port the test downloads through.
// Every role gets Snowflake's command line whichever binary plays it.
type Chain struct {
	cfg ChainConfig

	Target                  *demo.Target
	Relay, Broker, NATProbe *childproc.Process
	Client                  *childproc.Process
	Proxies                 []*childproc.Process
	BrokerURL, RelayURL     string
	SOCKSAddr, NATProbeURL  string
	nextProxy               int
}

// ErrChain reports a chain that could not start.
var ErrChain = errors.New("interop: chain")

// StartChain starts every part of the chain with one proxy and waits until
// each is ready. On error whatever started is stopped.
func StartChain(ctx context.Context, cfg ChainConfig) (*Chain, error) {
	if cfg.FileSize == 0 {
		cfg.FileSize = 20 << 20
	}
	if err := os.MkdirAll(cfg.Dir, 0o755); err != nil {
		return nil, err
	}
	c := &Chain{cfg: cfg}
	if err := c.start(ctx); err != nil {
		c.Close()
		return nil, err
	}
	return c, nil
}

func (c *Chain) bin(role string) string {
	r, f, s := c.cfg.Roles, c.cfg.Flurry, c.cfg.Snowflake
	pick := func(i Impl, fl, sf string) string {
		if i == Snowflake {
			return sf
		}
		return fl
	}
	switch role {
	case "broker":
		return pick(r.Broker, f.Broker, s.Broker)
	case "proxy":
		return pick(r.Proxy, f.Proxy, s.Proxy)
	case "client":
		return pick(r.Client, f.Client, s.Client)
	}
	return pick(r.Relay, f.Relay, s.Server)
}

func (c *Chain) logPath(name string) string { return filepath.Join(c.cfg.Dir, name+".log") }

// host is the address the broker and the relay listen on: loopback, or
// the lab's outside.
func (c *Chain) host() string {
	if c.cfg.Lab == nil {
		return "127.0.0.1"
	}
	return c.cfg.Lab.OutsideAddr(0).String()
}

// start starts pc on a side of the lab (anywhere without one): its command
// runs in that side's namespace and so does its readiness probe.
func (c *Chain) startOn(ctx context.Context, side netlab.Side, pc childproc.Config) (*childproc.Process, error) {
	if lab := c.cfg.Lab; lab != nil {
		cmd := lab.Command(side, pc.Path, pc.Args...)
		pc.Path, pc.Args = cmd.Path, cmd.Args[1:]
		if ready := pc.Ready; ready != nil {
			pc.Ready = func(ctx context.Context) error {
				return lab.Do(side, func() error { return ready(ctx) })
			}
		}
	}
	pc.Supervisor = "demo"
	return childproc.Start(ctx, pc)
}

// InClient runs fn where the client runs (the lab's client side, or here):
// a connection to its SOCKS port must be dialled there.
func (c *Chain) InClient(fn func() error) error {
	if c.cfg.Lab == nil {
		return fn()
	}
	return c.cfg.Lab.Do(netlab.Client, fn)
}

func (c *Chain) start(ctx context.Context) error {
	addrs, err := demo.FreeAddrs(3)
	if err != nil {
		return err
	}
	// A port free here is free in a lab's new namespace too.
	onHost := func(addr string) string {
		_, port, _ := strings.Cut(addr, ":")
		return c.host() + ":" + port
	}
	relayAddr, brokerAddr, probeAddr := onHost(addrs[0]), onHost(addrs[1]), addrs[2]
	startTarget := func() (err error) {
		c.Target, err = demo.StartTarget(c.cfg.FileSize)
		return err
	}
	if c.cfg.Lab != nil {
		err = c.cfg.Lab.Do(netlab.Outside, startTarget)
	} else {
		err = startTarget()
	}
	if err != nil {
		return err
	}

	// The relay, as tor would run it: a managed server transport.
	c.RelayURL = "ws://" + relayAddr + "/"
	relayArgs := []string{"-disable-tls", "-unsafe-logging"}
	if t := c.cfg.RelayTLS; t != nil {
		if c.cfg.Roles.Relay != Flurry {
			return fmt.Errorf("%w: only Flurry's relay takes a certificate file", ErrChain)
		}
		c.RelayURL = "wss://" + relayAddr + "/"
		relayArgs = []string{"-cert", t.CertFile, "-key", t.KeyFile, "-unsafe-logging"}
	}
	relayState := filepath.Join(c.cfg.Dir, "relay-state")
	if err := os.MkdirAll(relayState, 0o700); err != nil {
		return err
	}
	c.Relay, err = c.startOn(ctx, netlab.Outside, childproc.Config{
		Name: "relay", Path: c.bin("relay"), LogPath: c.logPath("relay"),
		Args: relayArgs,
		Env: []string{
			"TOR_PT_MANAGED_TRANSPORT_VER=1",
			"TOR_PT_SERVER_TRANSPORTS=snowflake",
			"TOR_PT_SERVER_BINDADDR=snowflake-" + relayAddr,
			"TOR_PT_ORPORT=" + c.Target.Addr,
			"TOR_PT_STATE_LOCATION=" + relayState,
		},
		CleanEnv: true,
		Ready:    demo.TCPReady(relayAddr),
	})
	if err != nil {
		return err
	}

	c.NATProbeURL = "http://" + probeAddr + "/probe"
	probeArgs := []string{"-disable-tls", "-addr", probeAddr, "-loopback-only", "-unsafe-logging"}
	if c.cfg.NATProbeAllInterfaces {
		probeArgs[3] = "-keep-local-addresses"
	}
	c.NATProbe, err = c.startOn(ctx, netlab.Outside, childproc.Config{
		Name: "natprobe", Path: c.cfg.Flurry.NATProbe, LogPath: c.logPath("natprobe"),
		Args:  probeArgs,
		Ready: demo.TCPReady(probeAddr),
	})
	if err != nil {
		return err
	}

	bridges := filepath.Join(c.cfg.Dir, "bridge-list.json")
	if err := demo.WriteBridgeList(bridges, messages.DefaultBridgeFingerprint, c.RelayURL); err != nil {
		return err
	}
	pollPath := filepath.Join(c.cfg.Dir, "poll-interval.json")
	if err := os.WriteFile(pollPath, []byte(`{"unrestricted_poll_interval": 2000, "restricted_poll_interval": 2000}`+"\n"), 0o644); err != nil {
		return err
	}
	c.BrokerURL = "http://" + brokerAddr + "/"
	brokerReady := demo.HTTPReady(c.BrokerURL+"robots.txt", 200)
	if c.cfg.Lab != nil {
		// An HTTP client dials from goroutines of its own, which the
		// lab's Do does not move into the outside.
		brokerReady = demo.TCPReady(brokerAddr)
	}
	brokerArgs := []string{"-addr", brokerAddr, "-disable-tls", "-bridge-list-path", bridges,
		"-allowed-relay-pattern", c.relayPattern(), "-poll-interval-filepath", pollPath,
		"-disable-geoip", "-unsafe-logging"}
	var brokerEnv []string
	if q := c.cfg.SQS; q != nil {
		name, region, err := q.queue()
		if err != nil {
			return err
		}
		creds, err := sqscreds.Decode(q.Creds)
		if err != nil {
			return fmt.Errorf("%w: sqs: %w", ErrChain, err)
		}
		brokerArgs = append(brokerArgs, "-broker-sqs-name", name, "-broker-sqs-region", region)
		// The AWS SDK's default credentials: the environment's.
		brokerEnv = append(q.env(), "AWS_ACCESS_KEY_ID="+creds.AccessKeyID, "AWS_SECRET_ACCESS_KEY="+creds.SecretKey)
	}
	c.Broker, err = c.startOn(ctx, netlab.Outside, childproc.Config{
		Name: "broker", Path: c.bin("broker"), LogPath: c.logPath("broker"),
		Args:  brokerArgs,
		Env:   brokerEnv,
		Dir:   c.cfg.Dir,
		Ready: brokerReady,
	})
	if err != nil {
		return err
	}

	if !c.cfg.NoProxy {
		if _, err := c.StartProxy(ctx); err != nil {
			return err
		}
	}

	clientState := filepath.Join(c.cfg.Dir, "client-state")
	if err := os.MkdirAll(clientState, 0o700); err != nil {
		return err
	}
	clientEnv := []string{
		"TOR_PT_MANAGED_TRANSPORT_VER=1",
		"TOR_PT_CLIENT_TRANSPORTS=snowflake",
		"TOR_PT_STATE_LOCATION=" + clientState,
	}
	// The rendezvous: SQS (which refuses -url beside it), or the broker's
	// URL, named by its fronted host when a front carries it.
	var args []string
	switch q := c.cfg.SQS; {
	case q != nil:
		args = []string{"-sqsqueue", q.QueueURL, "-sqscreds", q.Creds}
		clientEnv = append(clientEnv, q.env()...)
	case c.cfg.Front != "":
		args = []string{"-url", "http://" + FrontedBrokerHost + "/", "-fronts", c.cfg.Front}
	default:
		args = []string{"-url", c.BrokerURL}
	}
	if c.cfg.AMPCache != "" {
		args = append(args, "-ampcache", c.cfg.AMPCache)
	}
	args = append(args, "-max", strconv.Itoa(max(c.cfg.ClientMax, 1)), "-keep-local-addresses", "-unsafe-logging", "-log", c.logPath("client-pt"))
	if c.cfg.ClientStandby {
		args = append(args, "-standby")
	}
	switch {
	case c.cfg.ClientICE != "":
		args = append(args, "-ice", c.cfg.ClientICE)
	case c.cfg.STUN != "":
		args = append(args, "-ice", c.cfg.STUN)
	}
	if c.cfg.Covert != "" {
		args = append(args, "-covertdtls-config", c.cfg.Covert)
	}
	clientLog := c.logPath("client")
	c.Client, err = c.startOn(ctx, netlab.Client, childproc.Config{
		Name: "client", Path: c.bin("client"), LogPath: clientLog, Args: args,
		Env:      clientEnv,
		CleanEnv: true,
		Ready: func(context.Context) error {
			addr, err := cmethodAddr(clientLog)
			if err == nil {
				c.SOCKSAddr = addr
			}
			return err
		},
	})
	return err
}

// sqsQueueHost is an SQS queue URL's host; its group is the region.
var sqsQueueHost = regexp.MustCompile(`^sqs\.([\w-]+)\.amazonaws\.com$`)

// queue returns the name and region of q's queue.
func (q *ChainSQS) queue() (name, region string, err error) {
	u, err := url.Parse(q.QueueURL)
	if err != nil {
		return "", "", fmt.Errorf("%w: sqs: %w", ErrChain, err)
	}
	m := sqsQueueHost.FindStringSubmatch(u.Hostname())
	name = path.Base(u.Path)
	if m == nil || u.Scheme != "https" || name == "/" || name == "." {
		return "", "", fmt.Errorf("%w: sqs: want https://sqs.<region>.amazonaws.com/<account>/<queue>, not %s", ErrChain, q.QueueURL)
	}
	return name, m[1], nil
}

// env is the environment the broker and the client need for q: no AWS
// configuration but what the chain gives (the AWS SDK reads files under
// $HOME and asks the instance metadata service otherwise), and the CA.
func (q *ChainSQS) env() []string {
	env := []string{"AWS_EC2_METADATA_DISABLED=true", "AWS_CONFIG_FILE=" + os.DevNull, "AWS_SHARED_CREDENTIALS_FILE=" + os.DevNull}
	if q.CAFile != "" {
		env = append(env, "SSL_CERT_FILE="+q.CAFile, "AWS_CA_BUNDLE="+q.CAFile)
	}
	return env
}

// relayPattern is the relay host pattern the broker and proxies accept.
func (c *Chain) relayPattern() string {
	return "^" + c.host() + "$"
}

// cmethodAddr finds the SOCKS address a PT client announced on stdout
// ("CMETHOD snowflake socks5 127.0.0.1:PORT").
func cmethodAddr(logPath string) (string, error) {
	f, err := os.Open(logPath)
	if err != nil {
		return "", err
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	for sc.Scan() {
		fields := strings.Fields(sc.Text())
		if len(fields) == 4 && fields[0] == "CMETHOD" && fields[1] == "snowflake" && fields[2] == "socks5" {
			return fields[3], nil
		}
		if len(fields) > 0 && fields[0] == "CMETHOD-ERROR" {
			return "", fmt.Errorf("%w: client: %s", ErrChain, sc.Text())
		}
	}
	return "", fmt.Errorf("%w: no CMETHOD line yet", ErrChain)
}

// StartProxy starts one more proxy (Snowflake's command line) and waits
// until it has polled the broker once, judged by its log.
func (c *Chain) StartProxy(ctx context.Context) (*childproc.Process, error) {
	c.nextProxy++
	name := fmt.Sprintf("proxy-%d", c.nextProxy)
	args := []string{"-broker", c.BrokerURL, "-relay", c.RelayURL,
		"-allow-non-tls-relay", "-allow-proxying-to-private-addresses",
		"-allowed-relay-hostname-pattern", c.relayPattern(), "-keep-local-addresses",
		"-nat-probe-server", c.NATProbeURL, "-poll-interval", "2s",
		"-summary-interval", "1h", "-unsafe-logging", "-verbose"}
	if c.cfg.STUN != "" {
		args = append(args, "-stun", c.cfg.STUN)
	}
	if c.cfg.ProxyCapacity > 0 {
		args = append(args, "-capacity", strconv.Itoa(c.cfg.ProxyCapacity))
	}
	covert := c.cfg.Covert
	if i := c.nextProxy - 1; i < len(c.cfg.ProxyCovert) {
		covert = c.cfg.ProxyCovert[i]
	}
	if covert != "" {
		args = append(args, "-covertdtls-config", covert)
	}
	p, err := c.startOn(ctx, netlab.Outside, childproc.Config{
		Name: name, Path: c.bin("proxy"), LogPath: c.logPath(name), Args: args,
		ReadyTimeout: time.Minute,
	})
	if err != nil {
		return nil, err
	}
	c.Proxies = append(c.Proxies, p)
	return p, nil
}

// ServingProxies returns the running proxies that relay a client now:
// those with a TCP connection to the relay established (a proxy dials
// the relay only for a client's DataChannel), the busiest first (the
// most read calls: a standby proxy makes few). Linux only.
func (c *Chain) ServingProxies() ([]*childproc.Process, error) {
	relay, err := url.Parse(c.RelayURL)
	if err != nil {
		return nil, fmt.Errorf("%w: relay URL: %w", ErrChain, err)
	}
	relayAddr, err := netip.ParseAddrPort(relay.Host)
	if err != nil {
		return nil, fmt.Errorf("%w: relay URL: %w", ErrChain, err)
	}
	var out []*childproc.Process
	for _, p := range c.Proxies {
		if !p.Running() {
			continue
		}
		ok, err := connectedTo(p.PID(), relayAddr)
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrChain, p.Name(), err)
		}
		if ok {
			out = append(out, p)
		}
	}
	reads := make(map[*childproc.Process]int64, len(out))
	for _, p := range out {
		io, err := procstat.ReadProcIO(p.PID())
		if err != nil {
			return nil, fmt.Errorf("%w: %s: %w", ErrChain, p.Name(), err)
		}
		reads[p] = io.Reads
	}
	slices.SortStableFunc(out, func(a, b *childproc.Process) int { return cmp.Compare(reads[b], reads[a]) })
	return out, nil
}

// connectedTo reports whether process pid holds a TCP connection to
// addr in the established state, judged by its file descriptors and the
// TCP tables of its network namespace (/proc/PID/net/tcp and tcp6).
// (procfs reads these tables too, but its readers are deprecated for
// netlink's socket diagnostics, which would have to run in the
// process's namespace.)
func connectedTo(pid int, addr netip.AddrPort) (bool, error) {
	dir := filepath.Join("/proc", strconv.Itoa(pid))
	fds, err := os.ReadDir(filepath.Join(dir, "fd"))
	if err != nil {
		return false, err
	}
	sockets := map[string]bool{}
	for _, fd := range fds {
		target, err := os.Readlink(filepath.Join(dir, "fd", fd.Name()))
		if inode, ok := strings.CutPrefix(target, "socket:["); err == nil && ok {
			sockets[strings.TrimSuffix(inode, "]")] = true
		}
	}
	for _, table := range []string{"tcp", "tcp6"} {
		b, err := os.ReadFile(filepath.Join(dir, "net", table))
		if errors.Is(err, fs.ErrNotExist) { // a kernel without IPv6
			continue
		}
		if err != nil {
			return false, err
		}
		for line := range strings.Lines(string(b)) {
			// sl local_address rem_address st tx_queue:rx_queue tr:tm->when
			// retrnsmt uid timeout inode ...
			f := strings.Fields(line)
			const established = "01" // TCP_ESTABLISHED
			if len(f) < 10 || f[3] != established || !sockets[f[9]] {
				continue
			}
			if remote, ok := procNetAddr(f[2]); ok && remote == addr {
				return true, nil
			}
		}
	}
	return false, nil
}

// procNetAddr parses an address of /proc/net/tcp or tcp6: the address's
// 32-bit words in hexadecimal, each in the host's byte order
// (little-endian on every architecture the lab runs on), a colon and the
// port in hexadecimal. An IPv4-mapped IPv6 address comes back as IPv4.
func procNetAddr(s string) (netip.AddrPort, bool) {
	hexAddr, hexPort, ok := strings.Cut(s, ":")
	raw, err := hex.DecodeString(hexAddr)
	if !ok || err != nil || (len(raw) != 4 && len(raw) != 16) {
		return netip.AddrPort{}, false
	}
	port, err := strconv.ParseUint(hexPort, 16, 16)
	if err != nil {
		return netip.AddrPort{}, false
	}
	for i := 0; i < len(raw); i += 4 {
		binary.BigEndian.PutUint32(raw[i:], binary.LittleEndian.Uint32(raw[i:]))
	}
	a, _ := netip.AddrFromSlice(raw)
	return netip.AddrPortFrom(a.Unmap(), uint16(port)), true
}

// Processes returns the chain's processes, client first.
func (c *Chain) Processes() []*childproc.Process {
	var out []*childproc.Process
	for _, p := range append(append([]*childproc.Process{c.Client}, c.Proxies...), c.Broker, c.NATProbe, c.Relay) {
		if p != nil {
			out = append(out, p)
		}
	}
	return out
}

// Close stops every process and the target.
func (c *Chain) Close() {
	for _, p := range c.Processes() {
		p.Kill()
	}
	if c.Target != nil {
		c.Target.Close()
	}
}

// LogTails returns the end of every process's log, for a failure report.
func (c *Chain) LogTails(n int) string {
	var b strings.Builder
	for _, p := range c.Processes() {
		fmt.Fprintf(&b, "--- %s (%s)\n%s\n", p.Name(), p.LogPath(), p.LogTail(n))
	}
	return b.String()
}
