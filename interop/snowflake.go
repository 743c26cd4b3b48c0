package interop

import (
	"bytes"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"strings"

	"github.com/flurrypt/flurry/demo"
)

// Snowflake's Go module and the version Flurry is compatible with.
const (
	SnowflakeModule  = "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/snowflake/v2"
	SnowflakeVersion = "v2.14.1"
)

// ErrBuild reports a failed go command.
var ErrBuild = errors.New("interop: build failed")

// SnowflakeBinaries are the paths of Snowflake's four executables.
type SnowflakeBinaries struct {
	Broker, Proxy, Client, Server string
}

// snowflakeCommands are Snowflake's main packages, relative to its module.
var snowflakeCommands = []string{"broker", "proxy", "client", "server"}

// SnowflakeBinariesIn returns the paths the binaries have in dir; it does
// not check that they exist.
func SnowflakeBinariesIn(dir string) SnowflakeBinaries {
	return SnowflakeBinaries{
		Broker: filepath.Join(dir, "broker"),
		Proxy:  filepath.Join(dir, "proxy"),
		Client: filepath.Join(dir, "client"),
		Server: filepath.Join(dir, "server"),
	}
}

// DefaultSnowflakeDir is where BuildSnowflake keeps the binaries between
// runs when no directory is given: the user's cache directory.
func DefaultSnowflakeDir() (string, error) {
	cache, err := os.UserCacheDir()
	if err != nil {
		return "", err
	}
	return filepath.Join(cache, "flurry-interop", "snowflake-"+SnowflakeVersion), nil
}

// BuildSnowflake builds Snowflake's broker, proxy, client and server into
// dir with `go build -trimpath`, inside Snowflake's module as the go
// command downloaded it, so with Snowflake's own go.mod and go.sum: the
// binaries are the release's, not rebuilt against Flurry's dependency
// versions. A stamp file naming the version and the go command's version
// lets a later call reuse the binaries; the go build cache makes a rebuild
// cheap too. goCmd empty means "go" from PATH.
func BuildSnowflake(ctx context.Context, goCmd, dir string) (SnowflakeBinaries, error) {
	if goCmd == "" {
		goCmd = "go"
	}
	dir, err := filepath.Abs(dir)
	if err != nil {
		return SnowflakeBinaries{}, err
	}
	bins := SnowflakeBinariesIn(dir)
	goVersion, err := goOutput(ctx, goCmd, "", "env", "GOVERSION")
	if err != nil {
		return SnowflakeBinaries{}, err
	}
	stamp := SnowflakeModule + "@" + SnowflakeVersion + " " + strings.TrimSpace(goVersion) + "\n"
	stampPath := filepath.Join(dir, ".stamp")
	if old, err := os.ReadFile(stampPath); err == nil && string(old) == stamp && bins.check() == nil {
		return bins, nil
	}

	out, err := goOutput(ctx, goCmd, "", "mod", "download", "-json", SnowflakeModule+"@"+SnowflakeVersion)
	if err != nil {
		return SnowflakeBinaries{}, err
	}
	var mod struct{ Dir, Error string }
	if err := json.Unmarshal([]byte(out), &mod); err != nil || mod.Dir == "" {
		return SnowflakeBinaries{}, fmt.Errorf("%w: go mod download %s@%s: %q %v", ErrBuild, SnowflakeModule, SnowflakeVersion, mod.Error, err)
	}

	if err := os.MkdirAll(dir, 0o755); err != nil {
		return SnowflakeBinaries{}, err
	}
	// Build beside the final place and rename, so that a concurrent user
	// of dir never sees a half-written binary.
	tmp, err := os.MkdirTemp(dir, ".build-")
	if err != nil {
		return SnowflakeBinaries{}, err
	}
	defer os.RemoveAll(tmp)
	args := []string{"build", "-trimpath", "-o", tmp + string(filepath.Separator)}
	for _, c := range snowflakeCommands {
		args = append(args, "./"+c)
	}
	if _, err := goOutput(ctx, goCmd, mod.Dir, args...); err != nil {
		return SnowflakeBinaries{}, err
	}
	for _, c := range snowflakeCommands {
		if err := os.Rename(filepath.Join(tmp, c), filepath.Join(dir, c)); err != nil {
			return SnowflakeBinaries{}, err
		}
	}
	if err := os.WriteFile(stampPath, []byte(stamp), 0o644); err != nil {
		return SnowflakeBinaries{}, err
	}
	return bins, bins.check()
}

func (b SnowflakeBinaries) check() error {
	var missing []string
	for _, p := range []string{b.Broker, b.Proxy, b.Client, b.Server} {
		if fi, err := os.Stat(p); err != nil || !fi.Mode().IsRegular() {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		return fmt.Errorf("%w: missing Snowflake binaries: %s", ErrBuild, strings.Join(missing, ", "))
	}
	return nil
}

// FlurryRoot returns the directory of Flurry's go.mod: the parent of the
// interop module, found by asking the go command from dir (empty: the
// working directory).
func FlurryRoot(ctx context.Context, goCmd, dir string) (string, error) {
	root, err := demo.ModuleRoot(ctx, goCmd, dir)
	if err != nil {
		return "", err
	}
	if filepath.Base(root) == "interop" {
		root = filepath.Dir(root)
	}
	if _, err := os.Stat(filepath.Join(root, "go.mod")); err != nil {
		return "", fmt.Errorf("%w: no Flurry go.mod at %s: %w", ErrBuild, root, err)
	}
	return root, nil
}

// BuildFlurry builds Flurry's binaries from the tree into dir.
func BuildFlurry(ctx context.Context, goCmd, dir string) (demo.Binaries, error) {
	root, err := FlurryRoot(ctx, goCmd, "")
	if err != nil {
		return demo.Binaries{}, err
	}
	return demo.Build(ctx, demo.BuildConfig{OutDir: dir, ModuleDir: root, Go: goCmd})
}

// goOutput runs the go command in dir (empty: the working directory) with
// GOWORK off and returns its standard output.
func goOutput(ctx context.Context, goCmd, dir string, args ...string) (string, error) {
	cmd := exec.CommandContext(ctx, goCmd, args...)
	cmd.Dir = dir
	cmd.Env = append(os.Environ(), "GOWORK=off")
	var stdout, stderr bytes.Buffer
	cmd.Stdout, cmd.Stderr = &stdout, &stderr
	if err := cmd.Run(); err != nil {
		return "", fmt.Errorf("%w: go %s: %w\n%s%s", ErrBuild, strings.Join(args, " "), err, stderr.String(), stdout.String())
	}
	return stdout.String(), nil
}
