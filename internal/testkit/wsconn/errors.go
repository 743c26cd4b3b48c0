package wsconn

import (
	"fmt"
	"io"
	"net"
)

// errClosed is returned by Read and Write after Close. It matches both
// net.ErrClosed (the net package's convention) and io.ErrClosedPipe (what
// Snowflake's adaptor returned).
var errClosed = fmt.Errorf("wsconn: %w (%w)", net.ErrClosed, io.ErrClosedPipe)
