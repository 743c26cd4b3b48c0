package tortest

import (
	"bufio"
	"context"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"

	"github.com/flurrypt/flurry/demo"
)

// DefaultTorPath is Debian's tor.
const DefaultTorPath = "/usr/bin/tor"

// fakeDirAuthority replaces tor's real directory authorities with one on a
// closed loopback port (the discard port), so that no tor here ever
// contacts the Tor network.
const fakeDirAuthority = "DirAuthority fake orport=9 no-v2 v3ident=0000000000000000000000000000000000000001 127.0.0.1:9 0000000000000000000000000000000000000002"

// TorBridge is a tor bridge whose pluggable transport is flurry-relay.
type TorBridge struct {
	// DataDir is tor's DataDirectory; Torrc the configuration file.
	DataDir, Torrc string
	// TransportAddr is where flurry-relay listens (ServerTransportListenAddr)
	// and RelayURL the ws:// URL proxies use for it.
	TransportAddr, RelayURL string
	// RelayMetricsURL serves flurry-relay's metrics; RelayLog is its log.
	RelayMetricsURL, RelayLog string
	// NoticeLog and DebugLog are tor's log files.
	NoticeLog, DebugLog string
}

// WriteTorBridge writes a bridge torrc under dir: loopback only, no
// published descriptor, flurry-relay as the snowflake server transport
// behind tor's ExtORPort, and tor's debug log (for the ExtORPort
// commands it receives). network are the torrc lines that name the
// directory authorities (TorNetwork.Lines); none means a fake authority
// on a closed port, so that tor contacts nothing.
func WriteTorBridge(dir, relayBin string, network ...string) (*TorBridge, error) {
	addrs, err := demo.FreeAddrs(2)
	if err != nil {
		return nil, err
	}
	b := &TorBridge{
		DataDir:         filepath.Join(dir, "bridge-data"),
		Torrc:           filepath.Join(dir, "bridge-torrc"),
		TransportAddr:   addrs[0],
		RelayURL:        "ws://" + addrs[0] + "/",
		RelayMetricsURL: "http://" + addrs[1] + "/metrics",
		RelayLog:        filepath.Join(dir, "bridge-relay.log"),
		NoticeLog:       filepath.Join(dir, "bridge-notice.log"),
		DebugLog:        filepath.Join(dir, "bridge-debug.log"),
	}
	if err := os.MkdirAll(b.DataDir, 0o700); err != nil {
		return nil, err
	}
	torrc := fmt.Sprintf(`# A Flurry bridge on loopback (written by package demo).
DataDirectory %s
BridgeRelay 1
PublishServerDescriptor 0
AssumeReachable 1
ORPort 127.0.0.1:auto
ExtORPort 127.0.0.1:auto
ServerTransportPlugin snowflake exec %s -disable-tls -unsafe-logging -log %s -metrics-addr %s
ServerTransportListenAddr snowflake %s
SocksPort 0
ControlPort 0
Nickname flurrydemo
ContactInfo flurry-demo@example.invalid
UseDefaultFallbackDirs 0
%s
ShutdownWaitLength 0
SafeLogging 0
Log notice stdout
Log notice file %s
Log debug file %s
`, b.DataDir, relayBin, b.RelayLog, addrs[1], b.TransportAddr, networkLines(network), b.NoticeLog, b.DebugLog)
	if err := os.WriteFile(b.Torrc, []byte(torrc), 0o600); err != nil {
		return nil, err
	}
	return b, nil
}

// Fingerprint returns the bridge's identity fingerprint (40 hex digits)
// from DataDirectory/fingerprint, which tor writes at start.
func (b *TorBridge) Fingerprint() (string, error) {
	return readFingerprint(filepath.Join(b.DataDir, "fingerprint"))
}

func readFingerprint(path string) (string, error) {
	data, err := os.ReadFile(path)
	if err != nil {
		return "", err
	}
	f := strings.Fields(string(data))
	if len(f) != 2 || len(f[1]) != 40 {
		return "", fmt.Errorf("%s: unexpected content %q", path, data)
	}
	return f[1], nil
}

