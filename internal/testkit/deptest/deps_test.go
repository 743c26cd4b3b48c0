package deptest

import (
	"encoding/json"
	"io"
	"os/exec"
	"strings"
	"testing"
)

const module = "github.com/flurrypt/flurry"

// roles are the top-level directories of the role packages. No role may
// import another (tests may).
var roles = []string{"broker", "proxy", "client", "relay", "natprobe", "loadgen"}

// pkg is the part of `go list -json` output these tests read.
type pkg struct {
	ImportPath string
	Dir        string
	Name       string
	Standard   bool
	Deps       []string
	Imports    []string
	GoFiles    []string
}

// listPackages runs `go list -json` with the given arguments.
func listPackages(t testing.TB, args ...string) []pkg {
	t.Helper()
	cmd := exec.Command("go", append([]string{"list", "-json"}, args...)...)
	cmd.Dir = "../../.."
	out, err := cmd.Output()
	if err != nil {
		var stderr string
		if ee, ok := err.(*exec.ExitError); ok {
			stderr = string(ee.Stderr)
		}
		t.Fatalf("go list %v: %v\n%s", args, err, stderr)
	}
	var pkgs []pkg
	dec := json.NewDecoder(strings.NewReader(string(out)))
	for {
		var p pkg
		if err := dec.Decode(&p); err == io.EOF {
			break
		} else if err != nil {
			t.Fatalf("decode go list output: %v", err)
		}
		pkgs = append(pkgs, p)
	}
	return pkgs
}

// roleOf returns the role an import path belongs to, or "".
func roleOf(importPath string) string {
	rest, ok := strings.CutPrefix(importPath, module+"/")
	if !ok {
		return ""
	}
	top, _, _ := strings.Cut(rest, "/")
	for _, r := range roles {
		if top == r {
			return r
		}
	}
	return ""
}

func TestMessagesIsStandardLibraryOnly(t *testing.T) {
	pkgs := listPackages(t, "-deps", module+"/messages")
	for _, p := range pkgs {
		if p.Standard || p.ImportPath == module+"/messages" {
			continue
		}
		t.Errorf("messages depends on %s; it must use the standard library only", p.ImportPath)
	}
}

func TestRolesDoNotImportEachOther(t *testing.T) {
	for _, p := range listPackages(t, module+"/...") {
		own := roleOf(p.ImportPath)
		for _, dep := range p.Deps {
			if r := roleOf(dep); r != "" && own != "" && r != own {
				t.Errorf("%s (role %s) imports %s (role %s)", p.ImportPath, own, dep, r)
			}
			if r := roleOf(dep); r != "" && own == "" && strings.HasPrefix(p.ImportPath, module+"/common/") {
				t.Errorf("%s is shared code but imports role package %s", p.ImportPath, dep)
			}
			if strings.HasPrefix(p.ImportPath, module+"/messages") && strings.HasPrefix(dep, module+"/") {
				t.Errorf("messages imports %s; it must stand alone", dep)
			}
		}
	}
}

// forbidden lists, per role, modules its packages must not link.
var forbidden = map[string][]string{
	// The client runs on users' machines and in mobile apps: keep it small.
	"client": {"github.com/prometheus/", module + "/broker"},
	// The relay carries WebSocket traffic only; WebRTC is the proxy's job.
	// (kcp-go links pion/transport's deadline helper, which is not WebRTC.)
	"relay": {"github.com/pion/webrtc", "github.com/pion/ice", "github.com/pion/dtls", "github.com/pion/sctp"},
}

func TestRoleDependencyLimits(t *testing.T) {
	for _, p := range listPackages(t, module+"/...") {
		bad := forbidden[roleOf(p.ImportPath)]
		for _, dep := range p.Deps {
			for _, prefix := range bad {
				if strings.HasPrefix(dep, prefix) {
					t.Errorf("%s links %s, which its role must not", p.ImportPath, dep)
				}
			}
		}
	}
}

// TestClientLibraryLinksNoAWS: the client library leaves SQS rendezvous,
// and with it the AWS SDK, to the programs that import package client/sqs.
func TestClientLibraryLinksNoAWS(t *testing.T) {
	for _, p := range listPackages(t, "-deps", module+"/client") {
		if strings.HasPrefix(p.ImportPath, "github.com/aws/") {
			t.Errorf("%s/client depends on %s; only %s/client/sqs may link the AWS SDK", module, p.ImportPath, module)
		}
	}
}

// testkit holds the project's packages made for tests only, above the
// roles; they may import testOnly modules, and only tests may import them.
const testkit = module + "/internal/testkit/"

// testOnly are modules and packages that only tests (and the testkit) may
// import.
var testOnly = []string{"go.uber.org/goleak", "github.com/valyala/fasthttp", "github.com/stretchr/testify", "go.uber.org/mock", "github.com/golang/mock", "github.com/chromedp/", testkit}

func TestNoTestLibrariesInProduct(t *testing.T) {
	for _, p := range listPackages(t, module+"/...") {
		if strings.HasPrefix(p.ImportPath, testkit) {
			continue
		}
		for _, dep := range p.Deps {
			for _, prefix := range testOnly {
				if strings.HasPrefix(dep, prefix) {
					t.Errorf("%s links the test library %s outside tests", p.ImportPath, dep)
				}
			}
		}
	}
}
