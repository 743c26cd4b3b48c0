package relayload

import (
	"bytes"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/testkit/loadgentest"
	"github.com/flurrypt/flurry/loadgen/chainproc"
	"github.com/flurrypt/flurry/loadgen/internal/measure"
	"github.com/flurrypt/flurry/loadgen/manyusers"
)

func TestRelayUsersConfigChecks(t *testing.T) {
	im := chainproc.Implementation{Name: "a", Server: "/bin/true"}
	for _, cfg := range []RelayUsersConfig{
		{Dir: t.TempDir()},
		{Implementations: []chainproc.Implementation{im}},
		{Dir: t.TempDir(), Implementations: []chainproc.Implementation{im, im}},
		{Dir: t.TempDir(), Implementations: []chainproc.Implementation{{Name: "b"}}},
		{Dir: t.TempDir(), Implementations: []chainproc.Implementation{im}, Sessions: []int{0}},
		{Dir: t.TempDir(), Implementations: []chainproc.Implementation{im}, Rounds: -1},
	} {
		if _, err := cfg.withDefaults(); !errors.Is(err, measure.ErrInvalidConfig) {
			t.Errorf("%+v: err = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

// TestRelayUsers runs two copies of Flurry's relay binary side by side
// under a few users of each kind, as RunRelayUsers runs Snowflake's server
// and Flurry's relay (the interop module runs that pair).
func TestRelayUsers(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level test: builds the relay and takes real seconds (skipped with -short)")
	}
	ctx := loadgentest.Context(t)
	bins, err := demo.Build(ctx, demo.BuildConfig{OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ims := []chainproc.Implementation{{Name: "one", Server: bins.Relay}, {Name: "two", Server: bins.Relay}}
	res, err := RunRelayUsers(ctx, RelayUsersConfig{
		Implementations: ims, Sessions: []int{3, 6}, Rounds: 2, Dir: t.TempDir(),
		Duration: time.Second, WarmUp: 200 * time.Millisecond, StartTimeout: 30 * time.Second,
		Mix: manyusers.UserMix{BulkShare: 0.34, ResponseBytes: 4096, Think: 50 * time.Millisecond},
	})
	if err != nil {
		t.Fatalf("RunRelayUsers: %v (%+v)", err, res)
	}
	checkRelayUsers(t, res, ims, []int{3, 6}, 2)
	var out bytes.Buffer
	if err := WriteRelayUsersTable(&out, res); err != nil || !strings.Contains(out.String(), "two") {
		t.Errorf("table (%v):\n%s", err, out.String())
	}
}

// checkRelayUsers checks that every run took place and measured something.
func checkRelayUsers(t *testing.T, res RelayUsersResult, ims []chainproc.Implementation, counts []int, rounds int) {
	t.Helper()
	if len(res.Runs) != len(ims)*len(counts)*rounds || len(res.Summaries) != len(ims)*len(counts) {
		t.Fatalf("%d runs and %d summaries", len(res.Runs), len(res.Summaries))
	}
	for i, r := range res.Runs {
		if r.Opened != r.Sessions || r.Started != r.Sessions || r.FailedUsers != 0 || r.MB <= 0 || r.RSS <= 0 || len(r.Classes) != 2 {
			t.Errorf("run %+v (errors %v)", r, r.ErrorSamples)
		}
		// Alternating order: the first implementation leads in odd rounds.
		lead := ims[0].Name
		if r.Round%2 == 0 {
			lead = ims[len(ims)-1].Name
		}
		if i%len(ims) == 0 && r.Implementation != lead {
			t.Errorf("run %d (round %d) by %s, want %s first", i, r.Round, r.Implementation, lead)
		}
	}
	for _, s := range res.Summaries {
		if s.Runs != rounds {
			t.Errorf("summary %+v", s)
		}
	}
}
