package encapsulation

import "errors"

// ErrTooLong is returned by ReadData when a length prefix is longer than 3
// bytes, and by WriteData when the data is longer than MaxLength. The text
// matches Snowflake's.
var ErrTooLong = errors.New("length prefix is too long")

// ErrNegativeLength is returned by WritePadding when asked for a negative
// number of bytes (Snowflake panics instead).
var ErrNegativeLength = errors.New("negative padding length")
