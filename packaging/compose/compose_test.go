package compose

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/compose-spec/compose-go/v2/loader"
	"github.com/compose-spec/compose-go/v2/types"
)

// Load parses a compose file with compose-go, the library docker compose
// is built on, validating it against the Compose Specification's schema.
func load(t *testing.T, data []byte) (*types.Project, error) {
	t.Helper()
	return loader.LoadWithContext(context.Background(), types.ConfigDetails{
		WorkingDir:  t.TempDir(),
		ConfigFiles: []types.ConfigFile{{Filename: FileName, Content: data}},
		Environment: types.Mapping{},
	})
}

// TestFile: the release's compose file is valid and says what
// docs/install.md promises: the release's image serving Tor's network,
// restarted unless stopped, on the host's network, read-only, without
// capabilities or new privileges, and with CPU, memory and process limits.
func TestFile(t *testing.T) {
	p, err := load(t, File("0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	if p.Name != "flurry" || len(p.Services) != 1 {
		t.Fatalf("project %q with %d services", p.Name, len(p.Services))
	}
	s, ok := p.Services["proxy"]
	if !ok {
		t.Fatal("no proxy service")
	}
	if s.Image != "localhost/flurry-proxy:0.1.0" {
		t.Errorf("image %q", s.Image)
	}
	if !slices.Equal(s.Command, types.ShellCommand{"-network", "tor"}) {
		t.Errorf("command %q", s.Command)
	}
	if s.Restart != types.RestartPolicyUnlessStopped {
		t.Errorf("restart %q", s.Restart)
	}
	if s.NetworkMode != "host" || !s.ReadOnly || !slices.Equal(s.CapDrop, []string{"ALL"}) ||
		!slices.Equal(s.SecurityOpt, []string{"no-new-privileges:true"}) {
		t.Errorf("network %q, read-only %v, cap_drop %q, security_opt %q", s.NetworkMode, s.ReadOnly, s.CapDrop, s.SecurityOpt)
	}
	if s.Deploy == nil || s.Deploy.Resources.Limits == nil {
		t.Fatal("no resource limits")
	}
	l := s.Deploy.Resources.Limits
	if l.NanoCPUs != 1 || l.MemoryBytes != 512<<20 || l.Pids != 256 {
		t.Errorf("limits: %v CPUs, %d bytes, %d processes", l.NanoCPUs, l.MemoryBytes, l.Pids)
	}
	if strings.Contains(string(File("0.1.0")), "@VERSION@") {
		t.Error("a placeholder is left")
	}
}

// TestSchema: the validation TestFile relies on refuses a misspelt key.
func TestSchema(t *testing.T) {
	bad := strings.Replace(string(File("0.1.0")), "restart:", "restrat:", 1)
	if _, err := load(t, []byte(bad)); err == nil || !strings.Contains(err.Error(), "restrat") {
		t.Errorf("a misspelt key: %v", err)
	}
}
