package demo

import (
	"bytes"
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
)

// Binaries are the paths of Flurry's executables.
type Binaries struct {
	Broker, Relay, Proxy, Client, NATProbe string
}

// commands maps each binary to its main package, relative to the module.
var commands = []struct {
	pkg  string
	path func(*Binaries) *string
}{
	{"./broker/cmd/flurry-broker", func(b *Binaries) *string { return &b.Broker }},
	{"./relay/cmd/flurry-relay", func(b *Binaries) *string { return &b.Relay }},
	{"./proxy/cmd/flurry-proxy", func(b *Binaries) *string { return &b.Proxy }},
	{"./client/cmd/flurry-client", func(b *Binaries) *string { return &b.Client }},
	{"./natprobe/cmd/flurry-natprobe", func(b *Binaries) *string { return &b.NATProbe }},
}

// BinariesIn returns the paths the binaries have in dir (as `go build -o
// dir/` or `make build` name them); it does not check that they exist.
func BinariesIn(dir string) Binaries {
	var b Binaries
	for _, c := range commands {
		*c.path(&b) = filepath.Join(dir, filepath.Base(c.pkg))
	}
	return b
}

// Check returns an error naming every binary that is missing.
func (b Binaries) Check() error {
	var missing []string
	for _, c := range commands {
		p := *c.path(&b)
		if fi, err := os.Stat(p); err != nil || fi.IsDir() {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing binaries: %s", ErrInvalidConfig, strings.Join(missing, ", "))
	}
	return nil
}

// ModuleRoot returns the directory of Flurry's go.mod, found by asking the
// go command from dir (empty: the working directory).
func ModuleRoot(ctx context.Context, goCmd, dir string) (string, error) {
	if goCmd == "" {
		goCmd = "go"
	}
	cmd := exec.CommandContext(ctx, goCmd, "env", "GOMOD")
	cmd.Dir = dir
	out, err := cmd.Output()
	if err != nil {
		return "", fmt.Errorf("%w: go env GOMOD: %w", errBuild, err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("%w: not inside a Go module", errBuild)
	}
	return filepath.Dir(gomod), nil
}

// BuildConfig says where to build from and to.
type BuildConfig struct {
	// OutDir receives the binaries. Required.
	OutDir string
	// ModuleDir is Flurry's module root; empty: found from the working
	// directory (ModuleRoot).
	ModuleDir string
	// Go is the go command; empty means "go" from PATH.
	Go string
	// Race builds with the race detector (slower binaries; off by default).
	Race bool
}

// Build compiles every binary into cfg.OutDir in one go build invocation
// (without -race unless asked: the binaries are the system under test, not
// the test).
func Build(ctx context.Context, cfg BuildConfig) (Binaries, error) {
	if cfg.OutDir == "" {
		return Binaries{}, fmt.Errorf("%w: BuildConfig.OutDir is required", ErrInvalidConfig)
	}
	if cfg.Go == "" {
		cfg.Go = "go"
	}
	if cfg.ModuleDir == "" {
		root, err := ModuleRoot(ctx, cfg.Go, "")
		if err != nil {
			return Binaries{}, err
		}
		cfg.ModuleDir = root
	}
	out, err := filepath.Abs(cfg.OutDir)
	if err != nil {
		return Binaries{}, err
	}
	if err := os.MkdirAll(out, 0o755); err != nil {
		return Binaries{}, err
	}
	args := []string{"build", "-o", out + string(filepath.Separator)}
	if cfg.Race {
		args = append(args, "-race")
	}
	for _, c := range commands {
		args = append(args, c.pkg)
	}
	cmd := exec.CommandContext(ctx, cfg.Go, args...)
	cmd.Dir = cfg.ModuleDir
	var stderr bytes.Buffer
	cmd.Stdout = &stderr
	cmd.Stderr = &stderr
	if err := cmd.Run(); err != nil {
		return Binaries{}, fmt.Errorf("%w: go %s: %w\n%s", errBuild, strings.Join(args, " "), err, stderr.String())
	}
	b := BinariesIn(out)
	return b, b.Check()
}
