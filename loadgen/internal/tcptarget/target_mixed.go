package tcptarget

import (
	"encoding/binary"
)

// The mixed target's protocol. A connection starts with one byte:
//
//	'B'  bulk: the target writes an endless stream and ignores input.
//	'I'  interactive: then any number of requests, each
//	     +--------------------------+------------------------+----------+
//	     | response length (uint32) | request length (uint32) | request  |
//	     +--------------------------+------------------------+----------+
//	     big-endian; the target reads and discards the request, then
//	     writes response-length bytes.
const (
	MixedBulk        = 'B'
	MixedInteractive = 'I'
	// MixedHeaderLen is an interactive request's header.
	MixedHeaderLen = 8
	// Bounds of one request, so that a stray peer cannot make the target
	// read or write without end.
	MaxMixedRequest  = 1 << 20
	MaxMixedResponse = 16 << 20
)

// AppendMixedRequest appends an interactive request's header to b.
func AppendMixedRequest(b []byte, response, request int) []byte {
	b = binary.BigEndian.AppendUint32(b, uint32(response))
	return binary.BigEndian.AppendUint32(b, uint32(request))
}
