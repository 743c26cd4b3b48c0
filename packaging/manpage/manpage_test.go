package manpage

import (
	"bytes"
	"compress/gzip"
	"errors"
	"io"
	"os/exec"
	"strings"
	"testing"
	"time"

	"github.com/flurrypt/flurry/packaging/internal/testtool"
)

const sampleHelp = `Usage: flurry-demo -addr ADDR [flags]

flurry-demo shows what a page looks like. It wraps its prose at
seventy-odd columns, as every -h text does, so that roff refills it.
Short lines end a line.
.dot and \backslash stay literal.

Flags:
  -addr address
    	listen address (default ":443")
  -backend value
    	repeatable: one of
    	tcp:HOST:PORT or
    	unix:PATH
  -verbose
    	debug logging

Environment:
  GOGC  the Go collector's target
`

func samplePage() Page {
	return Page{Name: "flurry-demo", Section: "1", Synopsis: "a demonstration", Description: "The demo\ndemonstrates.",
		Version: "0.1.0", Date: time.Date(2026, 11, 5, 12, 0, 0, 0, time.UTC), SeeAlso: "docs/"}
}

func TestRoff(t *testing.T) {
	got, err := Roff(samplePage(), sampleHelp)
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{
		`.TH "FLURRY\-DEMO" 1 "2026\-11\-05" "Flurry 0.1.0" "Flurry manual"` + "\n",
		".SH NAME\n\\&flurry\\-demo \\- a demonstration\n",
		".SH SYNOPSIS\n\\&flurry\\-demo \\-addr ADDR [flags]\n",
		".SH DESCRIPTION\n.PP\n\\&The demo\n\\&demonstrates.\n",
		"\\&seventy\\-odd columns, as every \\-h text does, so that roff refills it.\n.br\n\\&Short lines end a line.\n",
		"\\&.dot and \\ebackslash stay literal.\n",
		".SH \"OPTIONS\"\n.TP\n\\fB\\-addr\\fR \\fIaddress\\fR\n\\&listen address (default \":443\")\n",
		"\\&repeatable: one of\n.br\n\\&tcp:HOST:PORT or\n.br\n\\&unix:PATH\n",
		".TP\n\\fB\\-verbose\\fR\n\\&debug logging\n",
		".SH \"ENVIRONMENT\"\n.PP\n.RS 2\n.nf\n\\&GOGC  the Go collector's target\n.fi\n.RE\n",
		".SH \"SEE ALSO\"\n\\&docs/\n",
	} {
		if !strings.Contains(string(got), want) {
			t.Errorf("page lacks\n%s\n--- page:\n%s", want, got)
		}
	}
}

// TestRoffFormatted: groff formats the page without a warning, and the
// text keeps every flag.
func TestRoffFormatted(t *testing.T) {
	groff := testtool.Need(t, "groff", "groff-base")
	page, err := Roff(samplePage(), sampleHelp)
	if err != nil {
		t.Fatal(err)
	}
	cmd := exec.Command(groff, "-man", "-Tutf8", "-ww", "-z")
	cmd.Stdin = bytes.NewReader(page)
	if out, err := cmd.CombinedOutput(); err != nil || len(out) > 0 {
		t.Errorf("groff: %v\n%s", err, out)
	}
	cmd = exec.Command(groff, "-man", "-Tascii", "-P-cbu")
	cmd.Stdin = bytes.NewReader(page)
	text, err := cmd.Output()
	if err != nil {
		t.Fatal(err)
	}
	for _, want := range []string{"-addr address", "-backend value", "-verbose", ".dot and \\backslash stay literal."} {
		if !bytes.Contains(text, []byte(want)) {
			t.Errorf("formatted page lacks %q:\n%s", want, text)
		}
	}
}

func TestRoffNoUsage(t *testing.T) {
	if _, err := Roff(samplePage(), "flurry-demo does things\n"); !errors.Is(err, ErrFormat) {
		t.Errorf("a text without a usage line: %v", err)
	}
	got, err := Roff(samplePage(), "Usage of flurry-demo:\n  -v\n    \tverbose\n")
	if err != nil || !strings.Contains(string(got), ".SH SYNOPSIS\n\\&flurry\\-demo [flags]\n") {
		t.Errorf("Go's default usage line: %v\n%s", err, got)
	}
}

func TestGzip(t *testing.T) {
	page := []byte(".TH X 1\n")
	z := Gzip(page)
	if !bytes.Equal(z, Gzip(page)) {
		t.Error("not deterministic")
	}
	zr, err := gzip.NewReader(bytes.NewReader(z))
	if err != nil {
		t.Fatal(err)
	}
	if zr.Name != "" || !zr.ModTime.IsZero() {
		t.Errorf("header has name %q, time %v", zr.Name, zr.ModTime)
	}
	if got, _ := io.ReadAll(zr); !bytes.Equal(got, page) {
		t.Errorf("round trip: %q", got)
	}
}
