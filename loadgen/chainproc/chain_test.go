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

func TestHasFlag(t *testing.T) {
	dir := t.TempDir()
	bin := filepath.Join(dir, "prog")
	usage := "#!/bin/sh\nprintf 'Usage of prog:\\n  -addr string\\n    \\tlisten here (not -metrics-addr)\\n  -metrics-addr string\\n' >&2\nexit 2\n"
	if err := os.WriteFile(bin, []byte(usage), 0o755); err != nil {
		t.Fatal(err)
	}
	ctx := t.Context()
	if !hasFlag(ctx, bin, "metrics-addr") || !hasFlag(ctx, bin, "addr") {
		t.Error("listed flags not found")
	}
	if hasFlag(ctx, bin, "metrics") || hasFlag(ctx, bin, "listen") {
		t.Error("a flag found in another's name or help text")
	}
	if hasFlag(ctx, filepath.Join(dir, "missing"), "addr") {
		t.Error("a missing program has flags")
	}
}
