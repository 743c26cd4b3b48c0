package torpt

import (
	"bytes"
	"context"
	"errors"
	"log/slog"
	"net"
	"net/url"
	"os"
	"path/filepath"
	"regexp"
	"strings"
	"testing"

	pt "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/goptlib"
)

// toTor captures what the test makes goptlib say to tor.
func toTor(t *testing.T) *bytes.Buffer {
	var buf bytes.Buffer
	saved := pt.Stdout
	pt.Stdout = &buf
	t.Cleanup(func() { pt.Stdout = saved })
	return &buf
}

var discard = slog.New(slog.DiscardHandler)

func TestManagedAndStateDir(t *testing.T) {
	t.Setenv("TOR_PT_MANAGED_TRANSPORT_VER", "")
	t.Setenv("TOR_PT_STATE_LOCATION", "")
	if _, err := MakeStateDir(); Managed() || StateDir() != "" || err == nil {
		t.Errorf("managed, or a state directory (%v), outside tor", err)
	}
	t.Setenv("TOR_PT_MANAGED_TRANSPORT_VER", "1")
	t.Setenv("TOR_PT_STATE_LOCATION", "/var/lib/tor/pt_state")
	if !Managed() || StateDir() != "/var/lib/tor/pt_state" {
		t.Errorf("under tor: managed %v, state directory %q", Managed(), StateDir())
	}
	dir := filepath.Join(t.TempDir(), "pt_state")
	t.Setenv("TOR_PT_STATE_LOCATION", dir)
	if got, err := MakeStateDir(); got != dir || err != nil {
		t.Errorf("MakeStateDir = %q, %v", got, err)
	}
	if fi, err := os.Stat(dir); err != nil || !fi.IsDir() || fi.Mode().Perm() != 0o700 {
		t.Errorf("state directory: %v, %v", fi, err)
	}
}

// TestClient: the setup reports the version, a snowflake method gets a
// loopback SOCKS listener, any other method an error.
func TestClient(t *testing.T) {
	out := toTor(t)
	t.Setenv("TOR_PT_MANAGED_TRANSPORT_VER", "1")
	t.Setenv("TOR_PT_CLIENT_TRANSPORTS", "obfs4,snowflake")
	t.Setenv("TOR_PT_PROXY", "")
	info, err := ClientSetup("flurry-test")
	if err != nil {
		t.Fatal(err)
	}
	lns := ClientListen(info.MethodNames, discard)
	if len(lns) != 1 {
		t.Fatalf("%d listeners, want 1", len(lns))
	}
	defer lns[0].Close()
	want := regexp.MustCompile(`^VERSION 1
STATUS TYPE=version IMPLEMENTATION="flurry-test" VERSION="[^"]+"
CMETHOD-ERROR obfs4 no such method
CMETHOD snowflake socks5 (127\.0\.0\.1:\d+)
CMETHODS DONE
$`)
	m := want.FindStringSubmatch(out.String())
	if m == nil || m[1] != lns[0].Addr().String() {
		t.Fatalf("to tor:\n%s", out)
	}
	c, err := net.Dial("tcp", m[1])
	if err != nil {
		t.Fatal(err)
	}
	c.Close()
}

func TestUpstreamProxy(t *testing.T) {
	ok := func(context.Context, string) error { return nil }
	out := toTor(t)
	if u, err := UpstreamProxy(context.Background(), pt.ClientInfo{}, ok); u != "" || err != nil || out.Len() != 0 {
		t.Errorf("no proxy: %q, %v, to tor %q", u, err, out)
	}
	for _, tt := range []struct {
		proxy string
		check error
		want  string // to tor
	}{
		{"socks5://127.0.0.1:1080", nil, "PROXY DONE\n"},
		{"http://127.0.0.1:8080", nil, `PROXY-ERROR proxy scheme "http" is not supported`},
		{"socks5://127.0.0.1:1080", errors.New("no UDP from 192.0.2.7:1080"), "PROXY-ERROR no UDP from [scrubbed]\n"},
	} {
		out.Reset()
		u, _ := url.Parse(tt.proxy)
		var checked string
		got, err := UpstreamProxy(context.Background(), pt.ClientInfo{ProxyURL: u}, func(_ context.Context, p string) error {
			checked = p
			return tt.check
		})
		wantOK := tt.want == "PROXY DONE\n"
		if !strings.HasPrefix(out.String(), tt.want) || (err == nil) != wantOK || (got == tt.proxy) != wantOK {
			t.Errorf("%s (check %v): %q, %v; to tor %q, want %q", tt.proxy, tt.check, got, err, out, tt.want)
		}
		if u.Scheme == "socks5" && checked != tt.proxy {
			t.Errorf("%s: checked %q", tt.proxy, checked)
		}
	}
}

