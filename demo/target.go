package demo

import (
	"bytes"
	"context"
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand/v2"
	"net"
	"net/http"
	"sync"
	"time"
)

// FilePath is where a Target serves its file.
const FilePath = "/flurry-demo.bin"

// Target is the demo's destination: an HTTP server on loopback serving one
// generated file of pseudo-random bytes (fixed seed, so its SHA-256 is known
// in advance) at FilePath. The relay forwards client streams to it.
type Target struct {
	// Addr is the listen address, URL the file's URL.
	Addr, URL string
	// Size and SHA256 describe the file.
	Size   int64
	SHA256 [sha256.Size]byte

	srv       *http.Server
	done      chan struct{}
	closeOnce sync.Once
	closeErr  error
}

// GenerateFile returns size pseudo-random bytes from a fixed seed.
func GenerateFile(size int64) []byte {
	b := make([]byte, size)
	var seed [32]byte
	copy(seed[:], "flurry demo target file, seed 1")
	_, _ = rand.NewChaCha8(seed).Read(b) // never fails
	return b
}

// StartTarget serves a file of size bytes on a free loopback port.
func StartTarget(size int64) (*Target, error) {
	if size < 0 {
		return nil, fmt.Errorf("%w: negative file size", ErrInvalidConfig)
	}
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return nil, err
	}
	data := GenerateFile(size)
	t := &Target{
		Addr:   ln.Addr().String(),
		Size:   size,
		SHA256: sha256.Sum256(data),
		done:   make(chan struct{}),
	}
	t.URL = "http://" + t.Addr + FilePath
	mux := http.NewServeMux()
	modTime := time.Now()
	mux.HandleFunc("GET "+FilePath, func(w http.ResponseWriter, r *http.Request) {
		w.Header().Set("Content-Type", "application/octet-stream")
		http.ServeContent(w, r, "flurry-demo.bin", modTime, bytes.NewReader(data))
	})
	mux.HandleFunc("GET /{$}", func(w http.ResponseWriter, r *http.Request) {
		fmt.Fprintf(w, "Flurry demo target: GET %s (%d bytes, SHA-256 %s)\n", FilePath, size, t.SHA256Hex())
	})
	t.srv = &http.Server{
		Handler:           mux,
		ReadHeaderTimeout: 10 * time.Second,
		IdleTimeout:       30 * time.Second,
	}
	go func() {
		defer close(t.done)
		_ = t.srv.Serve(ln)
	}()
	return t, nil
}

// SHA256Hex returns the file's SHA-256 in hex.
func (t *Target) SHA256Hex() string { return hex.EncodeToString(t.SHA256[:]) }

// Close stops the server, ending transfers in progress. It is idempotent.
func (t *Target) Close() error {
	t.closeOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), time.Second)
		defer cancel()
		t.closeErr = t.srv.Shutdown(ctx)
		if errors.Is(t.closeErr, context.DeadlineExceeded) {
			t.closeErr = t.srv.Close()
		}
		<-t.done
	})
	return t.closeErr
}
