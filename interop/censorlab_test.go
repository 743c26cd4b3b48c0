package interop

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"fmt"
	"net"
	"net/http"
	"net/http/httputil"
	"net/netip"
	"net/url"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/pion/transport/v5/stdnet"

	"github.com/flurrypt/flurry/common/sqscreds"
	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/testkit/certtest"
	"github.com/flurrypt/flurry/internal/testkit/sqstest"
	"github.com/flurrypt/flurry/internal/testkit/stuntest"
	"github.com/flurrypt/flurry/internal/testkit/testenv"
	"github.com/flurrypt/flurry/internal/testkit/turntest"
	"github.com/flurrypt/flurry/internal/testkit/webrtcfp"
	"github.com/flurrypt/flurry/netlab"
	"github.com/flurrypt/flurry/netlab/censor"
)

// labConfig is one column of the censor lab's matrix: a chain, the
// covert DTLS mode its client and proxy are given ("" leaves each binary
// at its default), how the client reaches the broker, and whether it has a
// TURN server (over TCP) beside its STUN server.
type labConfig struct {
	Name       string
	Roles      Roles
	Covert     string
	Rendezvous rendezvous
	TURN       bool
}

// rendezvous is how a lab's client reaches the broker.
type rendezvous uint8

const (
	direct   rendezvous = iota // straight to the broker's address
	fronted                    // domain fronting through a CDN stand-in
	ampRoute                   // through an AMP cache stand-in, fronted
	sqsRoute                   // through an SQS stand-in
)

// labConfigs are the matrix's columns: each implementation at its
// defaults, Flurry in each covert DTLS mode, the mixed chains a Flurry
// user meets (our client with Snowflake's volunteers, Snowflake's client
// with ours), both clients with fronted, AMP cache and SQS rendezvous, and
// Flurry's client with a TURN server over TCP (Snowflake's client takes
// only STUN servers).
func labConfigs() []labConfig {
	sf := Roles{Snowflake, Snowflake, Snowflake, Snowflake}
	return []labConfig{
		{Name: "snowflake", Roles: sf},
		{Name: "flurry", Roles: Roles{}},
		{Name: "flurry-mimic", Roles: Roles{}, Covert: "mimic"},
		{Name: "flurry-randomize", Roles: Roles{}, Covert: "randomize"},
		{Name: "flurry-randomizemimic", Roles: Roles{}, Covert: "randomizemimic"},
		{Name: "flurry-disable", Roles: Roles{}, Covert: "disable"},
		// Broker and relay are Flurry's in both mixed chains.
		{Name: "fl-client+sf-proxy", Roles: Roles{Broker: Flurry, Proxy: Snowflake, Client: Flurry, Relay: Flurry}},
		{Name: "sf-client+fl-proxy", Roles: Roles{Broker: Flurry, Proxy: Flurry, Client: Snowflake, Relay: Flurry}},
		{Name: "snowflake-fronted", Roles: sf, Rendezvous: fronted},
		{Name: "flurry-fronted", Roles: Roles{}, Rendezvous: fronted},
		{Name: "snowflake-amp", Roles: sf, Rendezvous: ampRoute},
		{Name: "flurry-amp", Roles: Roles{}, Rendezvous: ampRoute},
		{Name: "snowflake-sqs", Roles: sf, Rendezvous: sqsRoute},
		{Name: "flurry-sqs", Roles: Roles{}, Rendezvous: sqsRoute},
		{Name: "flurry-turn", Roles: Roles{}, TURN: true},
	}
}

// labCensors are the matrix's rows: no censor, then each program alone.
func labCensors() []string {
	return append([]string{"none"}, censor.Names()...)
}

// The lab's outside addresses: the broker, relay and proxies on the first,
// the STUN server on the second (so that stun-block can single it out as
// a censor blocks known STUN servers), the CDN stand-in on the third, the
// SQS stand-in on the fourth.
const (
	labMainAddr = iota
	labSTUNAddr
	labCDNAddr
	labSQSAddr
)

// labProfile is the path between the client and everything else in every
// cell: a user on Wi-Fi with the proxies in the same region (the censor
// programs' delays and cuts need a download that lasts, as it does for a
// real user, rather than the lan profile's fraction of a second).
const labProfile = "wifi"

// labThrottleRate is udp-throttle's rate in the lab (bits per second),
// and labThrottledSize the download under it: throttling slows a chain
// rather than blocking it, so the cell measures how much.
const (
	labThrottleRate  = 1 << 20
	labThrottledSize = 1 << 20
)

