package childproc

import (
	"context"
	"errors"
	"fmt"
	"io"
	"os"
	"os/exec"
	"path/filepath"
	"sync"
	"syscall"
	"time"

	"github.com/flurrypt/flurry/internal/envprofile"
)

// DefaultStopTimeout is how long Stop waits after SIGTERM before SIGKILL.
const DefaultStopTimeout = 10 * time.Second

// DefaultReadyTimeout bounds a process's readiness probe.
const DefaultReadyTimeout = 30 * time.Second

// Config describes one child process.
type Config struct {
	// Name identifies the process in errors and in the log's start lines.
	Name string
	// Path is the executable; Args its arguments (without argv[0]).
	Path string
	Args []string
	// Env is added to the supervisor's own environment (later entries
	// win). With CleanEnv the process gets only Env and keptEnv's
	// variables: PATH, HOME, the Go runtime's settings and the profiling
	// switches, so that a run's GOGC or FLURRY_PROFILE_DIR reaches every
	// process it starts.
	Env      []string
	CleanEnv bool
	// Dir is the working directory; empty means the supervisor's.
	Dir string
	// LogPath receives the process's stderr, and its stdout unless Stdout
	// is set (appended, so a restarted process keeps its earlier log).
	// Required.
	LogPath string
	// Stdout, if set, receives the process's stdout instead of LogPath: a
	// file of its own, or the write end of a pipe the caller reads. The
	// process gets its own copy; the caller closes Stdout once Start
	// returns.
	Stdout *os.File
	// HoldStdin gives the process a stdin pipe that stays open until Stop
	// closes it (right after the stop signal): a managed pluggable
	// transport leaves when tor closes its stdin. Without it stdin is
	// /dev/null.
	HoldStdin bool
	// Supervisor, if set, names the supervising program in a line written
	// to the log before every start ("=== demo: start 2 of broker at
	// ..."); empty writes no such line.
	Supervisor string
	// Ready, if set, is polled after start until it returns nil or
	// ReadyTimeout passes; Start returns only then.
	Ready func(ctx context.Context) error
	// ReadyTimeout bounds Ready; 0 means DefaultReadyTimeout.
	ReadyTimeout time.Duration
	// StopSignal is the signal Stop sends first; 0 means SIGTERM.
	StopSignal syscall.Signal
}

// Process is a child process in its own process group, so that signals
// reach it and everything it starts, and nothing is left behind.
// Its methods are safe for concurrent use.
type Process struct {
	cfg Config

	mu      sync.Mutex
	cmd     *exec.Cmd
	stdin   io.Closer     // with HoldStdin: the current run's stdin pipe
	done    chan struct{} // closed when the current run has been waited for
	waitErr error         // valid after done
	starts  int
}

// New checks cfg and returns a Process that has not started.
func New(cfg Config) (*Process, error) {
	if cfg.Name == "" || cfg.Path == "" || cfg.LogPath == "" {
		return nil, fmt.Errorf("%w: a process needs Name, Path and LogPath", errInvalidConfig)
	}
	if cfg.ReadyTimeout == 0 {
		cfg.ReadyTimeout = DefaultReadyTimeout
	}
	cfg.Args = append([]string(nil), cfg.Args...)
	cfg.Env = append([]string(nil), cfg.Env...)
	done := make(chan struct{})
	close(done)
	return &Process{cfg: cfg, done: done}, nil
}

// Start is New followed by Process.Start.
func Start(ctx context.Context, cfg Config) (*Process, error) {
	p, err := New(cfg)
	if err != nil {
		return nil, err
	}
	return p, p.Start(ctx)
}

// Name returns the process's name.
func (p *Process) Name() string { return p.cfg.Name }

// LogPath returns the file the process's output goes to.
func (p *Process) LogPath() string { return p.cfg.LogPath }

// Start starts the process and waits until its readiness probe succeeds.
// If the probe fails or the process exits first, the process is killed and
// the error says so (with the end of its log).
func (p *Process) Start(ctx context.Context) error {
	done, err := p.launch()
	if err != nil {
		return fmt.Errorf("%s: %w", p.cfg.Name, err)
	}
	if p.cfg.Ready == nil {
		return nil
	}
	if err := p.waitReady(ctx, done); err != nil {
		p.Kill()
		return fmt.Errorf("%s: %w\n%s", p.cfg.Name, err, p.LogTail(20))
	}
	return nil
}

