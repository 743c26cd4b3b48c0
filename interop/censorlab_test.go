package interop

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
	"github.com/flurrypt/flurry/internal/stuntest"
	"github.com/flurrypt/flurry/internal/testenv"
	"github.com/flurrypt/flurry/internal/webrtcfp"
	"github.com/flurrypt/flurry/netlab"
	"github.com/flurrypt/flurry/netlab/censor"
)

// labConfig is one column of the censor lab's matrix: a chain and the
// covert DTLS mode its client and proxy are given ("" leaves each binary
// at its default).
type labConfig struct {
	Name   string
	Roles  Roles
	Covert string
}

// labConfigs are the matrix's columns: each implementation at its
// defaults, then Flurry in each covert DTLS mode, then the mixed chains a
// Flurry user meets (our client with Snowflake's volunteers, Snowflake's
// client with ours).
func labConfigs() []labConfig {
	sf := Roles{Snowflake, Snowflake, Snowflake, Snowflake}
	return []labConfig{
		{Name: "snowflake", Roles: sf},
		{Name: "flurry", Roles: Roles{}},
		{Name: "flurry-mimic", Roles: Roles{}, Covert: "mimic"},
		{Name: "flurry-randomize", Roles: Roles{}, Covert: "randomize"},
		{Name: "flurry-randomizemimic", Roles: Roles{}, Covert: "randomizemimic"},
		// Broker and relay are Flurry's in both mixed chains.
		{Name: "fl-client+sf-proxy", Roles: Roles{Broker: Flurry, Proxy: Snowflake, Client: Flurry, Relay: Flurry}},
		{Name: "sf-client+fl-proxy", Roles: Roles{Broker: Flurry, Proxy: Flurry, Client: Snowflake, Relay: Flurry}},
	}
}

// labCensors are the matrix's rows: no censor, then each program alone.
func labCensors() []string {
	return append([]string{"none"}, censor.Names()...)
}

// labFileSize is what each cell downloads.
const labFileSize = 5 << 20

// labCellTimeout bounds one cell's download: past it the censor has won.
// Unblocked, a cell takes a few seconds on the lab's lan profile.
const labCellTimeout = 30 * time.Second

// labResult is one cell of the matrix.
type labResult struct {
	Config    string
	Censor    string
	Through   bool
	Error     string        `json:",omitempty"`
	FirstByte time.Duration `json:",omitempty"`
	MBps      float64       `json:",omitempty"`
	// CensorDrops is how many packets the censor dropped.
	CensorDrops uint64
}

// TestCensorLab runs every chain of labConfigs through every censor
// program of the lab (real processes, the client behind the lab's
// middlebox), downloads labFileSize through each and checks it, and
// prints the matrix as a table and JSON (FLURRY_CENSORLAB_OUT names a file
// for the JSON). It fails if Flurry at its defaults is blocked by a censor
// that Snowflake at its defaults gets through, or if a chain is blocked
// without any censor. Each cell is a parallel subtest, CENSOR/CHAIN: a
// blocked cell only waits, so `make censorlab` runs four at once
// (-parallel 4), and -run picks cells.
func TestCensorLab(t *testing.T) {
	if testing.Short() {
		t.Skip("the censor lab takes minutes")
	}
	testenv.Root(t, "the censor lab's namespaces and TUN devices")
	fl, sf := binaries(t)
	allow := browserJA4s(t)
	t.Logf("dtls-allowlist: the JA4s of Debian's Chromium: %v", allow)

	type cell struct {
		cfg    labConfig
		censor string
	}
	var cells []cell
	for _, name := range labCensors() {
		for _, cfg := range labConfigs() {
			cells = append(cells, cell{cfg, name})
		}
	}
	var (
		mu      sync.Mutex
		results []labResult
	)
	t.Run("cells", func(t *testing.T) {
		for i, c := range cells {
			t.Run(c.censor+"/"+c.cfg.Name, func(t *testing.T) {
				t.Parallel()
				r := runLabCell(t, i, c.cfg, c.censor, censor.Options{AllowJA4: allow}, fl, sf)
				if r.Through {
					t.Logf("through: first byte after %v, %.2f MB/s", r.FirstByte.Round(time.Millisecond), r.MBps)
				} else {
					t.Logf("blocked: %s", r.Error)
				}
				mu.Lock()
				results = append(results, r)
				mu.Unlock()
			})
		}
	})

	t.Logf("censor lab (%d MiB through each chain, client behind the middlebox, SHA-256 checked):\n%s",
		labFileSize>>20, formatLab(results))
	b, err := json.MarshalIndent(results, "", "  ")
	if err != nil {
		t.Fatal(err)
	}
	if out := os.Getenv("FLURRY_CENSORLAB_OUT"); out != "" {
		if err := os.WriteFile(out, b, 0o644); err != nil {
			t.Fatal(err)
		}
	}
	checkLab(t, results)
}

