package relaypattern

import "errors"

// ErrInvalidPattern is returned by Parse for a non-empty rule that does not
// end with '$'.
var ErrInvalidPattern = errors.New("invalid relay pattern")
