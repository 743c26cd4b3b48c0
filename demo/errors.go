package demo

import "errors"

var (
	// ErrInvalidConfig reports a Config that cannot work.
	ErrInvalidConfig = errors.New("invalid demo configuration")
	// errBuild reports a failed go build.
	errBuild = errors.New("build failed")
	// ErrNotReady reports a server that did not become ready before its
	// deadline.
	ErrNotReady = errors.New("process not ready")
	// ErrSOCKS reports a SOCKS5 protocol failure.
	ErrSOCKS = errors.New("socks5")
	// ErrChecksum reports a download whose SHA-256 differs from the file's.
	ErrChecksum = errors.New("checksum mismatch")
	// errClosed reports use of a closed Cluster.
	errClosed = errors.New("cluster closed")
)
