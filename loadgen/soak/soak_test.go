package soak

import (
	"bytes"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/testkit/loadgentest"
)

// TestSoak runs a short soak of the real binaries with every kind of
// churn and checks that it happened and was measured: downloads complete,
// proxies are killed, the broker restarts, clients arrive, and every
// process is sampled. Whether anything grows is for long runs to say.
func TestSoak(t *testing.T) {
	if testing.Short() {
		t.Skip("process-level test: builds the binaries and takes real seconds (skipped with -short)")
	}
	ctx := loadgentest.Context(t)
	bins, err := demo.Build(ctx, demo.BuildConfig{OutDir: t.TempDir()})
	if err != nil {
		t.Fatal(err)
	}
	res, err := RunSoak(ctx, SoakConfig{
		Binaries: bins, Dir: t.TempDir(), Duration: 20 * time.Second, WarmUp: 4 * time.Second,
		SampleInterval: 500 * time.Millisecond, ProxyKillInterval: 4 * time.Second, BrokerRestartInterval: 9 * time.Second,
		ClientInterval: 5 * time.Second, ClientLife: 8 * time.Second, DownloadInterval: 500 * time.Millisecond, FileSize: 64 << 10,
	})
	if err != nil {
		t.Fatalf("RunSoak: %v (%+v)", err, res)
	}
	if res.DownloadsOK == 0 || res.ProxyKills == 0 || res.BrokerRestarts == 0 || res.ClientsArrived == 0 {
		t.Errorf("churn or downloads missing: %d downloads ok, %d proxy kills, %d broker restarts, %d clients arrived (errors %v)",
			res.DownloadsOK, res.ProxyKills, res.BrokerRestarts, res.ClientsArrived, res.ErrorSamples)
	}
	seen := map[string]int{}
	for _, p := range res.Processes {
		seen[p.Name]++
		for _, s := range p.Samples {
			if s.RSS <= 0 || s.Count <= 0 {
				t.Errorf("%s (pid %d): sample %+v", p.Name, p.PID, s)
				break
			}
		}
		if (p.Name == "broker" || p.Name == "relay") && p.CountKind != "goroutines" {
			t.Errorf("%s counted %s, want goroutines from its metrics", p.Name, p.CountKind)
		}
	}
	for _, name := range []string{"broker", "relay", "natprobe", "client", "proxy-1", "proxy-2"} {
		if seen[name] == 0 {
			t.Errorf("%s never sampled (%v)", name, seen)
		}
	}
	if seen["broker"] < 2 {
		t.Errorf("broker sampled in %d runs, want 2 (a restart)", seen["broker"])
	}
	var out bytes.Buffer
	WriteSoakTable(&out, &res)
	if !bytes.Contains(out.Bytes(), []byte("natprobe")) {
		t.Errorf("table without the natprobe:\n%s", out.String())
	}
}

// TestSeriesKind: a broker's first sample may come before its metrics
// serve (a thread count); its series then starts again with goroutines,
// and a later failed scrape does not mix threads back in.
func TestSeriesKind(t *testing.T) {
	r := &soakRun{series: map[string]*SoakSeries{}}
	r.add("broker", 1, "threads", SoakSample{Seconds: 1, RSS: 1, Count: 9})
	r.add("broker", 1, "goroutines", SoakSample{Seconds: 2, RSS: 1, Count: 40})
	r.add("broker", 1, "threads", SoakSample{Seconds: 3, RSS: 1, Count: 9})
	if len(r.order) != 1 {
		t.Fatalf("%d series, want 1", len(r.order))
	}
	if s := r.order[0]; s.CountKind != "goroutines" || len(s.Samples) != 1 || s.Samples[0].Count != 40 {
		t.Errorf("series %s with %+v, want goroutines with the one sample of 40", s.CountKind, s.Samples)
	}
}
