package strikes

import "errors"

// ErrConfig means a Config field is out of range.
var ErrConfig = errors.New("invalid strikes config")
