package interop

import (
	"context"
	"encoding/json"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/testkit/testenv"
)

// The parent test process hands the child it re-executes in a network
// namespace these variables.
const (
	envNetns     = "FLURRY_INTEROP_NETNS"      // "1" in the child
	envFlurry    = "FLURRY_INTEROP_FLURRY_BIN" // directory of Flurry's binaries
	envSnowflake = "FLURRY_INTEROP_SF_BIN"     // directory of Snowflake's binaries
	envResult    = "FLURRY_INTEROP_RESULT"     // file the child writes its cellResult to
)

func TestMain(m *testing.M) {
	if os.Getenv(envNetns) == "1" {
		// A new network namespace has lo, down, and nothing else.
		if out, err := exec.Command(lookCommand("ip"), "link", "set", "dev", "lo", "up").CombinedOutput(); err != nil {
			fmt.Fprintf(os.Stderr, "ip link set dev lo up: %v: %s\n", err, out)
			os.Exit(1)
		}
	}
	code := m.Run()
	if flurryDir != "" {
		os.RemoveAll(flurryDir)
	}
	os.Exit(code)
}

// labName names the n-th lab of a test with prefix (two letters): the
// prefix, this process's id in base 36 (at most 5 characters), "x" and n,
// so that test processes running at once never share a lab's namespaces
// or TUN devices, and the name stays within netlab's 12 characters (the
// Linux interface names made from it within 15) up to n = 9999.
func labName(prefix string, n int) string {
	return prefix + strconv.FormatInt(int64(os.Getpid()), 36) + "x" + strconv.Itoa(n)
}

// lookCommand finds an administration command in PATH or the sbin
// directories; it returns name itself if it finds nothing.
func lookCommand(name string) string {
	if p, err := exec.LookPath(name); err == nil {
		return p
	}
	for _, dir := range []string{"/usr/sbin", "/sbin"} {
		if p := filepath.Join(dir, name); isExecutable(p) {
			return p
		}
	}
	return name
}

func isExecutable(path string) bool {
	fi, err := os.Stat(path)
	return err == nil && fi.Mode().IsRegular() && fi.Mode()&0o111 != 0
}

var (
	buildOnce sync.Once
	buildErr  error
	flurryDir string
	sfDir     string
)

// binaries builds Flurry's binaries from the tree (into a directory kept
// for the whole test run) and Snowflake's (into the user's cache, reused
// between runs), once per test process.
func binaries(t *testing.T) (demo.Binaries, SnowflakeBinaries) {
	t.Helper()
	if d := os.Getenv(envFlurry); d != "" {
		return demo.BinariesIn(d), SnowflakeBinariesIn(os.Getenv(envSnowflake))
	}
	buildOnce.Do(func() {
		ctx, cancel := context.WithTimeout(context.Background(), 15*time.Minute)
		defer cancel()
		var err error
		if flurryDir, err = os.MkdirTemp("", "flurry-interop-bin-"); err != nil {
			buildErr = err
			return
		}
		var wg sync.WaitGroup
		var ferr, serr error
		wg.Go(func() { _, ferr = BuildFlurry(ctx, "", flurryDir) })
		wg.Go(func() {
			if sfDir, serr = DefaultSnowflakeDir(); serr == nil {
				_, serr = BuildSnowflake(ctx, "", sfDir)
			}
		})
		wg.Wait()
		if ferr != nil {
			buildErr = ferr
		} else {
			buildErr = serr
		}
	})
	if buildErr != nil {
		t.Fatal(buildErr)
	}
	return demo.BinariesIn(flurryDir), SnowflakeBinariesIn(sfDir)
}

// inNetns runs the calling test again in a child test process in a new
// network namespace whose only interface is lo, so that neither
// implementation's WebRTC can gather or send anywhere else. It returns
// true in the child, which runs the test's body; in the parent it reports
// the child's outcome, passes its result (if any) to got, and returns
// false.
func inNetns(t *testing.T, got func(cellResult)) bool {
	t.Helper()
	if os.Getenv(envNetns) == "1" {
		return true
	}
	testenv.Root(t, "the interop chains run in network namespaces and")
	if lookCommand("ip") == "ip" {
		testenv.Missing(t, "no ip command (apt-get install iproute2)")
	}
	fl, sf := binaries(t)
	var run []string
	for _, part := range strings.Split(t.Name(), "/") {
		run = append(run, "^"+regexp.QuoteMeta(part)+"$")
	}
	resultPath := filepath.Join(t.TempDir(), "result.json")
	cmd := exec.Command(os.Args[0], "-test.run="+strings.Join(run, "/"), "-test.v", "-test.count=1", "-test.timeout=5m")
	cmd.Env = append(os.Environ(), envNetns+"=1", envFlurry+"="+filepath.Dir(fl.Broker),
		envSnowflake+"="+filepath.Dir(sf.Broker), envResult+"="+resultPath)
	cmd.SysProcAttr = &syscall.SysProcAttr{Cloneflags: syscall.CLONE_NEWNET, Pdeathsig: syscall.SIGKILL}
	out, err := cmd.CombinedOutput()
	passed := strings.Contains(string(out), "--- PASS: "+t.Name()+" ")
	if err != nil || !passed {
		t.Fatalf("in a network namespace: %v\n%s\nthe child's own lines again (a report's tail may be all a reader sees):\n%s",
			err, out, strings.Join(testLine.FindAllString(string(out), -1), "\n"))
	}
	if b, err := os.ReadFile(resultPath); err == nil && got != nil {
		var r cellResult
		if err := json.Unmarshal(b, &r); err != nil {
			t.Fatalf("child's result: %v", err)
		}
		got(r)
	}
	return false
}

// testLine matches the first line of what a test wrote with t.Log or
// t.Error, as go test prints it: indented, then file:line.
var testLine = regexp.MustCompile(`(?m)^\s+\w+_test\.go:\d+: .*$`)

// cellResult is what one chain measured.
type cellResult struct {
	Name      string
	Bytes     int64
	FirstByte time.Duration
	Total     time.Duration
	MBps      float64
	Stall     time.Duration `json:",omitempty"`
	// CPUPerMB is each role's CPU time per MB (10^6 bytes) carried, in
	// milliseconds, during the download.
	CPUPerMB map[string]float64 `json:",omitempty"`
	// MemMiB is memory in MiB by role, where a test measures it.
	MemMiB map[string]float64 `json:",omitempty"`
}

// report writes r for the parent (in the child).
func report(t *testing.T, r cellResult) {
	t.Helper()
	b, err := json.Marshal(r)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(os.Getenv(envResult), b, 0o644); err != nil {
		t.Fatal(err)
	}
}
