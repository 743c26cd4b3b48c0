package loadgen

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
)

func TestUserMixKinds(t *testing.T) {
	m, err := UserMix{BulkShare: 0.2}.withDefaults()
	if err != nil {
		t.Fatal(err)
	}
	var bulk []int
	for i := range 12 {
		if m.kind(i) == UserBulk {
			bulk = append(bulk, i)
		}
	}
	if want := []int{0, 5, 10}; !slices.Equal(bulk, want) {
		t.Errorf("bulk users %v, want %v", bulk, want)
	}
	none, _ := UserMix{BulkShare: -1}.withDefaults()
	all, _ := UserMix{BulkShare: 1}.withDefaults()
	for i := range 5 {
		if none.kind(i) != UserInteractive || all.kind(i) != UserBulk {
			t.Fatalf("user %d: share 0 gives %s, share 1 gives %s", i, none.kind(i), all.kind(i))
		}
	}
	for _, bad := range []UserMix{{BulkShare: 1.5}, {ResponseBytes: maxMixedResponse + 1}, {RequestBytes: -1}, {Think: -time.Second}} {
		if _, err := bad.withDefaults(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: err = %v, want ErrInvalidConfig", bad, err)
		}
	}
}

// TestMixedTarget speaks the mixed target's protocol by hand.
func TestMixedTarget(t *testing.T) {
	tg, err := StartTarget(TargetConfig{Mode: TargetMixed})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()

	bulk, err := net.Dial("tcp", tg.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer bulk.Close()
	_ = bulk.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := bulk.Write([]byte{mixedBulk}); err != nil {
		t.Fatal(err)
	}
	if _, err := io.ReadFull(bulk, make([]byte, 200_000)); err != nil {
		t.Fatalf("bulk: %v", err)
	}

	ia, err := net.Dial("tcp", tg.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer ia.Close()
	_ = ia.SetDeadline(time.Now().Add(10 * time.Second))
	req := append([]byte{mixedInteractive}, appendMixedRequest(nil, 70_000, 300)...)
	req = append(req, make([]byte, 300)...)
	for round := range 2 {
		if round == 1 {
			req = req[1:] // the kind goes first only
		}
		if _, err := ia.Write(req); err != nil {
			t.Fatal(err)
		}
		if _, err := io.ReadFull(ia, make([]byte, 70_000)); err != nil {
			t.Fatalf("response %d: %v", round, err)
		}
	}
	// Nothing more than asked for: the next read waits.
	_ = ia.SetReadDeadline(time.Now().Add(100 * time.Millisecond))
	var ne net.Error
	if n, err := ia.Read(make([]byte, 1)); n != 0 || !errors.As(err, &ne) || !ne.Timeout() {
		t.Errorf("after the responses: %d bytes, %v; want a timeout", n, err)
	}

	// A request over the bounds ends the connection.
	bad, err := net.Dial("tcp", tg.Addr())
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_ = bad.SetDeadline(time.Now().Add(10 * time.Second))
	if _, err := bad.Write(append([]byte{mixedInteractive}, appendMixedRequest(nil, maxMixedResponse+1, 0)...)); err != nil {
		t.Fatal(err)
	}
	if b, err := io.ReadAll(bad); len(b) > 0 || err != nil {
		t.Errorf("oversize request: read %d bytes, %v; want a close", len(b), err)
	}
}

func TestParseSockstat(t *testing.T) {
	const text = "sockets: used 15\nTCP: inuse 1 orphan 16 tw 8 alloc 17 mem 1962\nUDP: inuse 3 mem 7\nUDPLITE: inuse 0\n"
	if got, err := parseSockstat(text, "TCP"); err != nil || got != 1962*pageSize {
		t.Errorf("TCP = %d, %v", got, err)
	}
	if got, err := parseSockstat(text, "UDP"); err != nil || got != 7*pageSize {
		t.Errorf("UDP = %d, %v", got, err)
	}
	if _, err := parseSockstat(text, "UDPLITE"); err == nil {
		t.Error("UDPLITE has no mem: want an error")
	}
}

func TestParseProcIO(t *testing.T) {
	got, err := parseProcIO([]byte("rchar: 6976\nwchar: 0\nsyscr: 10\nsyscw: 3\nread_bytes: 0\n"))
	if err != nil || got != (ProcIO{Reads: 10, Writes: 3}) {
		t.Errorf("got %+v, %v", got, err)
	}
	if _, err := parseProcIO([]byte("rchar: 1\n")); !errors.Is(err, ErrProcStats) {
		t.Errorf("no counters: err = %v", err)
	}
}

func TestRelayUsersConfigChecks(t *testing.T) {
	im := Implementation{Name: "a", Server: "/bin/true"}
	for _, cfg := range []RelayUsersConfig{
		{Dir: t.TempDir()},
		{Implementations: []Implementation{im}},
		{Dir: t.TempDir(), Implementations: []Implementation{im, im}},
		{Dir: t.TempDir(), Implementations: []Implementation{{Name: "b"}}},
		{Dir: t.TempDir(), Implementations: []Implementation{im}, Sessions: []int{0}},
		{Dir: t.TempDir(), Implementations: []Implementation{im}, Rounds: -1},
	} {
		if _, err := cfg.withDefaults(); !errors.Is(err, ErrInvalidConfig) {
			t.Errorf("%+v: err = %v, want ErrInvalidConfig", cfg, err)
		}
	}
}

func TestProxyUsersConfigChecks(t *testing.T) {
	im := Implementation{Name: "a", Server: "/bin/true"}
	for _, cfg := range []ProxyUsersConfig{
		{Dir: t.TempDir()},
		{Implementations: []Implementation{im}},
		{Dir: t.TempDir(), Implementations: []Implementation{im}, Users: []int{5000}},
	} {
		if _, err := cfg.withDefaults(); !errors.Is(err, ErrInvalidConfig) {
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
	ctx := testCtx(t)
	bins, err := demo.Build(ctx, demo.BuildConfig{OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	ims := []Implementation{{Name: "one", Server: bins.Relay}, {Name: "two", Server: bins.Relay}}
	res, err := RunRelayUsers(ctx, RelayUsersConfig{
		Implementations: ims, Sessions: []int{3, 6}, Rounds: 2, Dir: t.TempDir(),
		Duration: time.Second, WarmUp: 200 * time.Millisecond, StartTimeout: 30 * time.Second,
		Mix: UserMix{BulkShare: 0.34, ResponseBytes: 4096, Think: 50 * time.Millisecond},
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
func checkRelayUsers(t *testing.T, res RelayUsersResult, ims []Implementation, counts []int, rounds int) {
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

// TestUserGroupStopsQuietly checks that users end without counting a
// failure when the run stops them.
func TestUserGroupStopsQuietly(t *testing.T) {
	tg, err := StartTarget(TargetConfig{Mode: TargetMixed})
	if err != nil {
		t.Fatal(err)
	}
	defer tg.Close()
	var errs errorSamples
	mix, _ := UserMix{BulkShare: 0.5, Think: 10 * time.Millisecond, ResponseBytes: 1000}.withDefaults()
	g := newUserGroup(mix, 2, &errs)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	for i := range 2 {
		c, err := net.Dial("tcp", tg.Addr())
		if err != nil {
			t.Fatal(err)
		}
		go func() { g.run(ctx, i, c); done <- struct{}{} }()
	}
	if n := g.waitStarted(ctx, 10*time.Second); n != 2 {
		t.Fatalf("%d users started", n)
	}
	a := g.snapshot()
	time.Sleep(100 * time.Millisecond)
	w := g.window(a, g.snapshot(), 100*time.Millisecond)
	if len(w.classes) != 2 || w.down <= 0 {
		t.Errorf("window %+v", w)
	}
	cancel()
	<-done
	<-done
	if g.failed.Load() != 0 {
		t.Errorf("%d users failed: %v", g.failed.Load(), errs.get())
	}
}
