package interop

import (
	"bufio"
	"context"
	"encoding/json"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/internal/networkpreset"
)

// TestNetworkPresetTor: -network tor stands for Snowflake v2.14.1's own
// proxy defaults, as its proxy's -h shows them, and Tor's bridge lines are
// those of its client/torrc.
func TestNetworkPresetTor(t *testing.T) {
	_, sfBins := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()

	help, _ := exec.CommandContext(ctx, sfBins.Proxy, "-h").CombinedOutput()
	var want []networkpreset.Flag
	for _, name := range []string{"broker", "relay", "allowed-relay-hostname-pattern", "stun", "nat-probe-server"} {
		// "  -NAME TYPE\n    \tusage...(default "VALUE")", the usage
		// possibly on several lines.
		m := regexp.MustCompile(`(?m)^  -` + regexp.QuoteMeta(name) + `( \S+)?\n(?:    \t.*\n)*?    \t.*\(default "([^"]*)"\)$`).FindSubmatch(help)
		if m == nil {
			t.Fatalf("no default of -%s in Snowflake's proxy -h:\n%s", name, help)
		}
		want = append(want, networkpreset.Flag{Name: name, Value: string(m[2])})
	}
	if got := networkpreset.Tor().ProxyFlags(); !slices.Equal(got, want) {
		t.Errorf("-network tor sets\n%v\nSnowflake's proxy defaults are\n%v", got, want)
	}

	out, err := goOutput(ctx, "go", "", "mod", "download", "-json", SnowflakeModule+"@"+SnowflakeVersion)
	if err != nil {
		t.Fatal(err)
	}
	var mod struct{ Dir string }
	if err := json.Unmarshal([]byte(out), &mod); err != nil {
		t.Fatal(err)
	}
	f, err := os.Open(filepath.Join(mod.Dir, "client", "torrc"))
	if err != nil {
		t.Fatal(err)
	}
	defer f.Close()
	var lines []string
	for sc := bufio.NewScanner(f); sc.Scan(); {
		if strings.HasPrefix(sc.Text(), "Bridge snowflake ") {
			lines = append(lines, sc.Text())
		}
	}
	if got := networkpreset.Tor().BridgeLines(); len(lines) == 0 || !slices.Equal(got, lines) {
		t.Errorf("Tor's bridge lines are\n%s\nSnowflake's client/torrc has\n%s", strings.Join(got, "\n"), strings.Join(lines, "\n"))
	}
}
