// Package censor holds the censor programs of the network lab: each one
// judges every IP packet that crosses the lab's middlebox and may drop it.
package censor

import (
	"strings"
	"time"
)

// Direction says which way a packet crosses the box.
type Direction uint8

const (
	// Outbound packets go from the client side to the outside.
	Outbound Direction = iota
	// Inbound packets go from the outside to the client side.
	Inbound
)

// Verdict is a program's decision about one packet.
type Verdict uint8

const (
	// Pass lets the packet through.
	Pass Verdict = iota
	// Drop discards the packet.
	Drop
)

// A Program inspects every IP packet crossing the box, in order, from one
// goroutine.
type Program interface {
	Name() string
	// Judge decides about pkt, a raw IPv4 or IPv6 packet as read from TUN;
	// it must not keep pkt.
	Judge(now time.Time, dir Direction, pkt []byte) Verdict
}

// Chain composes programs: a packet passes only if every program passes it;
// the first Drop ends the chain.
func Chain(programs ...Program) Program { return chain(programs) }

type chain []Program

func (c chain) Name() string {
	names := make([]string, len(c))
	for i, p := range c {
		names[i] = p.Name()
	}
	return strings.Join(names, ",")
}

func (c chain) Judge(now time.Time, dir Direction, pkt []byte) Verdict {
	for _, p := range c {
		if p.Judge(now, dir, pkt) == Drop {
			return Drop
		}
	}
	return Pass
}
