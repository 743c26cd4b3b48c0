package chainproc

import (
	"bufio"
	"context"
	"errors"
	"fmt"
	"io"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/childproc"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/internal/tcptarget"
	"github.com/flurrypt/flurry/loadgen/procstat"
)

// This file starts and stops the processes of the side-by-side runs: whole
// chains (RunSideBySide, RunProxyUsers) and lone servers (RunRelayUsers),
// each role run with Snowflake v2.14.1's flag names and pluggable transport
// environment.

// relayPattern is the broker's and proxy's relay name pattern: exactly
// the loopback relay.
const relayPattern = "^127.0.0.1$"

// chainStopTimeout is how long a chain's process has to leave after
// SIGTERM and its stdin closed, before it is killed.
const chainStopTimeout = 5 * time.Second

// startChild starts bin as role: its stderr in dir/role.err (a new file),
// its stdout to stdout or, if nil, to dir/role.out, and a stdin kept open
// until it stops (a PT exits when tor closes it).
func startChild(ctx context.Context, dir, role, bin string, env []string, stdout *os.File, args ...string) (*childproc.Process, error) {
	errPath := filepath.Join(dir, role+".err")
	errf, err := os.Create(errPath)
	if err != nil {
		return nil, err
	}
	errf.Close()
	if stdout == nil {
		out, err := os.Create(filepath.Join(dir, role+".out"))
		if err != nil {
			return nil, err
		}
		defer out.Close()
		stdout = out
	}
	p, err := childproc.Start(ctx, childproc.Config{
		Name: role, Path: bin, Args: args, Env: env,
		LogPath: errPath, Stdout: stdout, HoldStdin: true,
	})
	if err != nil {
		return nil, fmt.Errorf("start %w", err)
	}
	return p, nil
}

// StopChild ends a chain's process: SIGTERM and stdin closed (a PT's
// signal to leave), SIGKILL after chainStopTimeout. How it ended does not
// matter to a measurement.
func StopChild(p *childproc.Process) { _ = p.Stop(chainStopTimeout) }

// ptEnv is what tor sets for every managed pluggable transport.
var ptEnv = []string{"TOR_PT_MANAGED_TRANSPORT_VER=1"}

// StartManagedServer starts im's server (relay), with im.Env, as tor
// starts a managed pluggable transport, plain WebSocket, forwarding every
// stream to orport; it returns once the server listens, with its
// WebSocket address.
func StartManagedServer(ctx context.Context, dir string, im Implementation, orport string) (*childproc.Process, string, error) {
	addr, err := demo.FreeAddr()
	if err != nil {
		return nil, "", err
	}
	env := append(ptEnv, "TOR_PT_SERVER_TRANSPORTS=snowflake",
		"TOR_PT_SERVER_BINDADDR=snowflake-"+addr, "TOR_PT_ORPORT="+orport,
		"TOR_PT_STATE_LOCATION="+filepath.Join(dir, "server-state"))
	p, err := startChild(ctx, dir, RoleServer, im.Server, append(env, im.Env...), nil,
		"-disable-tls", "-unsafe-logging", "-log", filepath.Join(dir, "server.log"))
	if err != nil {
		return nil, "", err
	}
	if err := waitTCP(ctx, addr, p); err != nil {
		StopChild(p)
		return nil, "", fmt.Errorf("server: %w", err)
	}
	return p, addr, nil
}

// ChainOptions say how startChain runs a chain.
type ChainOptions struct {
	// Dir receives the chain's logs and state; created.
	Dir string
	// PollInterval is the proxy's -poll-interval.
	PollInterval time.Duration
	// TargetMode is the mode of the chain's target (tcptarget.Source,
	// tcptarget.Mixed).
	TargetMode string
}

// Chain is one implementation's running chain.
type Chain struct {
	Implementation Implementation
	dir            string
	Target         *tcptarget.Target
	Procs          map[string]*childproc.Process
	SOCKSAddr      string
}

