package interop

import (
	"context"
	"os"
	"os/exec"
	"path/filepath"
	"strings"
	"sync"
	"syscall"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/testkit/testenv"
)

// firefoxPath is Debian's Firefox ESR.
const firefoxPath = "/usr/bin/firefox-esr"

// firefoxPrefs make a headless Firefox ESR a quiet browser proxy: host
// candidates by address (no mDNS names), nothing fetched from Mozilla, the
// page's console on standard output (where the test reads the proxy's log
// lines and any JavaScript error), and unsigned extensions dropped into the
// profile enabled.
const firefoxPrefs = `user_pref("media.peerconnection.ice.obfuscate_host_addresses", false);
user_pref("devtools.console.stdout.content", true);
user_pref("devtools.console.stdout.chrome", true);
user_pref("browser.dom.window.dump.enabled", true);
user_pref("xpinstall.signatures.required", false);
user_pref("extensions.autoDisableScopes", 0);
user_pref("extensions.enabledScopes", 15);
user_pref("app.update.enabled", false);
user_pref("app.normandy.enabled", false);
user_pref("browser.shell.checkDefaultBrowser", false);
user_pref("datareporting.policy.dataSubmissionEnabled", false);
user_pref("toolkit.telemetry.enabled", false);
user_pref("browser.safebrowsing.malware.enabled", false);
user_pref("browser.safebrowsing.phishing.enabled", false);
user_pref("network.captive-portal-service.enabled", false);
user_pref("network.connectivity-service.enabled", false);
user_pref("extensions.getAddons.cache.enabled", false);
user_pref("browser.startup.homepage_override.mstone", "ignore");
`

// firefox is a headless Firefox ESR whose output the test reads.
type firefox struct {
	cmd *exec.Cmd
	mu  sync.Mutex
	out strings.Builder
}

func (f *firefox) Write(p []byte) (int, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.out.Write(p)
}

func (f *firefox) output() string {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.out.String()
}

// startFirefox starts headless Firefox ESR with a fresh profile at url
// (empty: no page), with the extension archive xpi (if set) installed in
// the profile; it stops when the test ends.
func startFirefox(t *testing.T, url, xpi string) *firefox {
	t.Helper()
	testenv.Executable(t, firefoxPath, "firefox-esr")
	dir := t.TempDir()
	profile := filepath.Join(dir, "profile")
	if err := os.MkdirAll(filepath.Join(profile, "extensions"), 0o700); err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(profile, "user.js"), []byte(firefoxPrefs), 0o600); err != nil {
		t.Fatal(err)
	}
	if xpi != "" {
		b, err := os.ReadFile(xpi)
		if err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(profile, "extensions", "webproxy@flurry.invalid.xpi"), b, 0o600); err != nil {
			t.Fatal(err)
		}
	}
	args := []string{"--headless", "--no-remote", "--profile", profile}
	if url != "" {
		args = append(args, url)
	}
	f := &firefox{cmd: exec.Command(firefoxPath, args...)}
	f.cmd.Env = append(os.Environ(), "HOME="+dir, "TMPDIR="+dir, "MOZ_CRASHREPORTER_DISABLE=1")
	f.cmd.Stdout, f.cmd.Stderr = f, f
	f.cmd.SysProcAttr = &syscall.SysProcAttr{Setpgid: true, Pdeathsig: syscall.SIGKILL}
	if err := f.cmd.Start(); err != nil {
		t.Fatalf("start Firefox: %v", err)
	}
	t.Cleanup(func() {
		syscall.Kill(-f.cmd.Process.Pid, syscall.SIGKILL)
		f.cmd.Wait()
	})
	return f
}

// waitOutput waits until Firefox's output holds want, or fails the test
// after a far bound.
func (f *firefox) waitOutput(t *testing.T, want string) {
	t.Helper()
	deadline := time.Now().Add(90 * time.Second)
	for !strings.Contains(f.output(), want) {
		if time.Now().After(deadline) {
			t.Fatalf("Firefox never logged %q; its output:\n%s", want, f.output())
		}
		time.Sleep(100 * time.Millisecond)
	}
}

// TestWebProxyFirefox runs the browser proxy in Debian's headless Firefox
// ESR: the Firefox extension (Manifest V3, the proxy in its background
// page) installed from its .xpi into the profile (the test page runs the
// same modules; run it with -run TestWebProxyFirefox/page). It must start
// as type webext, pass the NAT test against
// flurry-natprobe (a WebRTC DataChannel that Firefox offers), poll the
// broker and answer a client's offer, with no JavaScript error. A whole
// download is not asked of Firefox: as the answering peer its ICE checks
// to the client succeed but the DataChannel never opens (docs/webproxy.md,
// "Not done yet"); the Chromium tests carry the chains.
func TestWebProxyFirefox(t *testing.T) {
	kinds := []string{"extension"}
	if strings.Contains(strings.Join(os.Args, " "), "TestWebProxyFirefox/page") {
		kinds = append(kinds, "page")
	}
	for _, kind := range kinds {
		t.Run(kind, func(t *testing.T) {
			if !inNetns(t, nil) {
				return
			}
			ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
			defer cancel()
			browserNetwork(t)
			c := startChainConfig(t, ctx, ChainConfig{Roles: browserRoles()[0], FileSize: chainFileSize, NoProxy: true,
				NATProbeAllInterfaces: true})
			build := buildWebProxy(t, c, "-allow-non-tls-relay")
			var f *firefox
			typ := "badge"
			if kind == "page" {
				f = startFirefox(t, serveDir(t, filepath.Join(build, "web"))+"index.html", "")
			} else {
				typ = "webext"
				f = startFirefox(t, "", filepath.Join(build, "flurry-webproxy-firefox.xpi"))
			}
			f.waitOutput(t, "flurry-webproxy: proxy starting capacity=4 type="+typ)
			f.waitOutput(t, "flurry-webproxy: NAT type type=unrestricted")
			// A client's rendezvous reaches the proxy, which answers it.
			dctx, dcancel := context.WithTimeout(ctx, 15*time.Second)
			defer dcancel()
			demo.FetchTarget(dctx, c.SOCKSAddr, c.Target, nil)
			f.waitOutput(t, "flurry-webproxy: client session failed: timed out waiting for the client's data channel")
			for _, line := range strings.Split(f.output(), "\n") {
				// A poll that failed and is retried (a busy machine's
				// slow broker) is behaviour, not an error: the proxy
				// went on to answer the client above.
				retried := strings.Contains(line, "console.warn") && strings.Contains(line, "retry_in_s=")
				if strings.Contains(line, "flurry") && !retried && (strings.Contains(line, "JavaScript error") || strings.Contains(line, "Uncaught") ||
					strings.Contains(line, "console.error") || strings.Contains(line, "console.warn")) {
					t.Errorf("Firefox: %s", line)
				}
			}
		})
	}
}
