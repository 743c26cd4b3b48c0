package censor

import "time"

// The size signature of tunnel-shape, in DTLS application_data record
// lengths (the record's length field: ciphertext with explicit nonce and
// tag).
const (
	shapeWindow    = 12   // records looked at per flow, both directions
	shapeHelloMin  = 250  // client's TLS-ClientHello-sized record: at least
	shapeHelloMax  = 1000 // and at most
	shapeAckMax    = 150  // a SACK-sized record: at most
	shapeAcks      = 3    // SACK-sized server records allowed before the ServerHello
	shapeServerMin = 1000 // server's ServerHello-flight-sized record: at least
)

// Stages of a tunnel-shape flow.
const (
	shapeWantHello uint8 = iota
	shapeWantServer
	shapeMatched
	shapeDone // not a tunnel; no longer looked at
)

type shapeState struct {
	clientOut bool // the DTLS client is on the client side
	stage     uint8
	records   uint8
	acks      uint8
}

// tunnelShape models China's 2023 blocking of TLS tunnelled inside DTLS
// (net4people/bbs #255): a DTLS flow whose first round trip has the sizes
// of a TLS handshake carried inside loses every large packet afterwards.
//
// The signature, over the first 12 application_data records (content type
// 23) of a flow whose ClientHello the program saw, counting both
// directions, with lengths taken from the DTLS record header:
//
//  1. records of at most 150 bytes (SCTP control, acknowledgements) are
//     skipped, on either side;
//  2. the DTLS client's first longer record is 250 to 1000 bytes (a TLS
//     ClientHello plus the tunnel's framing); if it is longer the flow is
//     not a match;
//  3. the DTLS server then sends up to 3 records of at most 150 bytes (a
//     SACK) and then one of at least 1000 bytes (a ServerHello flight); any
//     other record longer than 150 bytes first, from either side, means no
//     match.
//
// Once matched, every UDP packet of the flow whose payload is longer than
// Options.TunnelDropOver (default 200) bytes is dropped, both directions,
// the completing record's packet included.
//
// What gets through: a client that pads its first flight so that its first
// application_data record over 150 bytes is longer than 1000 bytes (with
// pion's default 1200-byte MTU, a first flight padded to fill one
// MTU-sized record), or a server whose first record over 150 bytes is
// shorter than 1000 bytes.
type tunnelShape struct {
	d     decoder
	over  int
	flows *flowTable[shapeState]
}

func newTunnelShape(o Options) Program {
	return &tunnelShape{over: o.TunnelDropOver, flows: newFlowTable[shapeState](o.MaxFlows, o.FlowIdle)}
}

func (t *tunnelShape) Name() string { return "tunnel-shape" }

func (t *tunnelShape) Judge(now time.Time, dir Direction, pkt []byte) Verdict {
	p, ok := t.d.decode(pkt)
	if !ok || p.proto != protoUDP {
		return Pass
	}
	k := p.key(dir)
	st := t.flows.get(now, k)
	// A hello, or any fragment of one, (re)starts the flow's watch.
	if maybeClientHello(p.payload) && (st == nil || st.stage != shapeMatched) {
		*t.flows.put(now, k) = shapeState{clientOut: dir == Outbound}
		return Pass
	}
	if st == nil {
		return Pass
	}
	fromClient := (dir == Outbound) == st.clientOut
	for b := p.payload; len(b) > 0 && st.stage < shapeMatched; {
		r, rest, ok := nextRecord(b)
		if !ok {
			break
		}
		b = rest
		if r.typ != contentApplicationData {
			continue
		}
		st.records++
		n := len(r.body)
		switch {
		case n <= shapeAckMax:
			if st.stage == shapeWantServer && !fromClient {
				st.acks++
				if st.acks > shapeAcks {
					st.stage = shapeDone
				}
			}
		case st.stage == shapeWantHello:
			if fromClient && n >= shapeHelloMin && n <= shapeHelloMax {
				st.stage = shapeWantServer
			} else {
				st.stage = shapeDone
			}
		default: // shapeWantServer
			if !fromClient && n >= shapeServerMin {
				st.stage = shapeMatched
			} else {
				st.stage = shapeDone
			}
		}
		if st.stage < shapeMatched && st.records >= shapeWindow {
			st.stage = shapeDone
		}
	}
	if st.stage == shapeMatched && len(p.payload) > t.over {
		return Drop
	}
	return Pass
}

type cutState struct {
	clientOut   bool
	ccsClient   bool
	ccsServer   bool
	established bool
	cut         bool
	bytes       int
}

// cutAfterHandshake models the blocking of Snowflake in Russia from
// November 2024 (net4people/bbs #422), where WebRTC connections were set
// up and then cut after little data: once a DTLS flow's handshake is
// complete (ChangeCipherSpec seen from both sides, or the first
// application_data record seen) and Options.CutAfterBytes (default 4096)
// application_data bytes (record lengths, both directions) have crossed the
// box, every later packet of the flow is dropped, both directions, the one
// that crossed the threshold included. Only flows whose ClientHello (or a
// fragment of it) the program saw are tracked.
type cutAfterHandshake struct {
	d     decoder
	after int
	flows *flowTable[cutState]
}

func newCutAfterHandshake(o Options) Program {
	return &cutAfterHandshake{after: o.CutAfterBytes, flows: newFlowTable[cutState](o.MaxFlows, o.FlowIdle)}
}

func (c *cutAfterHandshake) Name() string { return "cut-after-handshake" }

func (c *cutAfterHandshake) Judge(now time.Time, dir Direction, pkt []byte) Verdict {
	p, ok := c.d.decode(pkt)
	if !ok || p.proto != protoUDP {
		return Pass
	}
	k := p.key(dir)
	st := c.flows.get(now, k)
	if st != nil && st.cut {
		return Drop
	}
	if st == nil {
		// A hello, or the first fragment of one, starts the watch.
		if !maybeClientHello(p.payload) {
			return Pass
		}
		st = c.flows.put(now, k)
		st.clientOut = dir == Outbound
		return Pass
	}
	fromClient := (dir == Outbound) == st.clientOut
	for b := p.payload; len(b) > 0; {
		r, rest, ok := nextRecord(b)
		if !ok {
			break
		}
		b = rest
		switch r.typ {
		case contentChangeCipherSpec:
			if fromClient {
				st.ccsClient = true
			} else {
				st.ccsServer = true
			}
			st.established = st.established || st.ccsClient && st.ccsServer
		case contentApplicationData:
			st.established = true
			st.bytes += len(r.body)
		}
	}
	if st.established && st.bytes >= c.after {
		st.cut = true
		return Drop
	}
	return Pass
}
