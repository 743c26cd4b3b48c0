// Command idlemem measures what an idle WebSocket carrier costs the relay.
//
// It starts a relay in a child process (so that the clients' own memory is
// not counted), opens -n WebSocket connections to it (plain, or TLS with
// -tls), each sending the turbotunnel token and a fresh ClientID and then
// idling, and reports the relay's memory per connection: Go heap objects
// plus goroutine stacks (runtime/metrics), and the process's RSS. Run it as
//
//	go run ./relay/internal/cmd/idlemem -n 10000
//	go run ./relay/internal/cmd/idlemem -n 10000 -tls
//
// Results are recorded in docs/performance.md, section "Relay".
package main

import (
	"context"
	"errors"
	"flag"
	"fmt"
	"os"
)

// options are idlemem's flags.
type options struct {
	n, parallel   int
	useTLS, serve bool
}

func parseFlags(fs *flag.FlagSet, args []string) (*options, error) {
	var o options
	fs.IntVar(&o.n, "n", 1000, "number of idle connections")
	fs.BoolVar(&o.useTLS, "tls", false, "connect with TLS (wss://)")
	fs.IntVar(&o.parallel, "parallel", 16, "connections opened concurrently")
	fs.BoolVar(&o.serve, "serve", false, "internal: run the relay side (the child process)")
	if err := fs.Parse(args); err != nil {
		return nil, err
	}
	if fs.NArg() > 0 {
		return nil, fmt.Errorf("unexpected arguments: %q", fs.Args())
	}
	return &o, nil
}

func main() {
	os.Exit(run(os.Args[1:]))
}

func run(args []string) int {
	o, err := parseFlags(flag.NewFlagSet("idlemem", flag.ContinueOnError), args)
	if errors.Is(err, flag.ErrHelp) {
		return 0
	} else if err != nil {
		fmt.Fprintln(os.Stderr, "idlemem:", err)
		return 2
	}
	raiseFileLimit()
	if o.serve {
		if err := serve(context.Background(), o.useTLS, os.Stdin, os.Stdout); err != nil {
			fmt.Fprintln(os.Stderr, err)
			return 1
		}
		return 0
	}
	srv, err := startChild(o.useTLS)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	defer srv.stop()
	res, err := measure(srv, o.n, o.useTLS, o.parallel)
	if err != nil {
		fmt.Fprintln(os.Stderr, err)
		return 1
	}
	fmt.Print(res.String())
	return 0
}