// launch starts a run of the process unless one is under way, and returns
// the channel closed once it has been waited for.
func (p *Process) launch() (<-chan struct{}, error) {
	p.mu.Lock()
	defer p.mu.Unlock()
	select {
	case <-p.done:
	default:
		return nil, errRunning
	}
	if err := os.MkdirAll(filepath.Dir(p.cfg.LogPath), 0o755); err != nil {
		return nil, fmt.Errorf("log directory: %w", err)
	}
	logFile, err := os.OpenFile(p.cfg.LogPath, os.O_CREATE|os.O_WRONLY|os.O_APPEND, 0o644)
	if err != nil {
		return nil, fmt.Errorf("log file: %w", err)
	}
	defer logFile.Close() // the child has its own copy
	p.starts++
	if p.cfg.Supervisor != "" {
		fmt.Fprintf(logFile, "=== %s: start %d of %s at %s\n", p.cfg.Supervisor, p.starts, p.cfg.Name, time.Now().Format(time.RFC3339Nano))
	}
	cmd := exec.Command(p.cfg.Path, p.cfg.Args...)
	cmd.Dir = p.cfg.Dir
	cmd.Stdout, cmd.Stderr = logFile, logFile
	if p.cfg.Stdout != nil {
		cmd.Stdout = p.cfg.Stdout
	}
	cmd.Env = p.environ()
	cmd.SysProcAttr = sysProcAttr()
	var stdin io.Closer
	if p.cfg.HoldStdin {
		if stdin, err = cmd.StdinPipe(); err != nil {
			return nil, err
		}
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	done := make(chan struct{})
	p.cmd, p.done, p.stdin = cmd, done, stdin
	go func() {
		err := cmd.Wait()
		p.mu.Lock()
		p.waitErr = err
		p.mu.Unlock()
		close(done)
	}()
	return done, nil
}

// keptEnv names the supervisor's variables a CleanEnv process still gets.
var keptEnv = []string{"PATH", "HOME", "GOGC", "GOMEMLIMIT", "GOMAXPROCS", "GODEBUG", "GOTRACEBACK",
	envprofile.DirEnv, envprofile.SecondsEnv}

func (p *Process) environ() []string {
	if !p.cfg.CleanEnv {
		return append(os.Environ(), p.cfg.Env...)
	}
	var env []string
	for _, k := range keptEnv {
		if v, ok := os.LookupEnv(k); ok {
			env = append(env, k+"="+v)
		}
	}
	return append(env, p.cfg.Env...)
}

// waitReady polls the readiness probe with a growing interval until it
// succeeds, the process exits, or the deadline passes.
func (p *Process) waitReady(ctx context.Context, done <-chan struct{}) error {
	ctx, cancel := context.WithTimeout(ctx, p.cfg.ReadyTimeout)
	defer cancel()
	interval := 10 * time.Millisecond
	var last error
	for {
		pctx, pcancel := context.WithTimeout(ctx, 2*time.Second)
		last = p.cfg.Ready(pctx)
		pcancel()
		if last == nil {
			return nil
		}
		t := time.NewTimer(interval)
		select {
		case <-done:
			t.Stop()
			return fmt.Errorf("%w before it was ready: %v", errExited, p.exitErr())
		case <-ctx.Done():
			t.Stop()
			return fmt.Errorf("%w: %w (last probe: %v)", errNotReady, ctx.Err(), last)
		case <-t.C:
		}
		interval = min(interval*2, 250*time.Millisecond)
	}
}

// PID returns the process ID of the current run, 0 if it never started.
func (p *Process) PID() int {
	p.mu.Lock()
	defer p.mu.Unlock()
	if p.cmd == nil || p.cmd.Process == nil {
		return 0
	}
	return p.cmd.Process.Pid
}

// Running reports whether the process is running.
func (p *Process) Running() bool {
	select {
	case <-p.Done():
		return false
	default:
		return true
	}
}

// Done returns a channel closed when the current run has ended.
func (p *Process) Done() <-chan struct{} {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.done
}

func (p *Process) exitErr() error {
	p.mu.Lock()
	defer p.mu.Unlock()
	return p.waitErr
}

// ExitErr returns how the last run ended (nil for exit status 0); only
// meaningful once Done is closed.
func (p *Process) ExitErr() error { return p.exitErr() }

// Signal sends sig to the process (not to its group).
func (p *Process) Signal(sig syscall.Signal) error {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	select {
	case <-done:
		return fmt.Errorf("%s: %w", p.cfg.Name, errExited)
	default:
	}
	return cmd.Process.Signal(sig)
}

// Kill sends SIGKILL to the process's whole group and waits for the
// process to be reaped. Killing a stopped process does nothing.
func (p *Process) Kill() {
	p.mu.Lock()
	cmd, done := p.cmd, p.done
	p.mu.Unlock()
	if cmd == nil {
		return
	}
	pgid := cmd.Process.Pid
	select {
	case <-done:
	default:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
	}
	// Whatever the leader started is killed too (it shares the group).
	_ = syscall.Kill(-pgid, syscall.SIGKILL)
}

// Stop sends SIGTERM to the process and waits up to timeout (0 means
// DefaultStopTimeout) for it to exit; then it kills the whole group. It
// returns nil only if the process exited by itself with status 0 and left
// no process of its group behind; otherwise an error matching
// ErrStopTimeout, errLeftBehind or describing the exit status. Stopping a
// process that is not running returns nil.
func (p *Process) Stop(timeout time.Duration) error {
	if timeout == 0 {
		timeout = DefaultStopTimeout
	}
	p.mu.Lock()
	cmd, done, stdin := p.cmd, p.done, p.stdin
	p.mu.Unlock()
	if cmd == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	default:
	}
	pgid := cmd.Process.Pid
	sig := p.cfg.StopSignal
	if sig == 0 {
		sig = syscall.SIGTERM
	}
	_ = cmd.Process.Signal(sig)
	if stdin != nil {
		_ = stdin.Close()
	}
	t := time.NewTimer(timeout)
	defer t.Stop()
	var errs []error
	select {
	case <-done:
		if err := p.exitErr(); err != nil {
			errs = append(errs, fmt.Errorf("%s: exit after SIGTERM: %w", p.cfg.Name, err))
		}
	case <-t.C:
		_ = syscall.Kill(-pgid, syscall.SIGKILL)
		<-done
		errs = append(errs, fmt.Errorf("%s: %w within %v; its log ends:\n%s", p.cfg.Name, ErrStopTimeout, timeout, p.LogTail(10)))
	}
	if err := p.reapGroup(pgid); err != nil {
		errs = append(errs, err)
	}
	return errors.Join(errs...)
}