// labOptions are the censor programs' options for a lab: sni-block blocks
// the broker's address, stun-block the STUN server's.
func labOptions(lab *netlab.Lab, allow []string) censor.Options {
	host := func(i int) []netip.Prefix {
		a := lab.OutsideAddr(i)
		return []netip.Prefix{netip.PrefixFrom(a, a.BitLen())}
	}
	return censor.Options{
		BlockAddrs:   host(labMainAddr),
		BlockNames:   []string{FrontedBrokerHost},
		STUNAddrs:    host(labSTUNAddr),
		AllowJA4:     allow,
		ThrottleRate: labThrottleRate,
	}
}

// labFileSize is what each cell downloads.
const labFileSize = 5 << 20

// labCellTimeout bounds one cell's download: past it the censor has won.
// Unblocked, a cell takes well under half of it on the lab's path.
const labCellTimeout = 30 * time.Second

// labResult is one cell of the matrix.
type labResult struct {
	Config    string
	Censor    string
	Through   bool
	Error     string        `json:",omitempty"`
	FirstByte time.Duration `json:",omitempty"`
	MBps      float64       `json:",omitempty"`
	// CensorDrops is how many packets the censor dropped.
	CensorDrops uint64
}

// TestCensorLab runs every chain of labConfigs through every censor
// program of the lab (real processes, the client behind the lab's
// middlebox), downloads labFileSize through each and checks it, and
// prints the matrix as a table and JSON (FLURRY_CENSORLAB_OUT names a file
// for the JSON; FLURRY_CENSORLAB_LOGS=1 prints the logs of blocked cells).
// It fails if a chain is blocked without any censor, if Flurry at its
// defaults is blocked by a censor that Snowflake at its defaults gets
// through, or if a documented way around a censor (labWaysAround) does
// not get through. Each cell is a parallel subtest, CENSOR/CHAIN: a
// blocked cell only waits, so `make censorlab` runs eight at once
// (-parallel 8), and -run picks cells.
func TestCensorLab(t *testing.T) {
	if testing.Short() {
		t.Skip("the censor lab takes minutes")
	}
	testenv.Root(t, "the censor lab's namespaces and TUN devices")
	fl, sf := binaries(t)
	allow := browserJA4s(t)
	t.Logf("dtls-allowlist: the JA4s of Debian's Chromium: %v", allow)

	type cell struct {
		cfg    labConfig
		censor string
	}
	var cells []cell
	for _, name := range labCensors() {
		for _, cfg := range labConfigs() {
			cells = append(cells, cell{cfg, name})
		}
	}
	var (
		mu      sync.Mutex
		results []labResult
	)
	t.Run("cells", func(t *testing.T) {
		for i, c := range cells {
			t.Run(c.censor+"/"+c.cfg.Name, func(t *testing.T) {
				t.Parallel()
				r := runLabCell(t, i, c.cfg, c.censor, allow, fl, sf)
				if r.Through {
					t.Logf("through: first byte after %v, %.2f MB/s", r.FirstByte.Round(time.Millisecond), r.MBps)
				} else {
					t.Logf("blocked: %s", r.Error)
				}
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			})
		}
	})

	results = checkLab(t, results, func(cfgName, censorName string) labResult {
		i := slices.IndexFunc(labConfigs(), func(c labConfig) bool { return c.Name == cfgName })
		return runLabCell(t, len(cells)+i, labConfigs()[i], censorName, allow, fl, sf)
	})
	t.Logf("censor lab, %s: MB/s of %d MiB through each chain (1 MiB under udp-throttle), the client behind the middlebox on the %s profile, SHA-256 checked; ✗: blocked (no whole download within %v):\n%s",
		time.Now().UTC().Format(time.DateOnly),
		labFileSize>>20, labProfile, labCellTimeout, formatLab(results))
	b, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if out := os.Getenv("FLURRY_CENSORLAB_OUT"); out != "" {
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// runLabCell builds a lab with the named censor, starts the chain across
// it and downloads through it.
func runLabCell(t *testing.T, i int, cfg labConfig, censorName string, allow []string, fl demo.Binaries, sf SnowflakeBinaries) labResult {
	res := labResult{Config: cfg.Name, Censor: censorName}
	fail := func(err error) labResult {
		res.Error = err.Error()
		return res
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	path, err := netlab.ParseProfile(labProfile)
	if err != nil {
		t.Fatal(err)
	}
	lab, err := netlab.New(ctx, netlab.Config{Name: labName("cl", i), Up: path, Down: path, Seed: uint64(i + 1)})
	if err != nil {
		t.Errorf("%s / %s: lab: %v", cfg.Name, censorName, err)
		return fail(err)
	}
	defer lab.Close()
	if censorName != "none" {
		prog, err := censor.Parse(censorName, labOptions(lab, allow))
		if err != nil {
			t.Errorf("%s: %v", censorName, err)
			return fail(err)
		}
		lab.SetCensor(prog)
	}
	var stunURL string
	if err := lab.Do(netlab.Outside, func() error {
		stunURL = stuntest.StartOn(t, lab.OutsideAddr(labSTUNAddr))
		return nil
	}); err != nil {
		return fail(err)
	}
	size := int64(labFileSize)
	if censorName == "udp-throttle" {
		size = labThrottledSize
	}
	chainCfg := ChainConfig{Roles: cfg.Roles, Flurry: fl, Snowflake: sf, FileSize: size, STUN: stunURL, Covert: cfg.Covert, Lab: lab,
		Dir: filepath.Join(t.TempDir(), "chain")}
	if cfg.Rendezvous == sqsRoute {
		if chainCfg.SQS, err = startSQS(t, lab, chainCfg.Dir); err != nil {
			t.Errorf("%s / %s: SQS: %v", cfg.Name, censorName, err)
			return fail(err)
		}
	}
	if cfg.Rendezvous == fronted || cfg.Rendezvous == ampRoute {
		chainCfg.Front = lab.OutsideAddr(labCDNAddr).String()
	}
	if cfg.Rendezvous == ampRoute {
		chainCfg.AMPCache = "http://" + ampCacheHost + "/"
	}
	if cfg.TURN {
		// The TURN server relays from the proxies' address, the only
		// peer it lets its clients reach.
		var turnURL string
		if err := lab.Do(netlab.Outside, func() error {
			n, err := stdnet.NewNet()
			if err != nil {
				return err
			}
			turnURL = turntest.StartNet(t, lab.OutsideAddr(labMainAddr), "flurry", "lab", outsideNet{n, lab}).URL
			return nil
		}); err != nil {
			return fail(err)
		}
		chainCfg.ClientICE = stunURL + "," + turnURL
	}
	c, err := StartChain(ctx, chainCfg)
	if err != nil {
		t.Errorf("%s / %s: chain: %v", cfg.Name, censorName, err)
		return fail(err)
	}
	defer c.Close()
	if chainCfg.Front != "" {
		if err := startCDN(t, lab, chainCfg.Front, c.BrokerURL); err != nil {
			t.Errorf("%s / %s: CDN: %v", cfg.Name, censorName, err)
			return fail(err)
		}
	}
	dctx, dcancel := context.WithTimeout(ctx, labCellTimeout)
	defer dcancel()
	var fr demo.FetchResult
	err = c.InClient(func() error {
		var err error
		fr, err = demo.FetchTarget(dctx, c.SOCKSAddr, c.Target, nil)
		return err
	})
	st := lab.Stats()
	res.CensorDrops = st.Up.CensorDropped + st.Down.CensorDropped
	if err != nil {
		if errors.Is(err, demo.ErrChecksum) {
			t.Errorf("%s / %s: corrupted download: %v", cfg.Name, censorName, err)
		}
		if censorName == "none" || os.Getenv("FLURRY_CENSORLAB_LOGS") != "" {
			t.Logf("%s / %s failed; logs:\n%s", cfg.Name, censorName, c.LogTails(30))
		}
		return fail(err)
	}
	res.Through = true
	res.FirstByte = fr.FirstByte
	res.MBps = fr.Throughput() / 1e6
	return res
}

// outsideNet opens the TURN server's relay sockets on the lab's outside:
// the server opens them from goroutines of its own, which the lab's Do
// does not move.
type outsideNet struct {
	*stdnet.Net
	lab *netlab.Lab
}

func (n outsideNet) ListenPacket(network, address string) (conn net.PacketConn, err error) {
	err = n.lab.Do(netlab.Outside, func() error {
		conn, err = n.Net.ListenPacket(network, address)
		return err
	})
	return conn, err
}

// ampCacheHost is the AMP cache stand-in's name; the AMP client asks
// for a subdomain of it named after the broker.
const ampCacheHost = "amp.cache.example"

// startCDN runs a CDN stand-in on the lab's outside at front (port 80): it
// forwards every request for FrontedBrokerHost to the broker, as a CDN
// that fronts the broker's domain does, and stands in for an AMP cache
// too: a request to a subdomain of ampCacheHost for
// /c/FrontedBrokerHost/PATH goes to the broker's /PATH. Other hosts are
// refused.
func startCDN(t *testing.T, lab *netlab.Lab, front, brokerURL string) error {
	target, err := url.Parse(brokerURL)
	if err != nil {
		return err
	}
	proxy := httputil.NewSingleHostReverseProxy(target)
	proxy.Transport = &http.Transport{
		// The transport dials from goroutines of its own: move each dial
		// into the outside, where the broker is.
		DialContext: func(ctx context.Context, network, addr string) (conn net.Conn, err error) {
			err = lab.Do(netlab.Outside, func() error {
				var d net.Dialer
				conn, err = d.DialContext(ctx, network, addr)
				return err
			})
			return conn, err
		},
	}
	ampPrefix := "/c/" + FrontedBrokerHost + "/"
	srv := &http.Server{
		Handler: http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
			switch {
			case r.Host == FrontedBrokerHost:
			case strings.HasSuffix(r.Host, "."+ampCacheHost) && strings.HasPrefix(r.URL.Path, ampPrefix):
				r.URL.Path = "/" + strings.TrimPrefix(r.URL.Path, ampPrefix)
				r.URL.RawPath = ""
			default:
				http.Error(w, "unknown host", http.StatusNotFound)
				return
			}
			proxy.ServeHTTP(w, r)
		}),
		ReadHeaderTimeout: 10 * time.Second,
	}
	var ln net.Listener
	if err := lab.Do(netlab.Outside, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(front, "80"))
		return err
	}); err != nil {
		return err
	}
	go srv.Serve(ln)
	t.Cleanup(func() { srv.Close() })
	return nil
}

