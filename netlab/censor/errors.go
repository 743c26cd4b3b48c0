package censor

import "errors"

// ErrUnknownProgram: a program name that Names does not list.
var ErrUnknownProgram = errors.New("unknown censor program")

// ErrOptions: an Options field out of range.
var ErrOptions = errors.New("bad censor options")