// StartChain starts im's four roles; on error the caller stops what started.
func StartChain(ctx context.Context, opt ChainOptions, im Implementation) (*Chain, error) {
	c := &Chain{Implementation: im, dir: opt.Dir, Procs: map[string]*childproc.Process{}}
	if err := os.MkdirAll(c.dir, 0o755); err != nil {
		return nil, err
	}
	var err error
	if c.Target, err = tcptarget.Start(tcptarget.Config{Mode: opt.TargetMode}); err != nil {
		return c, err
	}
	server, serverAddr, err := StartManagedServer(ctx, c.dir, im, c.Target.Addr())
	if err != nil {
		return c, err
	}
	c.Procs[RoleServer] = server
	// The broker's address, and a closed port for STUN and the NAT probe:
	// both implementations' proxies default to public servers, which must
	// not even be looked up.
	addrs, err := demo.FreeAddrs(2)
	if err != nil {
		return c, err
	}
	brokerAddr, closedAddr := addrs[0], addrs[1]
	bridges := filepath.Join(c.dir, "bridges.json")
	line := fmt.Sprintf(`{"displayName":"side-by-side","webSocketAddress":"ws://%s/","fingerprint":"2B280B23E1107BB62ABFC40DDCC8824814F80A72"}`+"\n", serverAddr)
	if err := os.WriteFile(bridges, []byte(line), 0o644); err != nil {
		return c, err
	}
	// Both brokers tell proxies when to poll next (NextPoll), and
	// Flurry's defaults to 20 s: give both the proxies' own interval, so
	// that a proxy takes a new client as often in either chain.
	intervals := filepath.Join(c.dir, "poll-intervals.json")
	ms := opt.PollInterval.Milliseconds()
	if err := os.WriteFile(intervals, fmt.Appendf(nil, `{"unrestricted_poll_interval": %d, "restricted_poll_interval": %d}`+"\n", ms, ms), 0o644); err != nil {
		return c, err
	}
	if err := c.start(ctx, RoleBroker, im.Broker, im.Env, brokerArgs(ctx, im.Broker, brokerAddr, bridges, intervals)...); err != nil {
		return c, err
	}
	if err := waitTCP(ctx, brokerAddr, c.Procs[RoleBroker]); err != nil {
		return c, fmt.Errorf("broker: %w", err)
	}
	noGeoIP := filepath.Join(c.dir, "no-geoip")
	if err := c.start(ctx, RoleProxy, im.Proxy, im.Env,
		"-broker", "http://"+brokerAddr+"/", "-relay", "ws://"+serverAddr+"/",
		"-allow-non-tls-relay", "-allow-proxying-to-private-addresses", "-keep-local-addresses",
		"-allowed-relay-hostname-pattern", relayPattern, "-poll-interval", opt.PollInterval.String(),
		"-stun", "stun:"+closedAddr, "-nat-probe-server", "http://"+closedAddr+"/probe",
		// No geoip database: Snowflake's proxy loads tor's, when tor is
		// installed, for its metrics (about 166 MB); Flurry's has none.
		"-geoipdb", noGeoIP, "-geoip6db", noGeoIP,
		"-unsafe-logging", "-log", filepath.Join(c.dir, "proxy.log")); err != nil {
		return c, err
	}
	clientEnv := append(ptEnv, "TOR_PT_CLIENT_TRANSPORTS=snowflake",
		"TOR_PT_STATE_LOCATION="+filepath.Join(c.dir, "client-state"))
	clientEnv = append(clientEnv, im.Env...)
	stdout, err := c.startPiped(ctx, RoleClient, im.Client, clientEnv,
		"-url", "http://"+brokerAddr+"/", "-keep-local-addresses", "-max", "1",
		"-unsafe-logging", "-log", filepath.Join(c.dir, "client.log"))
	if err != nil {
		return c, err
	}
	if c.SOCKSAddr, err = readCMethod(ctx, stdout); err != nil {
		return c, fmt.Errorf("client: %w", err)
	}
	return c, nil
}

// brokerArgs are the broker's command line: Snowflake's flags, and
// Flurry's operator listener turned off where the broker has one (it
// listens on a fixed port by default, which a second Flurry chain of the
// same run would find taken).
func brokerArgs(ctx context.Context, bin, addr, bridges, intervals string) []string {
	args := []string{"-addr", addr, "-disable-tls", "-bridge-list-path", bridges, "-disable-geoip", "-unsafe-logging",
		"-allowed-relay-pattern", relayPattern, "-poll-interval-filepath", intervals}
	if demo.ListFlags(ctx, bin)["metrics-addr"] {
		args = append(args, "-metrics-addr=")
	}
	return args
}

func (c *Chain) start(ctx context.Context, role, bin string, env []string, args ...string) error {
	p, err := startChild(ctx, c.dir, role, bin, env, nil, args...)
	if err != nil {
		return err
	}
	c.Procs[role] = p
	return nil
}

// startPiped starts a role whose stdout the caller reads.
func (c *Chain) startPiped(ctx context.Context, role, bin string, env []string, args ...string) (io.Reader, error) {
	r, w, err := os.Pipe()
	if err != nil {
		return nil, err
	}
	p, err := startChild(ctx, c.dir, role, bin, env, w, args...)
	w.Close()
	if err != nil {
		r.Close()
		return nil, err
	}
	c.Procs[role] = p
	return r, nil
}

// readCMethod reads a PT client's stdout until its SOCKS address.
func readCMethod(ctx context.Context, r io.Reader) (string, error) {
	found := make(chan string, 1)
	go func() {
		sc := bufio.NewScanner(r)
		for sc.Scan() {
			f := strings.Fields(sc.Text())
			if len(f) >= 4 && f[0] == "CMETHOD" && f[1] == "snowflake" && f[2] == "socks5" {
				found <- f[3]
				break
			}
		}
		found <- ""
		_, _ = io.Copy(io.Discard, r) // never block the client on a full pipe
	}()
	t := time.NewTimer(30 * time.Second)
	defer t.Stop()
	select {
	case addr := <-found:
		if addr == "" {
			return "", errors.New("no CMETHOD line")
		}
		if err := measure.CheckHostPort(addr, false); err != nil {
			return "", err
		}
		return addr, nil
	case <-t.C:
		return "", errors.New("no CMETHOD line within 30s")
	case <-ctx.Done():
		return "", ctx.Err()
	}
}

// waitTCP waits until something listens on addr (at most 30 s) or p exits.
func waitTCP(ctx context.Context, addr string, p *childproc.Process) error {
	deadline := time.Now().Add(30 * time.Second)
	for time.Now().Before(deadline) {
		c, err := net.DialTimeout("tcp", addr, time.Second)
		if err == nil {
			c.Close()
			return nil
		}
		select {
		case <-p.Done():
			return errors.New("exited")
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(50 * time.Millisecond):
		}
	}
	return fmt.Errorf("nothing listens on %s", addr)
}

// Stop ends the chain's processes, client first, and its target.
func (c *Chain) Stop() {
	for _, role := range Roles {
		if p := c.Procs[role]; p != nil {
			StopChild(p)
		}
	}
	if c.Target != nil {
		c.Target.Close()
	}
}

// CPUTimes reads each role's CPU time so far.
func (c *Chain) CPUTimes() map[string]time.Duration {
	m := map[string]time.Duration{}
	for role, p := range c.Procs {
		if s, err := procstat.ReadProc(p.PID()); err == nil {
			m[role] = s.CPU
		}
	}
	return m
}