// The SQS stand-in: the queue the broker reads, the AWS key of broker and
// client, and the endpoint's name, which resolves to labSQSAddr on both
// sides of a lab.
const (
	labSQSQueueURL = "https://" + labSQSHost + "/000000000000/snowflake-broker"
	labSQSHost     = "sqs.us-east-1.amazonaws.com"
	labSQSKeyID    = "AKIAFLURRYLAB"
	labSQSSecret   = "flurry-lab-secret"
)

// startSQS runs an SQS-compatible server (package sqstest) on the lab's
// outside at labSQSAddr:443, with a certificate for labSQSHost from a CA
// of its own (written to dir), and makes labSQSHost resolve to it for the
// processes the lab starts on either side: ip netns exec mounts
// /etc/netns/NAMESPACE/hosts over /etc/hosts. The censor sees what it
// would see of real SQS rendezvous: TLS to sqs.<region>.amazonaws.com on
// an address that is not the broker's.
func startSQS(t *testing.T, lab *netlab.Lab, dir string) (*ChainSQS, error) {
	addr := lab.OutsideAddr(labSQSAddr)
	cert, err := certtest.Make(labSQSHost, addr.String())
	if err != nil {
		return nil, err
	}
	if err := os.MkdirAll(dir, 0o755); err != nil {
		return nil, err
	}
	caFile := filepath.Join(dir, "sqs-ca.pem")
	if err := os.WriteFile(caFile, cert.CertPEM, 0o644); err != nil {
		return nil, err
	}
	for _, side := range []netlab.Side{netlab.Client, netlab.Outside} {
		nsDir := filepath.Join("/etc/netns", lab.Namespace(side))
		if err := os.MkdirAll(nsDir, 0o755); err != nil {
			return nil, err
		}
		t.Cleanup(func() { os.RemoveAll(nsDir) })
		hosts := fmt.Sprintf("127.0.0.1 localhost\n%s %s\n", addr, labSQSHost)
		if err := os.WriteFile(filepath.Join(nsDir, "hosts"), []byte(hosts), 0o644); err != nil {
			return nil, err
		}
	}
	var ln net.Listener
	if err := lab.Do(netlab.Outside, func() (err error) {
		ln, err = net.Listen("tcp", net.JoinHostPort(addr.String(), "443"))
		return err
	}); err != nil {
		return nil, err
	}
	srv := sqstest.New(sqstest.Config{AccessKeyID: labSQSKeyID, Listener: ln,
		TLS: &tls.Config{Certificates: []tls.Certificate{cert.TLS}}})
	t.Cleanup(srv.Close)
	creds, err := sqscreds.Credentials{AccessKeyID: labSQSKeyID, SecretKey: labSQSSecret}.Encode()
	if err != nil {
		return nil, err
	}
	return &ChainSQS{QueueURL: labSQSQueueURL, Creds: creds, CAFile: caFile}, nil
}