// runLabCell builds a lab with the named censor, starts the chain across
// it and downloads through it.
func runLabCell(t *testing.T, i int, cfg labConfig, censorName string, opt censor.Options, fl demo.Binaries, sf SnowflakeBinaries) labResult {
	res := labResult{Config: cfg.Name, Censor: censorName}
	fail := func(err error) labResult {
		res.Error = err.Error()
		return res
	}
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	var prog censor.Program
	if censorName != "none" {
		var err error
		if prog, err = censor.Parse(censorName, opt); err != nil {
			t.Errorf("%s: %v", censorName, err)
			return fail(err)
		}
	}
	lab, err := netlab.New(ctx, netlab.Config{Name: fmt.Sprintf("cl%d", i), Censor: prog})
	if err != nil {
		t.Errorf("%s / %s: lab: %v", cfg.Name, censorName, err)
		return fail(err)
	}
	defer lab.Close()
	// The STUN server stands outside, beside the broker.
	var stunURL string
	if err := lab.Do(netlab.Outside, func() error {
		stunURL = stuntest.StartOn(t, lab.OutsideAddr(0))
		return nil
	}); err != nil {
		return fail(err)
	}
	dir := filepath.Join(t.TempDir(), strings.ReplaceAll(cfg.Name, " ", "-")+"-"+censorName)
	c, err := StartChain(ctx, ChainConfig{Roles: cfg.Roles, Flurry: fl, Snowflake: sf, Dir: dir,
		FileSize: labFileSize, STUN: stunURL, Covert: cfg.Covert, Lab: lab})
	if err != nil {
		t.Errorf("%s / %s: chain: %v", cfg.Name, censorName, err)
		return fail(err)
	}
	defer c.Close()
	dctx, dcancel := context.WithTimeout(ctx, labCellTimeout)
	defer dcancel()
	var fr demo.FetchResult
	err = c.InClient(func() error {
		var err error
		fr, err = demo.FetchTarget(dctx, c.SOCKSAddr, c.Target, nil)
		return err
	})
	st := lab.Stats()
	res.CensorDrops = st.Up.CensorDropped + st.Down.CensorDropped
	if err != nil {
		if errors.Is(err, demo.ErrChecksum) {
			t.Errorf("%s / %s: corrupted download: %v", cfg.Name, censorName, err)
		}
		if censorName == "none" {
			t.Logf("%s without a censor failed; logs:\n%s", cfg.Name, c.LogTails(20))
		}
		return fail(err)
	}
	res.Through = true
	res.FirstByte = fr.FirstByte
	res.MBps = fr.Throughput() / 1e6
	return res
}

// checkLab asserts what the lab must show: every chain works without a
// censor, and Flurry at its defaults gets through wherever Snowflake at its
// defaults does.
func checkLab(t *testing.T, results []labResult) {
	t.Helper()
	through := map[[2]string]bool{}
	for _, r := range results {
		through[[2]string{r.Config, r.Censor}] = r.Through
		if r.Censor == "none" && !r.Through {
			t.Errorf("%s fails without any censor: %s", r.Config, r.Error)
		}
	}
	for _, name := range labCensors() {
		if through[[2]string{"snowflake", name}] && !through[[2]string{"flurry", name}] {
			t.Errorf("%s: Snowflake at its defaults gets through, Flurry at its defaults does not", name)
		}
	}
}

// formatLab prints the matrix: a row per censor, a column per chain.
func formatLab(results []labResult) string {
	var b strings.Builder
	cfgs := labConfigs()
	fmt.Fprintf(&b, "%-20s", "censor")
	for _, c := range cfgs {
		fmt.Fprintf(&b, " | %-22s", c.Name)
	}
	b.WriteString("\n")
	for _, name := range labCensors() {
		fmt.Fprintf(&b, "%-20s", name)
		for _, c := range cfgs {
			i := slices.IndexFunc(results, func(r labResult) bool { return r.Config == c.Name && r.Censor == name })
			cellText := "?"
			if i >= 0 {
				r := results[i]
				if r.Through {
					cellText = fmt.Sprintf("ok %.1fMB/s %.1fs", r.MBps, r.FirstByte.Seconds())
				} else {
					cellText = "BLOCKED"
				}
			}
			fmt.Fprintf(&b, " | %-22s", cellText)
		}
		b.WriteString("\n")
	}
	return b.String()
}

// browserJA4s returns the JA4s of the DTLS ClientHellos Debian's Chromium
// sends (the answerer's, the DTLS client of a WebRTC connection), for
// dtls-allowlist.
func browserJA4s(t *testing.T) []string {
	t.Helper()
	seen := map[string]bool{}
	for _, dgs := range webrtcfp.Chromium(t, 2) {
		var sent [2][][]byte // by side; the DTLS client's hello is in one
		for _, d := range dgs {
			sent[d.From] = append(sent[d.From], d.Data)
		}
		for _, side := range sent {
			if ja4, ok := censor.JA4OfDatagrams(side); ok {
				seen[ja4] = true
			}
		}
	}
	if len(seen) == 0 {
		t.Fatal("no DTLS ClientHello in Chromium's datagrams")
	}
	out := make([]string, 0, len(seen))
	for ja4 := range seen {
		out = append(out, ja4)
	}
	slices.Sort(out)
	return out
}
