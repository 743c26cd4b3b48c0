package turbotunnel

import "errors"

// ErrUnsupportedAddr is returned by QueuePacketConn.WriteTo for a nil address
// or one whose dynamic type cannot be a map key (ClientID always can).
var ErrUnsupportedAddr = errors.New("unsupported client address")

// ErrDial wraps the error of the dial function that ended a
// RedialPacketConn.
var ErrDial = errors.New("dial carrier")

// ErrNilCarrier is the dial error used when a dial function returns neither
// a carrier nor an error.
var ErrNilCarrier = errors.New("dial returned no carrier")
