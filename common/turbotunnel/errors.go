package turbotunnel

import "errors"

// ErrUnsupportedAddr is returned by QueuePacketConn.WriteTo for a nil address
// or one whose dynamic type cannot be a map key (ClientID always can).
var ErrUnsupportedAddr = errors.New("unsupported client address")