// labWaysAround are the cells that show a known way around a censor: the
// configuration a user or operator should set (docs/censorship.md).
var labWaysAround = [][2]string{
	{"flurry", "dtls-ja4-block"},
	{"flurry", "dtls-bytes-2022"},
	{"flurry", "dtls-allowlist"},
	{"flurry-fronted", "sni-block"},
	{"flurry-amp", "sni-block"},
	{"snowflake-sqs", "sni-block"},
	{"flurry-sqs", "sni-block"},
	{"flurry-turn", "udp-block"},
}

// labMustPass returns the cells of results that must get through, and
// did not: every chain without a censor, Flurry at its defaults wherever
// Snowflake at its defaults gets through, and labWaysAround.
func labMustPass(results []labResult) [][2]string {
	through := map[[2]string]bool{}
	ran := map[[2]string]bool{}
	for _, r := range results {
		k := [2]string{r.Config, r.Censor}
		through[k], ran[k] = r.Through, true
	}
	var want [][2]string
	for _, c := range labConfigs() {
		want = append(want, [2]string{c.Name, "none"})
	}
	for _, name := range labCensors() {
		if through[[2]string{"snowflake", name}] {
			want = append(want, [2]string{"flurry", name})
		}
	}
	want = append(want, labWaysAround...)
	var failed [][2]string
	for _, k := range want {
		if ran[k] && !through[k] && !slices.Contains(failed, k) {
			failed = append(failed, k)
		}
	}
	return failed
}

