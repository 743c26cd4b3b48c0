package versiontest

import (
	"context"
	"os/exec"
	"path"
	"path/filepath"
	"runtime"
	"strings"
	"testing"
	"time"
)

const versionPkg = "github.com/flurrypt/flurry/common/version"

// commands lists the main packages under */cmd/ (internal/cmd holds build
// tools and internal/testkit test servers, not shipped binaries).
func commands(t *testing.T) []string {
	t.Helper()
	out, err := exec.Command("go", "list", "-f", `{{if eq .Name "main"}}{{.ImportPath}}{{end}}`, "github.com/flurrypt/flurry/...").Output()
	if err != nil {
		t.Fatalf("go list: %v", err)
	}
	var cmds []string
	for _, p := range strings.Fields(string(out)) {
		if strings.Contains(p, "/cmd/") && !strings.Contains(p, "/internal/cmd/") && !strings.Contains(p, "/internal/testkit/") {
			cmds = append(cmds, p)
		}
	}
	if len(cmds) < 5 {
		t.Fatalf("found only %d commands: %v", len(cmds), cmds)
	}
	return cmds
}

func TestEveryCommandPrintsVersion(t *testing.T) {
	if testing.Short() {
		t.Skip("builds every command")
	}
	const (
		stampedVersion = "9.8.7-test"
		stampedCommit  = "0123456789abcdef0123456789abcdef01234567"
	)
	cmds := commands(t)
	dir := t.TempDir()
	// Plain go build, apart from the stamp (which only the link sees): it
	// shares compiled packages with the other tests' builds.
	build := exec.Command("go", "build",
		"-ldflags=-X "+versionPkg+".Version="+stampedVersion+" -X "+versionPkg+".Commit="+stampedCommit,
		"-o", dir+string(filepath.Separator))
	build.Args = append(build.Args, cmds...)
	if out, err := build.CombinedOutput(); err != nil {
		t.Fatalf("go build: %v\n%s", err, out)
	}
	for _, pkg := range cmds {
		name := path.Base(pkg)
		t.Run(name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			cmd := exec.CommandContext(ctx, filepath.Join(dir, name), "-version")
			var stderr strings.Builder
			cmd.Stderr = &stderr
			out, err := cmd.Output()
			if err != nil {
				t.Fatalf("%s -version: %v (stdout %q, stderr %q)", name, err, out, stderr.String())
			}
			want := name + " " + stampedVersion + " commit " + stampedCommit + " " + runtime.Version() + " " + runtime.GOOS + "/" + runtime.GOARCH + "\n"
			if string(out) != want {
				t.Errorf("%s -version printed %q, want %q (stderr %q)", name, out, want, stderr.String())
			}
		})
	}
}