// Ready is a readiness probe for the bridge's tor: the fingerprint is
// written and flurry-relay serves its metrics.
func (b *TorBridge) Ready() func(context.Context) error {
	metrics := demo.HTTPReady(b.RelayMetricsURL, 200)
	return func(ctx context.Context) error {
		if _, err := b.Fingerprint(); err != nil {
			return err
		}
		return metrics(ctx)
	}
}

// TorClient is a tor client that reaches a bridge through flurry-client.
type TorClient struct {
	DataDir, Torrc string
	// NoticeLog is tor's log; PTLog flurry-client's.
	NoticeLog, PTLog string
	// SOCKSAddr is tor's SOCKS port.
	SOCKSAddr string
	// BridgeLine is the Bridge line of the torrc.
	BridgeLine string
}

// WriteTorClient writes a client torrc under dir that uses the bridge with
// fingerprint through flurry-client and the broker at brokerURL. ptArgs are
// extra flurry-client arguments (such as -loopback-only); network as for
// WriteTorBridge.
func WriteTorClient(dir, clientBin, brokerURL, fingerprint string, ptArgs []string, network ...string) (*TorClient, error) {
	socks, err := demo.FreeAddr()
	if err != nil {
		return nil, err
	}
	c := &TorClient{
		DataDir:   filepath.Join(dir, "client-data"),
		Torrc:     filepath.Join(dir, "client-torrc"),
		NoticeLog: filepath.Join(dir, "client-notice.log"),
		PTLog:     filepath.Join(dir, "client-pt.log"),
		SOCKSAddr: socks,
		// 192.0.2.3:80 is a placeholder: tor hands it to the transport,
		// which ignores it; only the fingerprint matters.
		BridgeLine: fmt.Sprintf("Bridge snowflake 192.0.2.3:80 %s fingerprint=%s url=%s", fingerprint, fingerprint, brokerURL),
	}
	if err := os.MkdirAll(c.DataDir, 0o700); err != nil {
		return nil, err
	}
	exec := append([]string{clientBin, "-log", c.PTLog, "-unsafe-logging"}, ptArgs...)
	torrc := fmt.Sprintf(`# A tor client using a Flurry bridge on loopback (written by package demo).
DataDirectory %s
UseBridges 1
ClientTransportPlugin snowflake exec %s
%s
SocksPort %s
ControlPort 0
UseDefaultFallbackDirs 0
%s
SafeLogging 0
Log notice stdout
Log notice file %s
`, c.DataDir, strings.Join(exec, " "), c.BridgeLine, socks, networkLines(network), c.NoticeLog)
	if err := os.WriteFile(c.Torrc, []byte(torrc), 0o600); err != nil {
		return nil, err
	}
	return c, nil
}

func networkLines(network []string) string {
	if len(network) == 0 {
		return fakeDirAuthority
	}
	return strings.Join(network, "\n")
}

var bootstrapRE = regexp.MustCompile(`Bootstrapped (\d+)% \(([a-z_]+)\)`)

// TorBootstrap returns the highest "Bootstrapped N% (tag)" in a tor log.
func TorBootstrap(logPath string) (percent int, tag string) {
	f, err := os.Open(logPath)
	if err != nil {
		return 0, ""
	}
	defer f.Close()
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if m := bootstrapRE.FindStringSubmatch(sc.Text()); m != nil {
			if n, err := strconv.Atoi(m[1]); err == nil && n >= percent {
				percent, tag = n, m[2]
			}
		}
	}
	return percent, tag
}

// GrepFile returns the lines of a file that contain s.
func GrepFile(path, s string) []string {
	f, err := os.Open(path)
	if err != nil {
		return nil
	}
	defer f.Close()
	var out []string
	sc := bufio.NewScanner(f)
	sc.Buffer(make([]byte, 64<<10), 1<<20)
	for sc.Scan() {
		if strings.Contains(sc.Text(), s) {
			out = append(out, sc.Text())
		}
	}
	return out
}
