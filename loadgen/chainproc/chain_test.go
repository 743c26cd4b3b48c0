package chainproc

import (
	"errors"
	"os"
	"path/filepath"
	"testing"

	"github.com/flurrypt/flurry/loadgen/internal/measure"
)

func TestImplementationFromPrefix(t *testing.T) {
	dir := t.TempDir()
	for _, name := range []string{"x-broker", "x-proxy", "x-client", "x-relay"} {
		if err := os.WriteFile(filepath.Join(dir, name), []byte("#!/bin/sh\n"), 0o755); err != nil {
			t.Fatal(err)
		}
	}
	im, err := ImplementationFromPrefix("x", filepath.Join(dir, "x-"))
	if err != nil {
		t.Fatal(err)
	}
	if im.Server != filepath.Join(dir, "x-relay") || im.Client != filepath.Join(dir, "x-client") {
		t.Errorf("got %+v", im)
	}
	if _, err := ImplementationFromPrefix("y", filepath.Join(dir, "y-")); !errors.Is(err, measure.ErrInvalidConfig) {
		t.Errorf("missing binaries: err = %v, want ErrInvalidConfig", err)
	}
}
