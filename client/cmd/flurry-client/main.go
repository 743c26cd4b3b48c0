// Command flurry-client is Flurry's client: a Tor pluggable transport
// ("snowflake", wire-compatible with Snowflake v2.14.1) that reaches a bridge
// through volunteer WebRTC proxies, or, with -socks, a plain SOCKS5 proxy
// whose every connection is carried to whatever the relay forwards to. It
// turns flags into a client.Config and serves client/socksserver on tor's
// listeners or on -socks. See docs/client.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"net"
	"os"
	"os/signal"
	"path/filepath"
	"syscall"

	"github.com/flurrypt/flurry/client"
	"github.com/flurrypt/flurry/client/socksserver"
	"github.com/flurrypt/flurry/common/version"
	"github.com/flurrypt/flurry/internal/pionruntime"
	"github.com/flurrypt/flurry/internal/servercmd"
	"github.com/flurrypt/flurry/internal/torpt"
)

func main() {
	pionruntime.Apply(pionruntime.ClientMaxProcs)
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	cfg, o, err := parseFlags(flag.NewFlagSet("flurry-client", flag.ContinueOnError), args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-client:", err)
		return 2
	}
	if o.showVersion {
		fmt.Println(version.Line("flurry-client"))
		return 0
	}
	managed, noBroker := o.socks == "", cfg.BrokerURL == "" && cfg.SQSQueueURL == ""
	if managed && !torpt.Managed() {
		fmt.Fprintln(os.Stderr, "flurry-client: not started by tor (no TOR_PT_* environment); use -socks ADDR to run a plain SOCKS5 proxy, or -h for help")
		return 2
	}
	if !managed && noBroker {
		fmt.Fprintf(os.Stderr, "flurry-client: set -url to the broker's URL (and -fronts, -ice as your bridge line says). For example, Tor's Snowflake bridge lines are:\n  %s\n", torBridgeLines)
		return 2
	}
	log, closeLog, err := newLogger(o, managed)
	if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-client:", err)
		return 1
	}
	defer closeLog()
	cfg.Logger = log
	if managed && noBroker {
		log.Info("no -url: each bridge line must carry url=")
	}
	ctx, stop := signal.NotifyContext(context.Background(), syscall.SIGINT, syscall.SIGTERM)
	defer stop()
	if managed {
		return runManaged(ctx, stop, cfg, log)
	}
	return runSOCKS(ctx, cfg, log, o.socks)
}

// newLogger opens the log: -log (relative to the state directory with
// -log-to-state-dir), else nothing under tor (tor reads our stderr; writing
// there can block old tors) and stderr with -socks. IP addresses are
// scrubbed unless -unsafe-logging.
func newLogger(o *options, managed bool) (*slog.Logger, func(), error) {
	path := o.logFile
	if path != "" && o.logToStateDir {
		dir, err := torpt.MakeStateDir()
		if err != nil {
			return nil, nil, fmt.Errorf("-log-to-state-dir: %w", err)
		}
		path = filepath.Join(dir, path)
	}
	var fallback io.Writer = os.Stderr
	if managed {
		fallback = nil
	}
	return servercmd.OpenLog(path, fallback, servercmd.LogOptions{Unsafe: o.unsafeLogging})
}

// runManaged is the tor pluggable-transport mode.
func runManaged(ctx context.Context, stop context.CancelFunc, cfg client.Config, log *slog.Logger) int {
	info, err := torpt.ClientSetup("flurry-client")
	if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-client:", err)
		return 1
	}
	proxyURL, err := torpt.UpstreamProxy(ctx, info, client.CheckSOCKS5Proxy)
	if err != nil {
		return 1
	}
	if proxyURL != "" {
		if cfg.SOCKS5Proxy != "" && cfg.SOCKS5Proxy != proxyURL {
			log.Info("tor's proxy (TOR_PT_PROXY) replaces -socks5-proxy")
		}
		cfg.SOCKS5Proxy = proxyURL
		log.Info("all traffic goes through tor's SOCKS5 proxy")
	}
	torpt.ExitOnStdinClose(func() {
		log.Info("stdin closed: exiting")
		stop()
	})
	// Each step goes to tor's log and, with its time, to -log.
	onEvent := func(e client.Event) {
		torpt.LogNotice(e.String())
		log.Info(e.String())
	}
	srv, err := socksserver.New(socksserver.Config{Client: cfg, Logger: log, OnEvent: onEvent})
	if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-client:", err)
		torpt.ClientFailed(err)
		return 1
	}
	return serve(ctx, srv, torpt.ClientListen(info.MethodNames, log), log)
}

// runSOCKS is the plain SOCKS5 mode.
func runSOCKS(ctx context.Context, cfg client.Config, log *slog.Logger, addr string) int {
	if cfg.SOCKS5Proxy != "" {
		// As under tor: check the proxy's UDP support before serving.
		if err := client.CheckSOCKS5Proxy(ctx, cfg.SOCKS5Proxy); err != nil {
			fmt.Fprintln(os.Stderr, "flurry-client:", err)
			return 1
		}
		log.Info("SOCKS5 proxy accepts UDP ASSOCIATE: all traffic goes through it")
	}
	srv, err := socksserver.New(socksserver.Config{Client: cfg, Logger: log, OnEvent: func(e client.Event) { log.Info(e.String()) }})
	if err != nil {
		fmt.Fprintln(os.Stderr, "flurry-client:", err)
		return 1
	}
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		srv.Close()
		fmt.Fprintln(os.Stderr, "flurry-client:", err)
		return 1
	}
	log.Info("SOCKS5 proxy listening (the CONNECT destination is ignored: streams go to the relay's target)", "addr", ln.Addr().String())
	fmt.Fprintf(os.Stderr, "flurry-client: SOCKS5 proxy on %s\n", ln.Addr())
	return serve(ctx, srv, []net.Listener{ln}, log)
}

// serve runs srv on every listener until ctx ends or one fails for good:
// then the process exits with status 1 rather than stay up accepting
// nothing.
func serve(ctx context.Context, srv *socksserver.Server, lns []net.Listener, log *slog.Logger) int {
	defer srv.Close()
	if len(lns) == 0 {
		return 1
	}
	if err := srv.ServeAll(ctx, lns...); err != nil {
		log.Error("SOCKS accept failed; exiting", "err", err)
		return 1
	}
	return 0
}
