package networkpreset

import (
	"flag"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
)

func TestLookup(t *testing.T) {
	n, err := Lookup("tor")
	if err != nil || n.Name != "tor" || len(n.ProxyFlags()) == 0 || len(n.BridgeLines()) == 0 {
		t.Fatalf("Lookup(tor) = %+v, %v", n, err)
	}
	if _, err := Lookup("Tor"); err == nil || !strings.Contains(err.Error(), `unknown network "Tor" (known: tor)`) {
		t.Errorf("Lookup(Tor): %v", err)
	}
}

// TestApply: a preset fills in the flags the command line left unset and
// never overrides one it set.
func TestApply(t *testing.T) {
	fs := flag.NewFlagSet("test", flag.ContinueOnError)
	broker := fs.String("broker", "", "")
	relay := fs.String("relay", "", "")
	stun := fs.String("stun", "", "")
	if err := fs.Parse([]string{"-relay", "wss://relay.example/"}); err != nil {
		t.Fatal(err)
	}
	err := Apply(fs, []Flag{{"broker", "https://broker.example/"}, {"relay", "wss://other.example/"}, {"stun", ""}})
	if err != nil {
		t.Fatal(err)
	}
	if *broker != "https://broker.example/" || *relay != "wss://relay.example/" || *stun != "" {
		t.Errorf("broker %q, relay %q, stun %q", *broker, *relay, *stun)
	}
	if err := Apply(fs, []Flag{{"no-such-flag", "x"}}); err == nil || !strings.Contains(err.Error(), "preset flag -no-such-flag") {
		t.Errorf("a preset naming a missing flag: %v", err)
	}
}

func TestProxyUsage(t *testing.T) {
	u := ProxyUsage()
	for _, n := range networks() {
		for _, f := range n.ProxyFlags() {
			if !strings.Contains(u, "    -"+f.Name+" "+f.Value+"\n") {
				t.Errorf("usage lacks -%s %s:\n%s", f.Name, f.Value, u)
			}
		}
	}
}

// TestDocumented: docs/install.md shows every preset's proxy flags, as rows
// "| `-FLAG` | `VALUE` |", and its bridge lines, under the heading
// "### `-network NAME`", so that the docs say what -network does.
func TestDocumented(t *testing.T) {
	doc, err := os.ReadFile("../../docs/install.md")
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range networks() {
		_, section, ok := strings.Cut(string(doc), "### `-network "+n.Name+"`\n")
		if !ok {
			t.Errorf("docs/install.md has no section ### `-network %s`", n.Name)
			continue
		}
		section, _, _ = strings.Cut(section, "\n#")
		for _, f := range n.ProxyFlags() {
			if row := "| `-" + f.Name + "` | `" + f.Value + "` |"; !strings.Contains(section, row) {
				t.Errorf("docs/install.md, -network %s, lacks the row\n%s", n.Name, row)
			}
		}
		for _, line := range n.BridgeLines() {
			if !strings.Contains(section, "\n"+line+"\n") {
				t.Errorf("docs/install.md, -network %s, lacks the bridge line\n%s", n.Name, line)
			}
		}
	}
}

// TestBridgeLinesInDocs: every copy of Tor's bridge lines in docs/ (a line
// with Tor's fronted broker URL) is one of the preset's, so that the docs
// cannot keep an old one.
func TestBridgeLinesInDocs(t *testing.T) {
	docs, err := filepath.Glob("../../docs/*.md")
	if err != nil || len(docs) == 0 {
		t.Fatalf("no docs: %v", err)
	}
	lines := Tor().BridgeLines()
	for _, path := range docs {
		data, err := os.ReadFile(path)
		if err != nil {
			t.Fatal(err)
		}
		for i, line := range strings.Split(string(data), "\n") {
			if strings.Contains(line, "url=https://1098762253.rsc.cdn77.org/") && !slices.Contains(lines, strings.TrimSpace(line)) {
				t.Errorf("%s:%d: a Tor bridge line that is not the preset's:\n%s", path, i+1, line)
			}
		}
	}
}