// reapGroup checks that no process of group pgid is left; if some are, it
// gives them a moment to go (children often exit just after their parent),
// then kills them and reports it.
func (p *Process) reapGroup(pgid int) error {
	deadline := time.Now().Add(2 * time.Second)
	for interval := 5 * time.Millisecond; ; interval = min(interval*2, 100*time.Millisecond) {
		if !groupAlive(pgid) {
			return nil
		}
		if time.Now().After(deadline) {
			_ = syscall.Kill(-pgid, syscall.SIGKILL)
			return fmt.Errorf("%s: %w in its process group (killed)", p.cfg.Name, errLeftBehind)
		}
		time.Sleep(interval) // polling the kernel: there is no event to wait on
	}
}

// Restart stops the process (SIGTERM, then SIGKILL after timeout) and starts
// it again with the same arguments; the stop's error is ignored.
func (p *Process) Restart(ctx context.Context, timeout time.Duration) error {
	_ = p.Stop(timeout)
	return p.Start(ctx)
}

// LogTail returns the last n lines of the process's log.
func (p *Process) LogTail(n int) string {
	b, err := os.ReadFile(p.cfg.LogPath)
	if err != nil {
		return ""
	}
	return lastLines(string(b), n)
}

func lastLines(s string, n int) string {
	end := len(s)
	for end > 0 && s[end-1] == '\n' {
		end--
	}
	i := end
	for ; i > 0 && n > 0; i-- {
		if s[i-1] == '\n' {
			n--
			if n == 0 {
				break
			}
		}
	}
	return s[i:end]
}
