package censor

import "slices"

// maxHelloLen bounds a reassembled ClientHello. Chromium's, with its
// post-quantum key share, is about 1.8 KB; a handshake message may claim up
// to 16 MB, which a censor would not buffer either.
const maxHelloLen = 16 << 10

// maxHelloFragments bounds the fragments one hello may come in.
const maxHelloFragments = 32

// HelloReassembler puts together the first DTLS ClientHello of a flow
// from its handshake fragments, which may arrive in several records of one
// datagram or in several datagrams (Chromium's hello, with its ML-KEM key
// share, does not fit one). Its zero value is ready; it holds at most
// maxHelloLen bytes.
type HelloReassembler struct {
	started bool
	seq     int // message_seq of the hello being collected
	length  int
	body    []byte
	spans   [][2]int // received [from, to) ranges, sorted and merged
	done    bool     // a hello was returned, or failed
	failed  bool
}

// Add feeds one datagram (a UDP payload) and returns the ClientHello once
// its fragments cover the whole message. A hello with a new message_seq
// (the one resent with a cookie) starts over. After a hello has been
// returned, or when the fragments make no sense (sizes that disagree, too
// long, too many pieces), Add returns false for ever after.
func (r *HelloReassembler) Add(b []byte) (*ClientHello, bool) {
	if r.done {
		return nil, false
	}
	for len(b) > 0 {
		rec, rest, ok := nextRecord(b)
		if !ok {
			return nil, false // not DTLS: not this flow's hello
		}
		b = rest
		if rec.typ != contentHandshake || rec.epoch != 0 {
			continue
		}
		for m := rec.body; len(m) >= dtlsHandshakeHeaderLen; {
			length := int(m[1])<<16 | int(m[2])<<8 | int(m[3])
			seq := int(m[4])<<8 | int(m[5])
			off := int(m[6])<<16 | int(m[7])<<8 | int(m[8])
			flen := int(m[9])<<16 | int(m[10])<<8 | int(m[11])
			if len(m)-dtlsHandshakeHeaderLen < flen {
				break
			}
			typ, frag := m[0], m[dtlsHandshakeHeaderLen:dtlsHandshakeHeaderLen+flen]
			m = m[dtlsHandshakeHeaderLen+flen:]
			if typ != handshakeClientHello {
				continue
			}
			if h, ok := r.fragment(length, seq, off, frag); ok {
				return h, true
			}
			if r.done {
				return nil, false
			}
		}
	}
	return nil, false
}

// fragment adds one ClientHello fragment.
func (r *HelloReassembler) fragment(length, seq, off int, frag []byte) (*ClientHello, bool) {
	if !r.started || seq != r.seq {
		r.started = true
		r.seq, r.length, r.body, r.spans = seq, length, r.body[:0], r.spans[:0]
		if length > maxHelloLen {
			return r.fail()
		}
		r.body = slices.Grow(r.body, length)[:length]
	}
	end := off + len(frag)
	if length != r.length || end > length || len(r.spans) >= maxHelloFragments {
		return r.fail()
	}
	copy(r.body[off:end], frag)
	r.addSpan(off, end)
	if len(r.spans) != 1 || r.spans[0] != [2]int{0, length} {
		return nil, false
	}
	h, ok := parseClientHello(r.body, true)
	r.done, r.body, r.spans = true, nil, nil // h owns the bytes now
	if !ok || h.Truncated {
		return r.fail()
	}
	return h, true
}

// fail gives up on the flow's hello and frees what was collected.
func (r *HelloReassembler) fail() (*ClientHello, bool) {
	r.done, r.failed, r.body, r.spans = true, true, nil, nil
	return nil, false
}

// Failed reports whether the reassembler gave up: its fragments made no
// sense, or the hello they made is malformed.
func (r *HelloReassembler) Failed() bool { return r.failed }

// addSpan records [from, to) as received, merging it with the spans it
// touches.
func (r *HelloReassembler) addSpan(from, to int) {
	if from >= to {
		return
	}
	out := r.spans[:0:0]
	for _, s := range r.spans {
		if s[1] < from || s[0] > to {
			out = append(out, s)
			continue
		}
		from, to = min(from, s[0]), max(to, s[1])
	}
	out = append(out, [2]int{from, to})
	slices.SortFunc(out, func(a, b [2]int) int { return a[0] - b[0] })
	r.spans = out
}

// JA4OfDatagrams returns the JA4 of the first DTLS ClientHello in a
// sequence of datagrams (UDP payloads of one flow and direction, in
// order), reassembling a hello sent in fragments.
func JA4OfDatagrams(dgs [][]byte) (string, bool) {
	var r HelloReassembler
	for _, b := range dgs {
		if h, ok := r.Add(b); ok {
			return h.JA4(), true
		}
	}
	return "", false
}
