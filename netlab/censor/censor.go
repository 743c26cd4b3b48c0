package censor

import (
	"fmt"
	"net/netip"
	"strings"
	"time"
)

// Direction is the way a packet crosses the box.
type Direction uint8

// The directions.
const (
	Outbound Direction = iota // client side -> outside
	Inbound                   // outside -> client side
)

// Verdict is what a program decides for a packet.
type Verdict uint8

// The verdicts.
const (
	Pass Verdict = iota
	Drop
)

// A Program inspects every IP packet crossing the box, in order, from one
// goroutine.
type Program interface {
	Name() string
	// Judge decides pkt's fate. pkt is a raw IPv4 or IPv6 packet as read
	// from TUN; it must not be kept.
	Judge(now time.Time, dir Direction, pkt []byte) Verdict
}

// Options carries what the programs need. The zero value works: every
// zero field means the default its comment gives.
type Options struct {
	// BlockAddrs: sni-block drops TCP to and from these prefixes.
	BlockAddrs []netip.Prefix
	// BlockNames: sni-block drops TLS flows whose ClientHello's SNI is one
	// of these names or a subdomain of one (case-insensitive).
	BlockNames []string
	// BlockJA4: dtls-ja4-block's list; nil means DefaultBlockJA4.
	BlockJA4 []string
	// AllowJA4: dtls-allowlist's list; empty drops every DTLS flow.
	AllowJA4 []string
	// BlockDelay: how long after a listed hello dtls-ja4-block starts
	// dropping the flow; zero means 300 ms.
	BlockDelay time.Duration
	// CutAfterBytes: application-data bytes (both directions) after which
	// cut-after-handshake drops the flow; zero means 4096.
	CutAfterBytes int
	// TunnelDropOver: tunnel-shape drops UDP payloads longer than this on
	// a matched flow; zero means 200.
	TunnelDropOver int
	// STUNAddrs: stun-block drops STUN binding messages to and from these
	// prefixes only; empty means all.
	STUNAddrs []netip.Prefix
	// ThrottleRate: udp-throttle's rate per flow in bits per second; zero
	// means 256 kbit/s.
	ThrottleRate int
	// ThrottleBurst: udp-throttle's bucket size in bytes; zero means 16 KiB.
	ThrottleBurst int
	// MaxFlows: flows each program remembers; zero means 65536.
	MaxFlows int
	// FlowIdle: how long an idle flow is remembered; zero means 2 minutes.
	FlowIdle time.Duration
}

// Defaults of Options.
const (
	DefaultBlockDelay     = 300 * time.Millisecond
	DefaultCutAfterBytes  = 4096
	DefaultTunnelDropOver = 200
	DefaultThrottleRate   = 256_000
	DefaultThrottleBurst  = 16 << 10
	DefaultMaxFlows       = 65536
	DefaultFlowIdle       = 2 * time.Minute
)

// withDefaults returns a copy of o with defaults filled in, or an error
// for a negative field.
func (o Options) withDefaults() (Options, error) {
	if o.BlockDelay < 0 || o.CutAfterBytes < 0 || o.TunnelDropOver < 0 ||
		o.ThrottleRate < 0 || o.ThrottleBurst < 0 || o.MaxFlows < 0 || o.FlowIdle < 0 {
		return o, fmt.Errorf("%w: negative value", ErrOptions)
	}
	if o.BlockDelay == 0 {
		o.BlockDelay = DefaultBlockDelay
	}
	if o.CutAfterBytes == 0 {
		o.CutAfterBytes = DefaultCutAfterBytes
	}
	if o.TunnelDropOver == 0 {
		o.TunnelDropOver = DefaultTunnelDropOver
	}
	if o.ThrottleRate == 0 {
		o.ThrottleRate = DefaultThrottleRate
	}
	if o.ThrottleBurst == 0 {
		o.ThrottleBurst = DefaultThrottleBurst
	}
	if o.MaxFlows == 0 {
		o.MaxFlows = DefaultMaxFlows
	}
	if o.FlowIdle == 0 {
		o.FlowIdle = DefaultFlowIdle
	}
	if o.BlockJA4 == nil {
		o.BlockJA4 = DefaultBlockJA4()
	}
	return o, nil
}

// programTable maps each name to its constructor, in the order Names
// lists them.
var programTable = [...]struct {
	name string
	make func(Options) Program
}{
	{"sni-block", newSNIBlock},
	{"dtls-ja4-block", newDTLSJA4Block},
	{"dtls-bytes-2022", newDTLSBytes2022},
	{"dtls-allowlist", newDTLSAllowlist},
	{"tunnel-shape", newTunnelShape},
	{"cut-after-handshake", newCutAfterHandshake},
	{"udp-block", newUDPBlock},
	{"stun-block", newSTUNBlock},
	{"udp-throttle", newUDPThrottle},
}

// Names returns the program names Parse knows.
func Names() []string {
	n := make([]string, len(programTable))
	for i, p := range programTable {
		n[i] = p.name
	}
	return n
}

// Parse builds the Chain of the programs named in spec, a comma-separated
// list (spaces around names ignored). An empty spec, or "none", is a
// Chain of no programs, which passes everything.
func Parse(spec string, opt Options) (Program, error) {
	o, err := opt.withDefaults()
	if err != nil {
		return nil, err
	}
	spec = strings.TrimSpace(spec)
	if spec == "" || spec == "none" {
		return Chain(), nil
	}
	var ps []Program
	seen := map[string]bool{}
	for name := range strings.SplitSeq(spec, ",") {
		name = strings.TrimSpace(name)
		if seen[name] {
			return nil, fmt.Errorf("censor program %q named twice", name)
		}
		seen[name] = true
		p := build(name, o)
		if p == nil {
			return nil, fmt.Errorf("%w %q (known: %s)", ErrUnknownProgram, name, strings.Join(Names(), ", "))
		}
		ps = append(ps, p)
	}
	return Chain(ps...), nil
}

func build(name string, o Options) Program {
	for _, p := range programTable {
		if p.name == name {
			return p.make(o)
		}
	}
	return nil
}

// Chain returns a Program that shows every packet to each of ps in order
// and drops it if any of them does: the first Drop decides, but every
// program still sees the packet, so their flow state stays whole.
func Chain(ps ...Program) Program {
	c := chain{ps: append([]Program(nil), ps...)}
	names := make([]string, len(ps))
	for i, p := range ps {
		names[i] = p.Name()
	}
	c.name = strings.Join(names, ",")
	if c.name == "" {
		c.name = "none"
	}
	return &c
}

type chain struct {
	name string
	ps   []Program
}

func (c *chain) Name() string { return c.name }

func (c *chain) Judge(now time.Time, dir Direction, pkt []byte) Verdict {
	v := Pass
	for _, p := range c.ps {
		if p.Judge(now, dir, pkt) == Drop {
			v = Drop
		}
	}
	return v
}
