package tortest

import (
	"context"
	"fmt"
	"os"
	"os/exec"
	"path/filepath"

	"github.com/flurrypt/flurry/demo"
)

// TorBackend is one tor instance of a multi-instance bridge: it has no
// pluggable transport of its own; a standalone flurry-relay reaches it
// through its ExtORPort (flurry-relay -backend BackendFlag()). The
// instances of one bridge share its identity keys, so that clients see one
// bridge whichever instance serves them.
type TorBackend struct {
	Name            string
	DataDir, Torrc  string
	ExtORAddr       string
	NoticeLog       string
	Args            []string // tor's arguments
	fingerprintPath string
}

// Cookie is the instance's ExtORPort authentication cookie.
func (b *TorBackend) Cookie() string {
	return filepath.Join(b.DataDir, "extended_orport_auth_cookie")
}

// BackendFlag is the flurry-relay -backend value for this instance.
func (b *TorBackend) BackendFlag() string {
	return fmt.Sprintf("extorport:%s,cookie=%s,name=%s", b.ExtORAddr, b.Cookie(), b.Name)
}

// Fingerprint returns the bridge's identity fingerprint.
func (b *TorBackend) Fingerprint() (string, error) { return readFingerprint(b.fingerprintPath) }

// Ready is a readiness probe: the fingerprint and the cookie are written
// and the ExtORPort accepts connections.
func (b *TorBackend) Ready() func(context.Context) error {
	tcp := demo.TCPReady(b.ExtORAddr)
	return func(ctx context.Context) error {
		if _, err := b.Fingerprint(); err != nil {
			return err
		}
		if _, err := os.Stat(b.Cookie()); err != nil {
			return err
		}
		return tcp(ctx)
	}
}

// WriteTorBackends writes n tor instances of one bridge under dir, named
// b1..bn, each with its own ExtORPort and cookie and all with the
// identity keys of the first (generated here with tor --list-fingerprint).
// network as for WriteTorBridge.
func WriteTorBackends(ctx context.Context, dir, torPath string, n int, network ...string) ([]*TorBackend, error) {
	addrs, err := demo.FreeAddrs(n)
	if err != nil {
		return nil, err
	}
	var out []*TorBackend
	for i := range n {
		name := fmt.Sprintf("b%d", i+1)
		b := &TorBackend{
			Name:      name,
			DataDir:   filepath.Join(dir, name+"-data"),
			Torrc:     filepath.Join(dir, name+"-torrc"),
			ExtORAddr: addrs[i],
			NoticeLog: filepath.Join(dir, name+"-notice.log"),
		}
		b.Args = []string{"-f", b.Torrc, "--defaults-torrc", os.DevNull}
		b.fingerprintPath = filepath.Join(b.DataDir, "fingerprint")
		if err := os.MkdirAll(filepath.Join(b.DataDir, "keys"), 0o700); err != nil {
			return nil, err
		}
		torrc := fmt.Sprintf(`# Instance %s of a multi-instance Flurry bridge (written by package demo).
DataDirectory %s
BridgeRelay 1
PublishServerDescriptor 0
AssumeReachable 1
ORPort 127.0.0.1:auto
ExtORPort %s
SocksPort 0
ControlPort 0
Nickname flurry%s
ContactInfo flurry-demo@example.invalid
UseDefaultFallbackDirs 0
%s
ShutdownWaitLength 0
SafeLogging 0
Log notice stdout
Log notice file %s
`, name, b.DataDir, b.ExtORAddr, name, networkLines(network), b.NoticeLog)
		if err := os.WriteFile(b.Torrc, []byte(torrc), 0o600); err != nil {
			return nil, err
		}
		out = append(out, b)
	}
	// The first instance's keys, copied to the others.
	cmd := exec.CommandContext(ctx, torPath, append([]string{"--list-fingerprint"}, out[0].Args...)...)
	if msg, err := cmd.CombinedOutput(); err != nil {
		return nil, fmt.Errorf("tor --list-fingerprint: %w\n%s", err, msg)
	}
	keys, err := os.ReadDir(filepath.Join(out[0].DataDir, "keys"))
	if err != nil {
		return nil, err
	}
	for _, b := range out[1:] {
		for _, k := range keys {
			data, err := os.ReadFile(filepath.Join(out[0].DataDir, "keys", k.Name()))
			if err != nil {
				return nil, err
			}
			if err := os.WriteFile(filepath.Join(b.DataDir, "keys", k.Name()), data, 0o600); err != nil {
				return nil, err
			}
		}
	}
	return out, nil
}
