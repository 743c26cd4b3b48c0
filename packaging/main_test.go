package main

import (
	"bytes"
	"crypto/sha256"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

// need returns the path of a tool, skipping the test without it (failing
// with CI=true, where .ci/run installs it).
func need(t *testing.T, tool string) string {
	t.Helper()
	p, err := exec.LookPath(tool)
	if err != nil {
		if os.Getenv("CI") == "true" {
			t.Fatalf("%s is missing (.ci/run installs it)", tool)
		}
		t.Skipf("%s is missing (Debian: apt-get install lintian systemd)", tool)
	}
	return p
}

func runCmd(t *testing.T, dir, name string, args ...string) string {
	t.Helper()
	cmd := exec.Command(name, args...)
	cmd.Dir = dir
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("%s %s: %v\n%s", name, strings.Join(args, " "), err, out)
	}
	return string(out)
}

func TestDebVersion(t *testing.T) {
	for in, want := range map[string]string{"0.1.0": "0.1.0", "0.1.0-rc.1": "0.1.0~rc.1", "1.2.3-a-b": "1.2.3~a-b"} {
		if got := debVersion(in); got != want {
			t.Errorf("debVersion(%q) = %q, want %q", in, got, want)
		}
	}
}

// TestPackages builds the Linux binaries of this machine's architecture as
// scripts/release.sh does, packages them, checks the packages with lintian,
// installs them with dpkg, checks that the files land, that each binary
// runs -version, and that systemd-analyze accepts each unit; then purges
// them. It needs root and a machine whose dpkg holds no flurry package.
func TestPackages(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every role")
	}
	goarch := map[string]string{"amd64": "amd64", "arm64": "arm64"}[runtime.GOARCH]
	if runtime.GOOS != "linux" || goarch == "" || os.Geteuid() != 0 {
		if os.Getenv("CI") == "true" {
			t.Fatal("needs root on linux/amd64 or linux/arm64")
		}
		t.Skip("needs root on linux/amd64 or linux/arm64 (installs the packages with dpkg)")
	}
	dpkg := need(t, "dpkg")
	lintian := need(t, "lintian")
	analyze := need(t, "systemd-analyze")
	for _, r := range roles {
		if exec.Command("dpkg", "-s", "flurry-"+r.name).Run() == nil {
			t.Skipf("flurry-%s is installed here; not replacing it", r.name)
		}
	}

	const version = "0.0.0-debtest"
	dir := t.TempDir()
	build := exec.Command("scripts/release.sh", version, "linux/"+goarch)
	build.Dir = ".."
	build.Env = append(os.Environ(), "OUT="+dir, "COMMIT=0123456789abcdef0123456789abcdef01234567")
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("release.sh: %v\n%s", err, out)
	}
	if err := run(version, dir, time.Unix(1764547200, 0)); err != nil {
		t.Fatal(err)
	}
	debs, _ := filepath.Glob(filepath.Join(dir, "*.deb"))
	if len(debs) != len(roles) {
		t.Fatalf("%d packages, want %d: %v", len(debs), len(roles), debs)
	}
	runCmd(t, dir, lintian, append([]string{"--fail-on", "error,warning"}, debs...)...)

	t.Cleanup(func() {
		args := []string{"--purge"}
		for _, r := range roles {
			args = append(args, "flurry-"+r.name)
		}
		if out, err := exec.Command(dpkg, args...).CombinedOutput(); err != nil {
			t.Errorf("dpkg --purge: %v\n%s", err, out)
		}
	})
	runCmd(t, dir, dpkg, append([]string{"-i"}, debs...)...)
	for _, r := range roles {
		name := "flurry-" + r.name
		t.Run(r.name, func(t *testing.T) {
			want := []string{"/usr/bin/" + name, "/usr/share/doc/" + name + "/copyright", "/usr/share/doc/" + name + "/changelog.gz"}
			unit := "/usr/lib/systemd/system/" + name + ".service"
			if r.service {
				want = append(want, unit, "/etc/default/"+name)
			}
			listed := runCmd(t, "/", dpkg, "-L", name)
			for _, f := range want {
				if _, err := os.Stat(f); err != nil || !strings.Contains(listed, f+"\n") {
					t.Errorf("%s: not installed by the package (%v)", f, err)
				}
			}
			out := runCmd(t, "/", "/usr/bin/"+name, "-version")
			if !strings.HasPrefix(out, name+" "+version+" commit 0123456789abcdef") {
				t.Errorf("%s -version printed %q", name, out)
			}
			if !r.service {
				return
			}
			if conf := runCmd(t, "/", dpkg, "-s", name); !strings.Contains(conf, "/etc/default/"+name+" ") {
				t.Errorf("/etc/default/%s is not a conffile:\n%s", name, conf)
			}
			// The default flags must parse: the unit's command line, with
			// -version so that nothing starts.
			vr := "FLURRY_" + strings.ToUpper(r.name) + "_ARGS"
			runCmd(t, "/", "sh", "-c", ". /etc/default/"+name+" && test -n \"$"+vr+"\" && exec /usr/bin/"+name+" $"+vr+" -version")
			runCmd(t, "/", analyze, "verify", unit)
			// systemd's own exposure score, 0 (locked down) to 10: the units
			// score about 1.7; above 2.5 (25 in tenths) some hardening was lost.
			runCmd(t, "/", analyze, "security", "--offline=true", "--threshold=25", unit)
		})
	}
}

// TestReproducible packages the same binaries twice, from two directories
// whose files have different modification times, and requires identical
// packages: only -mtime may set the time inside them.
func TestReproducible(t *testing.T) {
	const version = "0.0.0-repro"
	sums := make([]map[string][]byte, 2)
	for i := range sums {
		dir := filepath.Join(t.TempDir(), fmt.Sprintf("tree-%d", i))
		if err := os.Mkdir(dir, 0o755); err != nil {
			t.Fatal(err)
		}
		for _, r := range roles {
			bin := filepath.Join(dir, "flurry-"+r.name+"-"+version+"-linux-arm64")
			if err := os.WriteFile(bin, []byte("#!/bin/sh\necho "+r.name+"\n"), 0o755); err != nil {
				t.Fatal(err)
			}
			when := time.Unix(1700000000+int64(i)*86400, 0)
			if err := os.Chtimes(bin, when, when); err != nil {
				t.Fatal(err)
			}
		}
		if err := run(version, dir, time.Unix(1764547200, 0)); err != nil {
			t.Fatal(err)
		}
		debs, _ := filepath.Glob(filepath.Join(dir, "*.deb"))
		if len(debs) != len(roles) {
			t.Fatalf("%d packages, want %d", len(debs), len(roles))
		}
		sums[i] = map[string][]byte{}
		for _, d := range debs {
			data, err := os.ReadFile(d)
			if err != nil {
				t.Fatal(err)
			}
			sum := sha256.Sum256(data)
			sums[i][filepath.Base(d)] = sum[:]
		}
	}
	for name, sum := range sums[0] {
		if !bytes.Equal(sum, sums[1][name]) {
			t.Errorf("%s differs between the two builds", name)
		}
	}
}
