package childproc

import (
	"context"
	"errors"
	"net"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/internal/envprofile"
	"github.com/flurrypt/flurry/internal/testkit/testenv"
)

// These tests drive /bin/sh children, so they run in -short too.

func shell(tb testing.TB) string {
	tb.Helper()
	sh, err := exec.LookPath("sh")
	if err != nil {
		testenv.Missing(tb, "no sh: %v", err)
	}
	return sh
}

func newShellProcess(t *testing.T, script string, ready func(context.Context) error) *Process {
	t.Helper()
	p, err := New(Config{
		Name: "sh", Path: shell(t), Args: []string{"-c", script},
		LogPath: filepath.Join(t.TempDir(), "sh.log"), Supervisor: "test", Ready: ready, ReadyTimeout: 5 * time.Second,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	return p
}

func TestProcessStopClean(t *testing.T) {
	p := newShellProcess(t, `trap 'echo bye; exit 0' TERM; echo hello; while :; do sleep 0.05; done`, nil)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	if !p.Running() || p.PID() == 0 {
		t.Fatal("not running after Start")
	}
	waitFor(t, func() bool { return strings.Contains(p.LogTail(1), "hello") }) // the trap is set
	if err := p.Start(context.Background()); !errors.Is(err, errRunning) {
		t.Errorf("second Start: %v, want ErrRunning", err)
	}
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatalf("Stop: %v", err)
	}
	if p.Running() {
		t.Error("running after Stop")
	}
	if got := p.LogTail(2); !strings.Contains(got, "hello") || !strings.Contains(got, "bye") {
		t.Errorf("log tail %q, want hello and bye", got)
	}
	if err := p.Stop(time.Second); err != nil {
		t.Errorf("Stop of a stopped process: %v", err)
	}
}

func TestProcessStopTimeout(t *testing.T) {
	p := newShellProcess(t, `trap '' TERM; echo started; while :; do sleep 0.05; done`, nil)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	// Wait until the trap is set (the script has printed).
	waitFor(t, func() bool { return strings.Contains(p.LogTail(1), "started") })
	err := p.Stop(200 * time.Millisecond)
	if !errors.Is(err, ErrStopTimeout) {
		t.Fatalf("Stop of a process ignoring SIGTERM: %v, want ErrStopTimeout", err)
	}
	if p.Running() {
		t.Error("still running after Stop")
	}
}

func TestProcessLeftBehind(t *testing.T) {
	// The shell starts a child that ignores SIGTERM and outlives it.
	p := newShellProcess(t, `sh -c "trap '' TERM; echo child; while :; do sleep 0.05; done" & trap 'exit 0' TERM; while :; do sleep 0.05; done`, nil)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	pgid := p.PID()
	waitFor(t, func() bool { return strings.Contains(p.LogTail(1), "child") })
	err := p.Stop(5 * time.Second)
	if !errors.Is(err, errLeftBehind) {
		t.Fatalf("Stop: %v, want ErrLeftBehind", err)
	}
	waitFor(t, func() bool { return !groupAlive(pgid) })
}

func TestProcessKillTakesTheGroup(t *testing.T) {
	p := newShellProcess(t, `sh -c "echo child; while :; do sleep 0.05; done" & while :; do sleep 0.05; done`, nil)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	pgid := p.PID()
	waitFor(t, func() bool { return strings.Contains(p.LogTail(1), "child") })
	p.Kill()
	waitFor(t, func() bool { return !groupAlive(pgid) })
}

func TestProcessReadiness(t *testing.T) {
	addr := closedAddr(t)
	t.Run("ready", func(t *testing.T) {
		marker := filepath.Join(t.TempDir(), "ready")
		p := newShellProcess(t, `sleep 0.1; touch `+marker+`; while :; do sleep 0.05; done`, func(context.Context) error {
			_, err := os.Stat(marker)
			return err
		})
		if err := p.Start(context.Background()); err != nil {
			t.Fatal(err)
		}
		if _, err := os.Stat(marker); err != nil {
			t.Error("Start returned before the probe succeeded")
		}
	})
	t.Run("exits first", func(t *testing.T) {
		p := newShellProcess(t, `echo broken; exit 3`, tcpReady(addr))
		err := p.Start(context.Background())
		if !errors.Is(err, errExited) || !strings.Contains(err.Error(), "broken") {
			t.Errorf("Start: %v, want ErrExited with the log", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		p, err := New(Config{
			Name: "sh", Path: shell(t), Args: []string{"-c", "while :; do sleep 0.05; done"},
			LogPath: filepath.Join(t.TempDir(), "sh.log"), Ready: tcpReady(addr), ReadyTimeout: 300 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); !errors.Is(err, errNotReady) {
			t.Errorf("Start: %v, want ErrNotReady", err)
		}
		if p.Running() {
			t.Error("a process that never got ready was left running")
		}
	})
}

func TestProcessRestartAppendsLog(t *testing.T) {
	p := newShellProcess(t, `trap 'exit 0' TERM; echo run; while :; do sleep 0.05; done`, nil)
	ctx := context.Background()
	if err := p.Start(ctx); err != nil {
		t.Fatal(err)
	}
	waitFor(t, func() bool { return strings.Contains(p.LogTail(1), "run") })
	first := p.PID()
	if err := p.Restart(ctx, 5*time.Second); err != nil {
		t.Fatal(err)
	}
	if p.PID() == first {
		t.Error("same PID after Restart")
	}
	waitFor(t, func() bool {
		b, _ := os.ReadFile(p.LogPath())
		return strings.Count(string(b), "\nrun\n") == 2 && strings.Contains(string(b), "start 2 of sh")
	})
	if err := p.Stop(5 * time.Second); err != nil {
		t.Error(err)
	}
}

func TestNewChecksConfig(t *testing.T) {
	for _, cfg := range []Config{
		{},
		{Name: "x", Path: "/bin/true"},
		{Name: "x", LogPath: "x.log"},
	} {
		if _, err := New(cfg); !errors.Is(err, errInvalidConfig) {
			t.Errorf("New(%+v): %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// waitFor polls cond (processes give no event to wait on) for up to 10 s.
func waitFor(t *testing.T, cond func() bool) {
	t.Helper()
	deadline := time.Now().Add(10 * time.Second)
	for !cond() {
		if time.Now().After(deadline) {
			t.Fatal("condition not met within 10 s")
		}
		time.Sleep(10 * time.Millisecond)
	}
}

// closedAddr returns a loopback address nothing listens on.
func closedAddr(t *testing.T) string {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	addr := ln.Addr().String()
	ln.Close()
	return addr
}

// tcpReady is a readiness probe: something accepts connections on addr.
func tcpReady(addr string) func(context.Context) error {
	return func(ctx context.Context) error {
		var d net.Dialer
		c, err := d.DialContext(ctx, "tcp", addr)
		if err != nil {
			return err
		}
		return c.Close()
	}
}

func TestHoldStdinAndStdout(t *testing.T) {
	dir := t.TempDir()
	out, err := os.Create(filepath.Join(dir, "sh.out"))
	if err != nil {
		t.Fatal(err)
	}
	defer out.Close()
	// The script leaves when its stdin closes, as a managed pluggable
	// transport does, and ignores SIGTERM.
	p, err := Start(context.Background(), Config{
		Name: "sh", Path: shell(t), Args: []string{"-c", `trap '' TERM; echo out; echo err >&2; cat >/dev/null; echo eof >&2`},
		LogPath: filepath.Join(dir, "sh.err"), Stdout: out, HoldStdin: true,
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	waitFor(t, func() bool { return strings.Contains(p.LogTail(1), "err") })
	if err := p.Stop(5 * time.Second); err != nil {
		t.Fatalf("Stop: %v (closing stdin should end it)", err)
	}
	if got := p.LogTail(5); got != "err\neof" {
		t.Errorf("log %q, want the stderr lines alone", got)
	}
	if b, _ := os.ReadFile(out.Name()); string(b) != "out\n" {
		t.Errorf("stdout file %q, want out", b)
	}
}

// TestCleanEnv: a CleanEnv process gets its Env, PATH, the Go runtime's
// settings and the profiling switches, and nothing else of the
// supervisor's environment.
func TestCleanEnv(t *testing.T) {
	t.Setenv("GOGC", "150")
	t.Setenv(envprofile.DirEnv, "/profiles")
	t.Setenv("TOR_PT_MANAGED_TRANSPORT_VER", "1")
	p, err := New(Config{
		Name: "sh", Path: shell(t), Args: []string{"-c", "env; echo done"},
		Env: []string{"OWN=yes"}, CleanEnv: true,
		LogPath: filepath.Join(t.TempDir(), "sh.log"),
	})
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(p.Kill)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	var out string
	waitFor(t, func() bool {
		b, _ := os.ReadFile(p.LogPath())
		out = string(b)
		return strings.Contains(out, "done")
	})
	for _, want := range []string{"OWN=yes", "GOGC=150", envprofile.DirEnv + "=/profiles", "PATH="} {
		if !strings.Contains(out, "\n"+want) {
			t.Errorf("the process's environment lacks %s:\n%s", want, out)
		}
	}
	if strings.Contains(out, "TOR_PT_") {
		t.Errorf("the supervisor's TOR_PT_ variable reached a CleanEnv process:\n%s", out)
	}
}
