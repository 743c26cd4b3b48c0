package main

import (
	"bufio"
	"bytes"
	"compress/gzip"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"runtime"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flurrypt/flurry/packaging/deb"
	"github.com/flurrypt/flurry/packaging/internal/testtool"
	"github.com/flurrypt/flurry/packaging/role"
)

const (
	testVersion = "0.0.0-pkgtest"
	testCommit  = "0123456789abcdef0123456789abcdef01234567"
)

var testTime = time.Unix(1764547200, 0).UTC()

var (
	releaseOnce sync.Once
	releaseDir  string
	releaseErr  error
)

func TestMain(m *testing.M) {
	code := m.Run()
	if releaseDir != "" {
		os.RemoveAll(releaseDir)
	}
	os.Exit(code)
}

// release builds the Linux binaries of this machine's architecture as
// scripts/release.sh does, once for every test, and packages them with
// run; it returns the directory.
func release(t *testing.T) string {
	t.Helper()
	if testing.Short() {
		t.Skip("builds every role")
	}
	target := map[string]string{"amd64": "linux/amd64", "arm64": "linux/arm64", "arm": "linux/arm/7"}[runtime.GOARCH]
	if runtime.GOOS != "linux" || target == "" {
		t.Skipf("the release has no %s/%s binaries to package", runtime.GOOS, runtime.GOARCH)
	}
	releaseOnce.Do(func() {
		if releaseDir, releaseErr = os.MkdirTemp("", "flurry-package-test-"); releaseErr != nil {
			return
		}
		build := exec.Command("scripts/release.sh", testVersion, target)
		build.Dir = "../../.."
		build.Env = append(os.Environ(), "OUT="+releaseDir, "COMMIT="+testCommit)
		if out, err := build.CombinedOutput(); err != nil {
			releaseErr = &exec.ExitError{ProcessState: build.ProcessState, Stderr: out}
			return
		}
		releaseErr = run(testVersion, releaseDir, testCommit, testTime)
	})
	if releaseErr != nil {
		if ee, ok := releaseErr.(*exec.ExitError); ok {
			t.Fatalf("release.sh: %v\n%s", ee, ee.Stderr)
		}
		t.Fatal(releaseErr)
	}
	return releaseDir
}

func hostPlatform(t *testing.T) role.Platform {
	for _, p := range role.Platforms() {
		if p.GOARCH == runtime.GOARCH {
			return p
		}
	}
	t.Fatalf("no platform for %s", runtime.GOARCH)
	return role.Platform{}
}

