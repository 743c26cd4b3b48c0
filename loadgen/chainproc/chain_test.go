package chainproc

import (
	"errors"
	"os"
	"path/filepath"
	"slices"
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

func TestBrokerArgsTurnOffOperatorListener(t *testing.T) {
	dir := t.TempDir()
	for name, usage := range map[string]string{
		"flurry":    "  -addr string\n  -metrics-addr string\n",
		"snowflake": "  -addr string\n  -metrics-log string\n",
	} {
		bin := filepath.Join(dir, name)
		script := "#!/bin/sh\nprintf '" + usage + "' >&2\nexit 2\n"
		if err := os.WriteFile(bin, []byte(script), 0o755); err != nil {
			t.Fatal(err)
		}
		args := brokerArgs(t.Context(), bin, "127.0.0.1:1", "bridges", "intervals")
		off := slices.Contains(args, "-metrics-addr=")
		if off != (name == "flurry") {
			t.Errorf("%s: args %q", name, args)
		}
	}
}
