package interop

import (
	"context"
	"path/filepath"
	"testing"
	"time"

	"github.com/flurrypt/flurry/loadgen/chainload"
	"github.com/flurrypt/flurry/loadgen/chainproc"
	"github.com/flurrypt/flurry/loadgen/manyusers"
	"github.com/flurrypt/flurry/loadgen/relayload"
)

// implementations names both implementations' binaries as flurry-loadgen's
// side-by-side runs take them: Snowflake's first, so that ratios are to it.
func implementations(t *testing.T) []chainproc.Implementation {
	fl, sf := binaries(t)
	return []chainproc.Implementation{
		{Name: "snowflake", Broker: sf.Broker, Proxy: sf.Proxy, Client: sf.Client, Server: sf.Server},
		{Name: "flurry", Broker: fl.Broker, Proxy: fl.Proxy, Client: fl.Client, Server: fl.Relay},
	}
}

// TestRelayUsers runs flurry-loadgen's many-user relay run against both
// relays in one run, briefly: each must serve every user, bulk and
// interactive, through its WebSocket and turbotunnel path as proxies feed
// it. docs/performance.md has the long runs.
func TestRelayUsers(t *testing.T) {
	ims := implementations(t)
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	res, err := relayload.RunRelayUsers(ctx, relayload.RelayUsersConfig{
		Implementations: ims, Sessions: []int{10}, Rounds: 1, Dir: t.TempDir(),
		Duration: 2 * time.Second, WarmUp: 500 * time.Millisecond, StartTimeout: time.Minute,
		Mix: manyusers.UserMix{BulkShare: 0.3, Think: 100 * time.Millisecond},
	})
	if err != nil {
		t.Fatalf("RunRelayUsers: %v (%+v)", err, res)
	}
	for _, r := range res.Runs {
		t.Logf("%s: %d users, %.1f MB/s, relay %.2f ms CPU per MB, %.0f KiB per session",
			r.Implementation, r.Sessions, r.MBPerSec, r.CPUMsPerMB, r.BytesPerSession/1024)
		if r.Opened != r.Sessions || r.Started != r.Sessions || r.FailedUsers != 0 || r.MB <= 0 || len(r.Classes) != 2 {
			t.Errorf("%s: %+v (errors %v)", r.Implementation, r, r.ErrorSamples)
		}
	}
}

// TestProxyUsers runs flurry-loadgen's many-user proxy run with both whole
// chains, two users through each one proxy, in a network namespace.
func TestProxyUsers(t *testing.T) {
	if !inNetns(t, nil) {
		return
	}
	ims := implementations(t)
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	res, err := chainload.RunProxyUsers(ctx, chainload.ProxyUsersConfig{
		Implementations: ims, Users: []int{2}, Rounds: 1, Dir: filepath.Join(t.TempDir(), "chains"),
		Duration: 2 * time.Second, WarmUp: 500 * time.Millisecond, StartTimeout: 2 * time.Minute,
		Mix: manyusers.UserMix{BulkShare: 0.5, Think: 100 * time.Millisecond},
	})
	if err != nil {
		t.Fatalf("RunProxyUsers: %v (%+v)", err, res)
	}
	for _, r := range res.Runs {
		t.Logf("%s: %d users, %.1f MB/s, proxy %.2f ms CPU per MB, RSS %.1f MiB",
			r.Implementation, r.Users, r.MBPerSec, r.CPUMsPerMB[chainproc.RoleProxy], float64(r.ProxyRSS)/(1<<20))
		if r.Started != r.Users || r.FailedUsers != 0 || r.MB <= 0 || r.ProxyRSS <= 0 {
			t.Errorf("%s: %+v (errors %v)", r.Implementation, r, r.ErrorSamples)
		}
	}
}
