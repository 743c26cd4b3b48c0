package tortest

import (
	"bytes"
	"context"
	"errors"
	"fmt"
	"io"
	"net/http"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/childproc"
)

// DefaultTorGencertPath is Debian's tor-gencert (package tor).
const DefaultTorGencertPath = "/usr/bin/tor-gencert"

// TorNetworkConfig describes a private Tor network on loopback.
type TorNetworkConfig struct {
	// Dir receives every data directory, torrc and log. Required.
	Dir string
	// Tor and TorGencert are the executables; empty means the Debian paths.
	Tor, TorGencert string
	// Relays is the number of relays besides the authority (which relays
	// and exits too); 0 means 3.
	Relays int
	// ExitPorts are the ports the exits accept for any address, besides
	// everything on 127.0.0.1. Clients judge exits by the summary of
	// their policy, which ignores rules for single addresses, so a client
	// uses an exit for 127.0.0.1:port only if the policy accepts *:port:
	// give the ports of the loopback services the clients will reach.
	ExitPorts []int
}

// TorNetwork is a private Tor network (TestingTorNetwork 1): one directory
// authority and a few relays, all exits to 127.0.0.1 (and to
// TorNetworkConfig.ExitPorts), voting every 10 seconds so that a consensus
// exists within about 20 s. Every tor listens on 127.0.0.1 only.
type TorNetwork struct {
	// Lines are the torrc lines a bridge or client of this network needs
	// (TestingTorNetwork, the DirAuthority line, ...).
	Lines []string
	// ConsensusURL is the authority's consensus.
	ConsensusURL string

	procs     []*childproc.Process
	closeOnce sync.Once
	closeHang error
	closeErr  error
}

// votingLines make the authority vote every 10 s from the start.
var votingLines = []string{
	"TestingV3AuthInitialVotingInterval 10",
	"TestingV3AuthInitialVoteDelay 2",
	"TestingV3AuthInitialDistDelay 2",
	"V3AuthVotingInterval 10",
	"V3AuthVoteDelay 2",
	"V3AuthDistDelay 2",
}