// checkLab asserts labMustPass, after running each failed cell once more
// on its own (on a loaded machine a cell may fail once for reasons that
// have nothing to do with the censor).
func checkLab(t *testing.T, results []labResult, rerun func(cfg, censor string) labResult) []labResult {
	t.Helper()
	for _, k := range labMustPass(results) {
		r := rerun(k[0], k[1])
		t.Logf("%s / %s failed (%s); once more alone: through %v %s", k[0], k[1], labErr(results, k), r.Through, r.Error)
		for i := range results {
			if results[i].Config == k[0] && results[i].Censor == k[1] {
				results[i] = r
			}
		}
	}
	for _, k := range labMustPass(results) {
		t.Errorf("%s / %s: blocked, but must get through: %s", k[0], k[1], labErr(results, k))
	}
	return results
}

// labErr is the error of cell k in results.
func labErr(results []labResult, k [2]string) string {
	for _, r := range results {
		if r.Config == k[0] && r.Censor == k[1] {
			return r.Error
		}
	}
	return ""
}

// formatLab prints the matrix as a Markdown table (docs/censorship.md
// shows it): a row per censor, a column per chain; a cell is the MB/s of a
// download that got through, ✗ for one that did not, ? for one not run.
func formatLab(results []labResult) string {
	var b strings.Builder
	cfgs := labConfigs()
	b.WriteString("| censor |")
	for _, c := range cfgs {
		fmt.Fprintf(&b, " %s |", c.Name)
	}
	b.WriteString("\n|---|" + strings.Repeat("---|", len(cfgs)) + "\n")
	for _, name := range labCensors() {
		fmt.Fprintf(&b, "| `%s` |", name)
		for _, c := range cfgs {
			cell := "?"
			if i := slices.IndexFunc(results, func(r labResult) bool { return r.Config == c.Name && r.Censor == name }); i >= 0 {
				if r := results[i]; r.Through {
					cell = fmt.Sprintf("%.2f", r.MBps)
				} else {
					cell = "**✗**"
				}
			}
			fmt.Fprintf(&b, " %s |", cell)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// browserJA4s returns the JA4s of the DTLS ClientHellos Debian's Chromium
// sends (the answerer's, the DTLS client of a WebRTC connection), for
// dtls-allowlist.
func browserJA4s(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	for _, dgs := range webrtcfp.Chromium(t, 2) {
		var sent [2][][]byte // by side; the DTLS client's hello is in one
		for _, d := range dgs {
			sent[d.From] = append(sent[d.From], d.Data)
		}
		for _, side := range sent {
			if ja4, ok := censor.JA4OfDatagrams(side); ok {
				seen[ja4] = true
			}
		}
	}
	if len(seen) == 0 {
		t.Fatal("no DTLS ClientHello in Chromium's datagrams")
	}
	out := make([]string, 0, len(seen))
	for ja4 := range seen {
		out = append(out, ja4)
	}
	slices.Sort(out)
	return out
}
