// Command flurry-netlab builds Flurry's network lab (package netlab): two
// network namespaces joined by a user-space middlebox that shapes and
// censors every packet between them. It runs a command on the client side,
// or measures the TCP reference download through the box. It needs root.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"log/slog"
	"os"
	"os/exec"
	"os/signal"
	"syscall"
	"time"

	"github.com/flurrypt/flurry/common/version"
	"github.com/flurrypt/flurry/netlab"
	"github.com/flurrypt/flurry/netlab/censor"
)

func main() {
	os.Exit(run(os.Args[1:], os.Stdout, os.Stderr))
}

func run(args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" || args[0] == "help" {
		var o options
		newFlagSet("tcpref", &o, stderr).Usage()
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "-version" || args[0] == "--version" {
		fmt.Fprintln(stdout, version.Line("flurry-netlab"))
		return 0
	}
	mode := args[0]
	if mode != "run" && mode != "tcpref" {
		fmt.Fprintf(stderr, "flurry-netlab: unknown mode %q (run, tcpref)\n", mode)
		return 2
	}
	var o options
	fs := newFlagSet(mode, &o, stderr)
	if err := fs.Parse(args[1:]); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if err := o.fill(); err != nil {
		fmt.Fprintln(stderr, "flurry-netlab:", err)
		return 2
	}
	level := slog.LevelInfo
	if o.verbose {
		level = slog.LevelDebug
	}
	o.cfg.Logger = slog.New(slog.NewTextHandler(stderr, &slog.HandlerOptions{Level: level}))

	var size int64
	if mode == "tcpref" {
		var err error
		if size, err = parseSize(o.size); err != nil {
			fmt.Fprintln(stderr, "flurry-netlab: -size:", err)
			return 2
		}
		if fs.NArg() != 0 {
			fmt.Fprintln(stderr, "flurry-netlab: tcpref takes no arguments")
			return 2
		}
	} else if fs.NArg() == 0 {
		fmt.Fprintln(stderr, "flurry-netlab: run needs a command after --")
		return 2
	}

	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	defer stop()
	setupCtx, cancel := context.WithTimeout(ctx, time.Minute)
	lab, err := netlab.New(setupCtx, o.cfg)
	cancel()
	if err != nil {
		fmt.Fprintln(stderr, "flurry-netlab:", err)
		return 1
	}
	defer func() {
		if err := lab.Close(); err != nil {
			fmt.Fprintln(stderr, "flurry-netlab: close:", err)
		}
	}()
	fmt.Fprintf(stdout, "lab %s: up %s, down %s, censor %s\n", lab.Name(), o.cfg.Up, o.cfg.Down, censorName(o.cfg.Censor))

	if mode == "tcpref" {
		res, err := netlab.TCPReference(ctx, lab, size)
		if err != nil {
			fmt.Fprintln(stderr, "flurry-netlab:", err)
			return 1
		}
		fmt.Fprintln(stdout, "tcp reference:", res)
		fmt.Fprintln(stdout, res.Stats)
		return 0
	}
	code := runCommand(ctx, lab, fs.Args(), stderr)
	fmt.Fprintln(stdout, lab.Stats())
	return code
}

// runCommand runs args in the client namespace and returns its exit status.
func runCommand(ctx context.Context, lab *netlab.Lab, args []string, stderr io.Writer) int {
	cmd := lab.Command(netlab.Client, args[0], args[1:]...)
	cmd.Env = append(os.Environ(),
		"FLURRY_NETLAB_CLIENT_NS="+lab.Namespace(netlab.Client),
		"FLURRY_NETLAB_OUTSIDE_NS="+lab.Namespace(netlab.Outside),
		"FLURRY_NETLAB_OUTSIDE_ADDR="+lab.OutsideAddr(0).String(),
	)
	cmd.Stdin, cmd.Stdout, cmd.Stderr = os.Stdin, os.Stdout, os.Stderr
	if err := cmd.Start(); err != nil {
		fmt.Fprintln(stderr, "flurry-netlab:", err)
		return 1
	}
	stopSignal := context.AfterFunc(ctx, func() { _ = cmd.Process.Signal(syscall.SIGTERM) })
	defer stopSignal()
	err := cmd.Wait()
	if ee, ok := errors.AsType[*exec.ExitError](err); ok {
		if code := ee.ExitCode(); code >= 0 {
			return code
		}
		return 1
	}
	if err != nil {
		fmt.Fprintln(stderr, "flurry-netlab:", err)
		return 1
	}
	return 0
}

func censorName(p censor.Program) string {
	if p == nil {
		return "none"
	}
	return p.Name()
}