// StartTorNetwork generates the authority's keys, starts the authority and
// the relays, and waits until the authority publishes a consensus that
// lists all of them with the Exit flag.
func StartTorNetwork(ctx context.Context, cfg TorNetworkConfig) (*TorNetwork, error) {
	if cfg.Dir == "" {
		return nil, errors.New("TorNetworkConfig.Dir is required")
	}
	if cfg.Tor == "" {
		cfg.Tor = DefaultTorPath
	}
	if cfg.TorGencert == "" {
		cfg.TorGencert = DefaultTorGencertPath
	}
	if cfg.Relays == 0 {
		cfg.Relays = 3
	}
	addrs, err := demo.FreeAddrs(2 + cfg.Relays)
	if err != nil {
		return nil, err
	}
	authOR, authDir := addrs[0], addrs[1]
	authData := filepath.Join(cfg.Dir, "auth")
	if err := os.MkdirAll(filepath.Join(authData, "keys"), 0o700); err != nil {
		return nil, err
	}

	// The authority's v3 signing keys (tor-gencert) and its relay identity
	// (tor --list-fingerprint), both needed for the DirAuthority line.
	gencert := exec.CommandContext(ctx, cfg.TorGencert, "--create-identity-key", "-m", "12",
		"-a", authDir, "-i", "authority_identity_key", "-s", "authority_signing_key",
		"-c", "authority_certificate", "--passphrase-fd", "0")
	gencert.Dir = filepath.Join(authData, "keys")
	gencert.Stdin = strings.NewReader("\n")
	if out, err := gencert.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("tor-gencert: %w\n%s", err, out)
	}
	cert, err := os.ReadFile(filepath.Join(authData, "keys", "authority_certificate"))
	if err != nil {
		return nil, err
	}
	var v3ident string
	for line := range strings.SplitSeq(string(cert), "\n") {
		if f := strings.Fields(line); len(f) == 2 && f[0] == "fingerprint" {
			v3ident = f[1]
		}
	}
	if v3ident == "" {
		return nil, fmt.Errorf("no fingerprint in the authority certificate")
	}
	fpTorrc := filepath.Join(cfg.Dir, "auth-fingerprint-torrc")
	if err := os.WriteFile(fpTorrc, fmt.Appendf(nil, "DataDirectory %s\nORPort %s\nNickname auth\n", authData, authOR), 0o600); err != nil {
		return nil, err
	}
	if out, err := exec.CommandContext(ctx, cfg.Tor, "--list-fingerprint", "-f", fpTorrc, "--defaults-torrc", os.DevNull).CombinedOutput(); err != nil {
		return nil, fmt.Errorf("tor --list-fingerprint: %w\n%s", err, out)
	}
	authFP, err := readFingerprint(filepath.Join(authData, "fingerprint"))
	if err != nil {
		return nil, err
	}

	n := &TorNetwork{
		Lines: []string{
			"TestingTorNetwork 1",
			fmt.Sprintf("DirAuthority auth orport=%s no-v2 v3ident=%s %s %s", demo.Port(authOR), v3ident, authDir, authFP),
			"EnforceDistinctSubnets 0", // every node is on 127.0.0.1
		},
		ConsensusURL: "http://" + authDir + "/tor/status-vote/current/consensus",
	}
	// Exits resolve names with tor's own DNS client, and test it against
	// public names at start: point it at a loopback nameserver and turn
	// the tests off, so that nothing leaves the machine.
	resolvConf := filepath.Join(cfg.Dir, "resolv.conf")
	if err := os.WriteFile(resolvConf, []byte("nameserver 127.0.0.1\n"), 0o644); err != nil {
		return nil, err
	}
	exitPolicy := []string{
		"ServerDNSResolvConfFile " + resolvConf,
		"ServerDNSDetectHijacking 0",
		"ServerDNSAllowBrokenConfig 1",
		"ExitPolicy accept 127.0.0.1:*",
	}
	for _, port := range cfg.ExitPorts {
		exitPolicy = append(exitPolicy, fmt.Sprintf("ExitPolicy accept *:%d", port))
	}
	exitPolicy = append(exitPolicy, "ExitPolicy reject *:*")
	relayLines := func(name, data, orAddr string) []string {
		return append(append(append([]string{
			"DataDirectory " + data,
			"Nickname " + name,
			"Address 127.0.0.1",
			"ORPort " + orAddr,
			"SocksPort 0",
			"ControlPort 0",
			"ContactInfo " + name + "@example.invalid",
			"AssumeReachable 1",
			"ExitRelay 1",
			"ExitPolicyRejectPrivate 0",
			"ShutdownWaitLength 0",
			"SafeLogging 0",
			"Log notice stdout",
		}, exitPolicy...), n.Lines...), votingLines...)
	}

	start := func(name string, lines []string, ready func(context.Context) error) error {
		torrc := filepath.Join(cfg.Dir, name+"-torrc")
		if err := os.WriteFile(torrc, []byte(strings.Join(lines, "\n")+"\n"), 0o600); err != nil {
			return err
		}
		p, err := childproc.Start(ctx, childproc.Config{
			Name: "tor-" + name, Path: cfg.Tor, LogPath: filepath.Join(cfg.Dir, name+".log"),
			Supervisor: "demo",
			Args:       []string{"-f", torrc, "--defaults-torrc", os.DevNull},
			Ready:      ready,
		})
		if err != nil {
			return err
		}
		n.procs = append(n.procs, p)
		return nil
	}
	auth := append(relayLines("auth", authData, authOR),
		"DirPort "+authDir,
		"AuthoritativeDirectory 1",
		"V3AuthoritativeDirectory 1",
		"TestingDirAuthVoteExit *",
		"TestingDirAuthVoteGuard *",
		"TestingDirAuthVoteHSDir *",
		"TestingMinExitFlagThreshold 0",
	)
	if err := start("auth", auth, demo.TCPReady(authDir)); err != nil {
		n.Close()
		return nil, err
	}
	for i := range cfg.Relays {
		name := fmt.Sprintf("relay%d", i+1)
		data := filepath.Join(cfg.Dir, name)
		if err := os.MkdirAll(data, 0o700); err != nil {
			n.Close()
			return nil, err
		}
		if err := start(name, relayLines(name, data, addrs[2+i]), demo.TCPReady(addrs[2+i])); err != nil {
			n.Close()
			return nil, err
		}
	}

	// Wait for a consensus with every node as an exit.
	want := 1 + cfg.Relays
	// An own transport: no environment proxy.
	client := &http.Client{Timeout: 5 * time.Second, Transport: &http.Transport{}}
	defer client.CloseIdleConnections()
	ready := func(ctx context.Context) error {
		body, err := get(ctx, client, n.ConsensusURL)
		if err != nil {
			return err
		}
		routers, exits := 0, 0
		for line := range bytes.SplitSeq(body, []byte("\n")) {
			switch {
			case bytes.HasPrefix(line, []byte("r ")):
				routers++
			case bytes.HasPrefix(line, []byte("s ")) && bytes.Contains(line, []byte(" Exit")) && bytes.Contains(line, []byte(" Running")):
				exits++
			}
		}
		if routers < want || exits < want {
			return fmt.Errorf("consensus has %d routers, %d running exits; want %d", routers, exits, want)
		}
		return nil
	}
	if err := demo.Poll(ctx, 90*time.Second, ready); err != nil {
		n.Close()
		return nil, fmt.Errorf("private tor network: %w", err)
	}
	return n, nil
}

// Close stops every tor of the network (Stop) and returns the exit hangs
// and the other stop errors of them all. It is idempotent.
func (n *TorNetwork) Close() (hang, err error) {
	n.closeOnce.Do(func() {
		var wg sync.WaitGroup
		hangs := make([]error, len(n.procs))
		errs := make([]error, len(n.procs))
		for i, p := range n.procs {
			wg.Go(func() { hangs[i], errs[i] = Stop(p) })
		}
		wg.Wait()
		n.closeHang, n.closeErr = errors.Join(hangs...), errors.Join(errs...)
	})
	return n.closeHang, n.closeErr
}

// maxConsensus bounds the consensus document read.
const maxConsensus = 16 << 20

// get fetches url and returns its body, which must come with status 200.
func get(ctx context.Context, client *http.Client, url string) ([]byte, error) {
	req, err := http.NewRequestWithContext(ctx, http.MethodGet, url, nil)
	if err != nil {
		return nil, err
	}
	// A plain body: tor's directory port deflates unless told not to.
	req.Header.Set("Accept-Encoding", "identity")
	resp, err := client.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		return nil, fmt.Errorf("GET %s: %s", url, resp.Status)
	}
	return io.ReadAll(io.LimitReader(resp.Body, maxConsensus))
}
