package demo_test

import (
	"context"
	"errors"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
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

func newShellProcess(t *testing.T, script string, ready func(context.Context) error) *demo.Process {
	t.Helper()
	p, err := demo.NewProcess(demo.ProcessConfig{
		Name: "sh", Path: shell(t), Args: []string{"-c", script},
		LogPath: filepath.Join(t.TempDir(), "sh.log"), Ready: ready, ReadyTimeout: 5 * time.Second,
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
	if err := p.Start(context.Background()); !errors.Is(err, demo.ErrRunning) {
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
	if !errors.Is(err, demo.ErrStopTimeout) {
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
	if !errors.Is(err, demo.ErrLeftBehind) {
		t.Fatalf("Stop: %v, want ErrLeftBehind", err)
	}
	waitFor(t, func() bool { return !demo.GroupAlive(pgid) })
}

func TestProcessKillTakesTheGroup(t *testing.T) {
	p := newShellProcess(t, `sh -c "echo child; while :; do sleep 0.05; done" & while :; do sleep 0.05; done`, nil)
	if err := p.Start(context.Background()); err != nil {
		t.Fatal(err)
	}
	pgid := p.PID()
	waitFor(t, func() bool { return strings.Contains(p.LogTail(1), "child") })
	p.Kill()
	waitFor(t, func() bool { return !demo.GroupAlive(pgid) })
}

func TestProcessReadiness(t *testing.T) {
	addr, err := demo.FreeAddr()
	if err != nil {
		t.Fatal(err)
	}
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
		p := newShellProcess(t, `echo broken; exit 3`, demo.TCPReady(addr))
		err := p.Start(context.Background())
		if !errors.Is(err, demo.ErrExited) || !strings.Contains(err.Error(), "broken") {
			t.Errorf("Start: %v, want ErrExited with the log", err)
		}
	})
	t.Run("deadline", func(t *testing.T) {
		p, err := demo.NewProcess(demo.ProcessConfig{
			Name: "sh", Path: shell(t), Args: []string{"-c", "while :; do sleep 0.05; done"},
			LogPath: filepath.Join(t.TempDir(), "sh.log"), Ready: demo.TCPReady(addr), ReadyTimeout: 300 * time.Millisecond,
		})
		if err != nil {
			t.Fatal(err)
		}
		if err := p.Start(context.Background()); !errors.Is(err, demo.ErrNotReady) {
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

func TestNewProcessChecksConfig(t *testing.T) {
	for _, cfg := range []demo.ProcessConfig{
		{},
		{Name: "x", Path: "/bin/true"},
		{Name: "x", LogPath: "x.log"},
	} {
		if _, err := demo.NewProcess(cfg); !errors.Is(err, demo.ErrInvalidConfig) {
			t.Errorf("NewProcess(%+v): %v, want ErrInvalidConfig", cfg, err)
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
