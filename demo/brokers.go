package demo

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"syscall"

	"github.com/flurrypt/flurry/internal/childproc"
)

// Debian's paths of the cluster's third-party servers (packages
// nats-server and haproxy).
const (
	NATSServerPath = "/usr/sbin/nats-server"
	HAProxyPath    = "/usr/sbin/haproxy"
)

// FindTool returns the path of a third-party server: debianPath if it is
// there, else name on PATH, else an error naming the Debian package.
func FindTool(debianPath, name, debianPackage string) (string, error) {
	if fi, err := os.Stat(debianPath); err == nil && fi.Mode().IsRegular() {
		return debianPath, nil
	}
	if p, err := exec.LookPath(name); err == nil {
		return p, nil
	}
	return "", fmt.Errorf("%s is not installed (apt-get install %s)", name, debianPackage)
}

// NATSConfig describes one nats-server process on loopback.
type NATSConfig struct {
	// Path is the nats-server executable. Required.
	Path string
	// Name names the server, its configuration and log file in Dir.
	Name string
	// Dir receives the configuration and log. Required.
	Dir string
	// Addr is the client listener ("127.0.0.1:port"). Required.
	Addr string
	// ClusterAddr, if set, is this node's route listener; Routes are the
	// other nodes' route listeners ("127.0.0.1:port").
	ClusterAddr string
	Routes      []string
}

// StartNATS writes a configuration for cfg and starts nats-server with it,
// returning once it accepts connections. Restarting the Process restarts
// the server on the same addresses.
func StartNATS(ctx context.Context, cfg NATSConfig) (*childproc.Process, error) {
	if cfg.Path == "" || cfg.Dir == "" || cfg.Addr == "" || cfg.Name == "" {
		return nil, fmt.Errorf("%w: NATSConfig needs Path, Name, Dir and Addr", ErrInvalidConfig)
	}
	var b strings.Builder
	fmt.Fprintf(&b, "server_name: %q\nlisten: %q\n", cfg.Name, cfg.Addr)
	if cfg.ClusterAddr != "" {
		fmt.Fprintf(&b, "cluster {\n  name: \"flurry\"\n  listen: %q\n  routes: [", cfg.ClusterAddr)
		for i, r := range cfg.Routes {
			if i > 0 {
				b.WriteString(", ")
			}
			fmt.Fprintf(&b, "%q", "nats-route://"+r)
		}
		b.WriteString("]\n}\n")
	}
	path := filepath.Join(cfg.Dir, cfg.Name+".conf")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	return childproc.Start(ctx, childproc.Config{
		Name: cfg.Name, Path: cfg.Path, Args: []string{"-c", path},
		LogPath:    filepath.Join(cfg.Dir, cfg.Name+".log"),
		Supervisor: "demo",
		Ready:      TCPReady(cfg.Addr),
		// nats-server exits 0 on SIGINT, 1 on SIGTERM.
		StopSignal: syscall.SIGINT,
	})
}

// HAProxyConfig describes an HAProxy in front of a cluster of brokers.
type HAProxyConfig struct {
	// Path is the haproxy executable. Required.
	Path string
	// Dir receives haproxy.cfg and haproxy.log. Required.
	Dir string
	// Addr is the frontend ("127.0.0.1:port"). Required.
	Addr string
	// Brokers are the brokers' plain-HTTP addresses. Required.
	Brokers []string
}

// StartHAProxy writes haproxy.cfg for cfg — round robin over the brokers,
// health checks on /healthz every 500 ms, connection failures dispatched
// to another broker, 3 s for a graceful stop — and starts HAProxy in the foreground, returning once
// its frontend accepts connections.
func StartHAProxy(ctx context.Context, cfg HAProxyConfig) (*childproc.Process, error) {
	if cfg.Path == "" || cfg.Dir == "" || cfg.Addr == "" || len(cfg.Brokers) == 0 {
		return nil, fmt.Errorf("%w: HAProxyConfig needs Path, Dir, Addr and Brokers", ErrInvalidConfig)
	}
	var b strings.Builder
	// maxconn stays within a default file descriptor limit. The timeouts
	// exceed the broker's longest hold (10 s proxy polls).
	fmt.Fprintf(&b, `global
  maxconn 2000
  hard-stop-after 3s

defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  timeout http-keep-alive 30s
  retries 2
  option redispatch
  # A broker connection serves one client connection and closes with it.
  http-reuse never

frontend brokers
  bind %s
  default_backend brokers

backend brokers
  balance roundrobin
  option httpchk GET /healthz
  http-check expect status 200
  default-server inter 500ms fall 2 rise 2
`, cfg.Addr)
	for i, addr := range cfg.Brokers {
		fmt.Fprintf(&b, "  server broker%d %s check\n", i+1, addr)
	}
	path := filepath.Join(cfg.Dir, "haproxy.cfg")
	if err := os.WriteFile(path, []byte(b.String()), 0o644); err != nil {
		return nil, err
	}
	return childproc.Start(ctx, childproc.Config{
		Name: "haproxy", Path: cfg.Path, Args: []string{"-db", "-f", path},
		LogPath:    filepath.Join(cfg.Dir, "haproxy.log"),
		Supervisor: "demo",
		Ready:      TCPReady(cfg.Addr),
		// SIGTERM is HAProxy's hard stop, which ends it by the signal;
		// SIGUSR1 stops it gracefully (within hard-stop-after).
		StopSignal: syscall.SIGUSR1,
	})
}
