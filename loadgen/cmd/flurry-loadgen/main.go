// Command flurry-loadgen measures a Flurry or Snowflake broker, relay or
// demo chain over the wire protocol only. See `flurry-loadgen -h` and the
// "Load generator" section of docs/performance.md.
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"os/signal"
	"syscall"

	"github.com/flurrypt/flurry/common/version"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/report"
)

const usage = `usage: flurry-loadgen <mode> [flags]

modes:
  broker   simulated proxies and clients against a broker (/proxy, /client, /answer)
  relay    idle WebSocket carriers (memory per carrier) and KCP+smux throughput through a relay
  chain    throughput and time to first byte through a SOCKS5 proxy (a running chain)
  target   a TCP echo, sink, source or random source on loopback, to be a relay's -forward target
  attack   an attack on a broker, relay or any server, beside honest load where it applies ("flurry-loadgen attack" lists them)
  soak     a whole chain of real binaries for a long time with clients arriving and leaving, proxies
           killed and the broker restarting: RSS and goroutines of every process, flagged if they grow
  sidebyside  starts the chains of several implementations (Flurry's, Snowflake's binaries) and
           downloads through them in turn: MB/s, CPU per MB per process, peak RSS, pauses, UDP drops
  relayusers  several implementations' relays in turn under 100, 500, 2000 users (bulk and
           interactive, each its own session as through a proxy): CPU per MB, memory per session,
           starvation
  proxyusers  several implementations' chains in turn, 1, 10, 50 users through one proxy: the
           proxy's peak and steady RSS, CPU per MB, starvation

Every target must be a loopback address unless -allow-non-loopback is given.
Every run stops by itself (durations and counts; -max-time bounds the whole run).
Run "flurry-loadgen <mode> -h" for the flags of a mode, "flurry-loadgen -version" for the version.
`

func main() {
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt, syscall.SIGTERM)
	code := run(ctx, os.Args[1:], os.Stdout, os.Stderr)
	stop()
	os.Exit(code)
}

func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	if len(args) == 0 || args[0] == "-h" || args[0] == "-help" || args[0] == "--help" {
		fmt.Fprint(stderr, usage)
		if len(args) == 0 {
			return 2
		}
		return 0
	}
	if args[0] == "-version" || args[0] == "--version" {
		fmt.Fprintln(stdout, version.Line("flurry-loadgen"))
		return 0
	}
	var c common
	fs, runFn, mode, args, code := parseMode(args, &c, stdout, stderr)
	if runFn == nil {
		return code
	}
	if err := fs.Parse(args); err != nil {
		if errors.Is(err, flag.ErrHelp) {
			return 0
		}
		return 2
	}
	if fs.NArg() > 0 {
		fmt.Fprintf(stderr, "unexpected arguments: %v\n", fs.Args())
		return 2
	}
	ctx, cancel := context.WithTimeout(ctx, c.maxTime)
	defer cancel()
	var progress io.Writer = stderr
	if c.quiet {
		progress = nil
	}
	res := report.NewResult(mode)
	err := runFn(ctx, &res, progress)
	if err != nil {
		res.Error = err.Error()
	}
	if werr := res.WriteTables(stdout); werr != nil && err == nil {
		err = werr
	}
	if code := writeOutputs(c, res, stderr); code != 0 {
		return code
	}
	if err != nil {
		fmt.Fprintf(stderr, "flurry-loadgen %s: %v\n", mode, err)
		if errors.Is(err, measure.ErrInvalidConfig) || errors.Is(err, measure.ErrNotLoopback) {
			return 2
		}
		return 1
	}
	return 0
}

// writeOutputs writes res to the -json and -svg files, if asked; it
// returns 1 after a failed write.
func writeOutputs(c common, res report.Result, stderr io.Writer) int {
	if c.jsonPath != "" {
		if werr := writeFile(c.jsonPath, res.WriteJSON); werr != nil {
			fmt.Fprintf(stderr, "write %s: %v\n", c.jsonPath, werr)
			return 1
		}
	}
	if c.svgPath != "" {
		if werr := writeFile(c.svgPath, res.WriteSVG); werr != nil {
			fmt.Fprintf(stderr, "write %s: %v\n", c.svgPath, werr)
			return 1
		}
	}
	return 0
}

func writeFile(path string, write func(io.Writer) error) error {
	f, err := os.Create(path)
	if err != nil {
		return err
	}
	if err := write(f); err != nil {
		f.Close()
		return err
	}
	return f.Close()
}