func runCmd(t *testing.T, name string, args ...string) string {
	t.Helper()
	out, err := exec.Command(name, args...).CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

// TestReproducible packages the same binaries again, copied into a
// directory of another name with other times, and requires every package,
// image archive and the compose file to be identical.
func TestReproducible(t *testing.T) {
	first := release(t)
	second := filepath.Join(t.TempDir(), "another", "path")
	if err := os.MkdirAll(second, 0o755); err != nil {
		t.Fatal(err)
	}
	outputs, _ := filepath.Glob(filepath.Join(first, "*"))
	var made []string
	later := time.Now().Add(-time.Hour)
	for _, p := range outputs {
		name := filepath.Base(p)
		if !strings.Contains(name, "-linux-") {
			if name != "LICENSE" && name != "SHA256SUMS" {
				made = append(made, name)
			}
			continue
		}
		data, err := os.ReadFile(p)
		if err == nil {
			err = os.WriteFile(filepath.Join(second, name), data, 0o755)
		}
		if err == nil {
			err = os.Chtimes(filepath.Join(second, name), later, later)
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	if want := len(role.All()) + len(imageRoles()) + 1; len(made) != want {
		t.Fatalf("%d files made, want %d (a package per role, the images, the compose file): %v", len(made), want, made)
	}
	if err := run(testVersion, second, testCommit, testTime); err != nil {
		t.Fatal(err)
	}
	for _, name := range made {
		a, _ := os.ReadFile(filepath.Join(first, name))
		b, err := os.ReadFile(filepath.Join(second, name))
		if err != nil || !bytes.Equal(a, b) {
			t.Errorf("%s differs between the two builds (%v)", name, err)
		}
	}
}

// TestDebianPackages checks the packages with lintian, installs them with
// dpkg, and checks that the files land, that each binary runs -version,
// that each manual page formats without warnings and documents every flag
// of -h, that systemd-analyze accepts each unit, that only the proxy is
// enabled on install, and that the installed proxy starts serving Tor's
// network with its default configuration and no flag (in a network
// namespace of its own, so that it reaches nothing); then purges them. It
// needs root and a machine whose dpkg holds no flurry package.
func TestDebianPackages(t *testing.T) {
	dir := release(t)
	testtool.NeedRoot(t, "installs the packages with dpkg")
	dpkg := testtool.Need(t, "dpkg", "dpkg")
	lintian := testtool.Need(t, "lintian", "lintian")
	analyze := testtool.Need(t, "systemd-analyze", "systemd")
	groff := testtool.Need(t, "groff", "groff-base")
	unshare := testtool.Need(t, "unshare", "util-linux")
	for _, r := range role.All() {
		if exec.Command(dpkg, "-s", r.Binary()).Run() == nil {
			t.Skipf("%s is installed here; not replacing it", r.Binary())
		}
	}
	debs, _ := filepath.Glob(filepath.Join(dir, "*_"+hostPlatform(t).DebianArch+".deb"))
	if len(debs) != len(role.All()) {
		t.Fatalf("%d packages, want %d: %v", len(debs), len(role.All()), debs)
	}
	runCmd(t, lintian, append([]string{"--fail-on", "error,warning"}, debs...)...)

	const wants = "/etc/systemd/system/multi-user.target.wants/"
	t.Cleanup(func() {
		args := []string{"--purge"}
		for _, r := range role.All() {
			args = append(args, r.Binary())
		}
		if out, err := exec.Command(dpkg, args...).CombinedOutput(); err != nil {
			t.Errorf("dpkg --purge: %v\n%s", err, out)
		}
		for _, r := range role.All() {
			if _, err := os.Lstat(wants + r.Binary() + ".service"); err == nil {
				t.Errorf("%s is still enabled after purge", r.Binary())
			}
		}
	})
	runCmd(t, dpkg, append([]string{"-i"}, debs...)...)
	for _, r := range role.All() {
		t.Run(r.Name, func(t *testing.T) {
			name := r.Binary()
			want := []string{deb.BinaryPath(r), deb.ManPagePath(r), "/usr/share/doc/" + name + "/copyright", "/usr/share/doc/" + name + "/changelog.gz"}
			if r.Service {
				want = append(want, deb.UnitPath(r), deb.DefaultsPath(r))
			}
			listed := runCmd(t, dpkg, "-L", name)
			for _, f := range want {
				if _, err := os.Stat(f); err != nil || !strings.Contains(listed, f+"\n") {
					t.Errorf("%s: not installed by the package (%v)", f, err)
				}
			}
			out := runCmd(t, deb.BinaryPath(r), "-version")
			if !strings.HasPrefix(out, name+" "+testVersion+" commit 0123456789abcdef") {
				t.Errorf("%s -version printed %q", name, out)
			}
			checkManPage(t, r, groff)
			_, err := os.Lstat(wants + name + ".service")
			if enabled := err == nil; enabled != r.StartOnInstall {
				t.Errorf("enabled on install: %v, want %v", enabled, r.StartOnInstall)
			}
			if !r.Service {
				return
			}
			if conf := runCmd(t, dpkg, "-s", name); !strings.Contains(conf, deb.DefaultsPath(r)+" ") {
				t.Errorf("%s is not a conffile:\n%s", deb.DefaultsPath(r), conf)
			}
			// The default flags must parse: the unit's command line, with
			// -version so that nothing starts.
			args := "FLURRY_" + strings.ToUpper(r.Name) + "_ARGS"
			runCmd(t, "sh", "-c", ". "+deb.DefaultsPath(r)+" && test -n \"$"+args+"\" && exec "+deb.BinaryPath(r)+" $"+args+" -version")
			runCmd(t, analyze, "verify", deb.UnitPath(r))
			// systemd's own exposure score, 0 (locked down) to 10: the units
			// score about 1.7; above 2.5 (25 in tenths) some hardening was lost.
			runCmd(t, analyze, "security", "--offline=true", "--threshold=25", deb.UnitPath(r))
			if r.StartOnInstall {
				cmd := exec.Command(unshare, "--net", "sh", "-c", ". "+deb.DefaultsPath(r)+" && exec "+deb.BinaryPath(r)+" $"+args)
				waitForLog(t, cmd, `msg="proxy starting" broker=https://snowflake-broker.torproject.net/ relay=wss://snowflake.torproject.net/ pattern=snowflake.torproject.net\$`)
			}
		})
	}
}

// checkManPage formats r's installed manual page with groff's warnings on
// and requires every flag the binary's -h lists.
func checkManPage(t *testing.T, r role.Role, groff string) {
	t.Helper()
	f, err := os.Open(deb.ManPagePath(r))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	zr, err := gzip.NewReader(f)
	if err != nil {
		t.Fatal(err)
	}
	page, err := io.ReadAll(zr)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = bytes.NewReader(page)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("groff: %v\n%s", err, out)
	}
	cmd = exec.Command(groff, "-man", "-Tascii", "-P-cbu")
	cmd.Stdin = bytes.NewReader(page)
	text, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	help, _ := exec.Command(deb.BinaryPath(r), "-h").CombinedOutput()
	flags := regexp.MustCompile(`(?m)^  (-[A-Za-z0-9][A-Za-z0-9_.-]*)`).FindAllSubmatch(help, -1)
	if len(flags) < 5 {
		t.Fatalf("%d flags in -h:\n%s", len(flags), help)
	}
	for _, m := range flags {
		if !regexp.MustCompile(`(?m)^ +` + regexp.QuoteMeta(string(m[1])) + `( |$)`).Match(text) {
			t.Errorf("the manual page lacks %s", m[1])
		}
	}
}

// waitForLog starts cmd and waits for a line of its standard error that
// matches pattern, then kills it.
func waitForLog(t *testing.T, cmd *exec.Cmd, pattern string) {
	t.Helper()
	re := regexp.MustCompile(pattern)
	stderr, err := cmd.StderrPipe()
	if err != nil {
		t.Fatal(err)
	}
	if err := cmd.Start(); err != nil {
		t.Fatal(err)
	}
	defer func() {
		cmd.Process.Signal(syscall.SIGTERM)
		cmd.Wait()
	}()
	found := make(chan bool, 1)
	var seen bytes.Buffer
	go func() {
		sc := bufio.NewScanner(stderr)
		for sc.Scan() {
			seen.WriteString(sc.Text() + "\n")
			if re.MatchString(sc.Text()) {
				found <- true
				io.Copy(io.Discard, stderr)
				return
			}
		}
		found <- false
	}()
	select {
	case ok := <-found:
		if !ok {
			t.Errorf("%s exited without logging %s:\n%s", cmd.Path, pattern, seen.String())
		}
	case <-time.After(time.Minute):
		t.Errorf("%s did not log %s within a minute", cmd.Path, pattern)
	}
}

// fakeBroker answers proxies' polls with "no match" and reports the first
// poll it gets.
func fakeBroker(t *testing.T) (*httptest.Server, <-chan string) {
	polls := make(chan string, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		body, _ := io.ReadAll(io.LimitReader(r.Body, 1<<16))
		if r.URL.Path == "/proxy" {
			select {
			case polls <- string(body):
			default:
			}
			w.Write([]byte(`{"Status":"no match","Offer":"","NAT":"","NextPoll":1000,"RelayURL":""}`))
			return
		}
		http.NotFound(w, r)
	}))
	t.Cleanup(srv.Close)
	return srv, polls
}