// TestServer: the setup keeps the snowflake bind addresses, the listeners
// are announced with their arguments; without a snowflake method the setup
// fails after SMETHODS DONE.
func TestServer(t *testing.T) {
	out := toTor(t)
	t.Setenv("TOR_PT_MANAGED_TRANSPORT_VER", "1")
	t.Setenv("TOR_PT_SERVER_TRANSPORTS", "snowflake,obfs4")
	t.Setenv("TOR_PT_SERVER_BINDADDR", "snowflake-127.0.0.1:0,obfs4-127.0.0.1:0")
	t.Setenv("TOR_PT_SERVER_TRANSPORT_OPTIONS", "snowflake:num-turbotunnel=2")
	t.Setenv("TOR_PT_ORPORT", "127.0.0.1:9001")
	t.Setenv("TOR_PT_STATE_LOCATION", t.TempDir())
	t.Setenv("TOR_PT_EXTENDED_SERVER_PORT", "")
	_, binds, err := ServerSetup("flurry-test")
	if err != nil {
		t.Fatal(err)
	}
	if len(binds) != 1 || binds[0].MethodName != Method {
		t.Fatalf("bind addresses %+v", binds)
	}
	if v, _ := binds[0].Options.Get("num-turbotunnel"); v != "2" {
		t.Errorf("options %v", binds[0].Options)
	}
	lns := ServerListen(binds, false, nil, discard)
	if len(lns) != 1 {
		t.Fatalf("%d listeners", len(lns))
	}
	defer lns[0].Close()
	want := "SMETHOD-ERROR obfs4 no such method\nSMETHOD snowflake " + lns[0].Addr().String() + " ARGS:tls=no\nSMETHODS DONE\n"
	if !strings.HasSuffix(out.String(), want) {
		t.Errorf("to tor:\n%s\nwant it to end in\n%s", out, want)
	}

	out.Reset()
	lns = ServerListen(binds, true, []string{"relay.example", "relay2.example"}, discard)
	defer lns[0].Close()
	want = "SMETHOD snowflake " + lns[0].Addr().String() + " ARGS:hostname=relay.example,hostname=relay2.example,tls=yes\nSMETHODS DONE\n"
	if out.String() != want {
		t.Errorf("with TLS, to tor:\n%s\nwant\n%s", out, want)
	}

	out.Reset()
	t.Setenv("TOR_PT_SERVER_TRANSPORTS", "obfs4")
	t.Setenv("TOR_PT_SERVER_BINDADDR", "obfs4-127.0.0.1:0")
	t.Setenv("TOR_PT_SERVER_TRANSPORT_OPTIONS", "")
	if _, _, err := ServerSetup("flurry-test"); err == nil || !strings.HasSuffix(out.String(), "SMETHODS DONE\n") {
		t.Errorf("no snowflake: %v; to tor:\n%s", err, out)
	}
}

func TestLogAndErrors(t *testing.T) {
	out := toTor(t)
	LogNotice("proxy 192.0.2.1:443 connected")
	ClientFailed(errors.New("bad -ice 192.0.2.9"))
	ServerFailed("TLS setup failed")
	want := "LOG SEVERITY=notice MESSAGE=\"proxy [scrubbed] connected\"\n" +
		"CMETHOD-ERROR snowflake bad -ice [scrubbed]\nCMETHODS DONE\nSMETHOD-ERROR snowflake TLS setup failed\nSMETHODS DONE\n"
	if out.String() != want {
		t.Errorf("to tor:\n%s\nwant\n%s", out, want)
	}
}
