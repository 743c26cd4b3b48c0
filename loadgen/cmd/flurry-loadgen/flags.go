package main

import (
	"context"
	"flag"
	"fmt"
	"io"
	"strconv"
	"strings"
	"time"

	"github.com/flurrypt/flurry/loadgen/brokerload"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/report"
)

// runFunc runs a mode once its flags are parsed.
type runFunc func(ctx context.Context, res *report.Result, progress io.Writer) error

// parseMode makes the flag set of the mode named by args[0], with the
// common flags in c, and registers the mode's flags. It returns the mode's
// run, its name ("attack <name>" for an attack) and the arguments left to
// parse, or a nil run and the exit code after printing the usage.
func parseMode(args []string, c *common, stdout, stderr io.Writer) (*flag.FlagSet, runFunc, string, []string, int) {
	mode, args := args[0], args[1:]
	fs := flag.NewFlagSet("flurry-loadgen "+mode, flag.ContinueOnError)
	fs.SetOutput(stderr)
	c.register(fs)
	switch mode {
	case "broker":
		return fs, brokerFlags(fs, c), mode, args, 0
	case "relay":
		return fs, relayFlags(fs, c, stderr), mode, args, 0
	case "chain":
		return fs, chainFlags(fs, c), mode, args, 0
	case "target":
		return fs, targetFlags(fs, c, stdout), mode, args, 0
	case "attack":
		if len(args) > 0 && (args[0] == "-h" || args[0] == "-help" || args[0] == "--help") {
			fmt.Fprint(stderr, attackUsage())
			return fs, nil, mode, nil, 0
		}
		runFn, rest, name, ok := attackFlags(fs, c, args, stderr)
		if !ok {
			return fs, nil, mode, nil, 2
		}
		mode += " " + name
		fs.Init("flurry-loadgen "+mode, flag.ContinueOnError)
		return fs, runFn, mode, rest, 0
	case "sidebyside":
		return fs, sideBySideFlags(fs, c), mode, args, 0
	case "soak":
		return fs, soakFlags(fs, c), mode, args, 0
	case "relayusers":
		return fs, relayUsersFlags(fs, c), mode, args, 0
	case "proxyusers":
		return fs, proxyUsersFlags(fs, c), mode, args, 0
	}
	fmt.Fprintf(stderr, "unknown mode %q\n\n%s", mode, usage)
	return fs, nil, mode, nil, 2
}

// common are the flags every mode has.
type common struct {
	jsonPath, svgPath string
	quiet             bool
	allowNonLoopback  bool
	insecure          bool
	maxTime           time.Duration
	progressInterval  time.Duration
}

func (c *common) register(fs *flag.FlagSet) {
	fs.StringVar(&c.jsonPath, "json", "", "write the machine-readable result to this file")
	fs.StringVar(&c.svgPath, "svg", "", "write SVG plots (latency against load, memory against connections) to this file")
	fs.BoolVar(&c.quiet, "quiet", false, "no progress lines on stderr")
	fs.BoolVar(&c.allowNonLoopback, "allow-non-loopback", false, "allow targets that are not loopback addresses (only for a test system you run)")
	fs.BoolVar(&c.insecure, "insecure", false, "skip TLS certificate verification (self-signed test servers)")
	fs.DurationVar(&c.maxTime, "max-time", 30*time.Minute, "hard limit on the whole run")
	fs.DurationVar(&c.progressInterval, "progress-interval", measure.DefaultProgressInterval, "time between progress lines")
}

// intList is a comma-separated list of integers.
type intList []int

func (l *intList) String() string {
	parts := make([]string, len(*l))
	for i, v := range *l {
		parts[i] = strconv.Itoa(v)
	}
	return strings.Join(parts, ",")
}

func (l *intList) Set(s string) error {
	*l = nil
	for part := range strings.SplitSeq(s, ",") {
		part = strings.TrimSpace(part)
		if part == "" {
			continue
		}
		v, err := strconv.Atoi(part)
		if err != nil {
			return fmt.Errorf("%q is not an integer", part)
		}
		*l = append(*l, v)
	}
	return nil
}

// mixFlag is a brokerload.Mix flag.
type mixFlag struct{ m brokerload.Mix }

func (f *mixFlag) String() string { return f.m.String() }
func (f *mixFlag) Set(s string) error {
	m, err := brokerload.ParseMix(s)
	f.m = m
	return err
}
