package strikes

import "errors"

// ErrInvalidConfig means a Config field is out of range.
var ErrInvalidConfig = errors.New("invalid strikes config")
