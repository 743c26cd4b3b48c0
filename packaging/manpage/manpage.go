package manpage

import (
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"os/exec"
	"regexp"
	"strings"
	"time"
)

// Page is what a manual page says beside the -h text.
type Page struct {
	Name        string // the command, flurry-proxy
	Section     string // "1"
	Synopsis    string // a few words for the NAME line
	Description string // a paragraph that opens DESCRIPTION
	Version     string
	Date        time.Time
	SeeAlso     string // a line for SEE ALSO; empty: none
}

// Help runs binary with -h as the command name, in an environment that
// holds only HOME=~, so that defaults that depend on the machine read the
// same everywhere (a default under the user's cache directory shows as
// ~/.cache/...). It returns what the command printed.
func Help(ctx context.Context, binary, name string) (string, error) {
	cmd := exec.CommandContext(ctx, binary, "-h")
	cmd.Args[0] = name
	cmd.Env = []string{"HOME=~"}
	out, err := cmd.CombinedOutput()
	if err != nil {
		return "", fmt.Errorf("%s -h: %w\n%s", name, err, out)
	}
	return string(out), nil
}

var (
	flagLine    = regexp.MustCompile(`^  -([A-Za-z0-9][A-Za-z0-9_.-]*)(?: (\S+))?$`)
	flagUsage   = "    \t"
	headingLine = regexp.MustCompile(`^([A-Z][a-z]+):$`)
	usageLine   = regexp.MustCompile(`^Usage(?:: (.+)| of (\S+):)$`)
)

// ErrFormat: the -h text does not start with a usage line.
var ErrFormat = errors.New("help text: no usage line")

// Roff returns the page in man(7) format, made from help.
func Roff(p Page, help string) ([]byte, error) {
	lines := strings.Split(strings.TrimRight(help, "\n"), "\n")
	for len(lines) > 0 && strings.TrimSpace(lines[0]) == "" {
		lines = lines[1:]
	}
	if len(lines) == 0 {
		return nil, ErrFormat
	}
	m := usageLine.FindStringSubmatch(lines[0])
	if m == nil {
		return nil, fmt.Errorf("%w: %q", ErrFormat, lines[0])
	}
	synopsis := m[1]
	if synopsis == "" {
		synopsis = m[2] + " [flags]"
	}

	w := &writer{}
	w.raw(fmt.Sprintf(`.TH %s %s %s %s %s`, quote(strings.ToUpper(p.Name)), p.Section,
		quote(p.Date.UTC().Format("2006-01-02")), quote("Flurry "+p.Version), quote("Flurry manual")))
	// Flags and URLs must not be hyphenated, and are too long to justify.
	w.raw(".nh")
	w.raw(".ad l")
	w.raw(".SH NAME")
	w.text(p.Name + " - " + p.Synopsis)
	w.raw(".SH SYNOPSIS")
	w.text(synopsis)
	w.raw(".SH DESCRIPTION")
	for para := range strings.SplitSeq(p.Description, "\n\n") {
		w.raw(".PP")
		w.text(para)
	}

	section := "DESCRIPTION"
	for i := 1; i < len(lines); i++ {
		line := lines[i]
		switch {
		case strings.TrimSpace(line) == "":
			w.blank()
		case headingLine.MatchString(line):
			name := strings.ToUpper(headingLine.FindStringSubmatch(line)[1])
			if name == "FLAGS" {
				name = "OPTIONS"
			}
			section = w.section(name)
		case flagLine.MatchString(line):
			if section != "OPTIONS" {
				section = w.section("OPTIONS")
			}
			fm := flagLine.FindStringSubmatch(line)
			w.raw(".TP")
			tag := `\fB` + escape("-"+fm[1]) + `\fR`
			if fm[2] != "" {
				tag += " " + `\fI` + escape(fm[2]) + `\fR`
			}
			w.raw(tag)
			first := true
			for i+1 < len(lines) && strings.HasPrefix(lines[i+1], flagUsage) {
				i++
				if !first {
					w.raw(".br")
				}
				w.text(strings.TrimPrefix(lines[i], flagUsage))
				first = false
			}
		case strings.HasPrefix(line, " "):
			if section == "OPTIONS" {
				section = w.section("NOTES")
			}
			w.raw(".PP")
			w.raw(".RS 2")
			w.raw(".nf")
			for ; i < len(lines) && strings.HasPrefix(lines[i], " "); i++ {
				w.pre(strings.TrimPrefix(lines[i], "  "))
			}
			i--
			w.raw(".fi")
			w.raw(".RE")
		default:
			if section == "OPTIONS" {
				section = w.section("NOTES")
			}
			w.paragraph()
			if i > 1 && endsLine(lines[i-1], line) {
				w.raw(".br")
			}
			w.text(line)
		}
	}
	if p.SeeAlso != "" {
		w.section("SEE ALSO")
		w.text(p.SeeAlso)
	}
	return w.b.Bytes(), nil
}

// writer writes roff, opening a paragraph (.PP) before text that follows
// a blank line.
type writer struct {
	b         bytes.Buffer
	afterText bool // the last line written was text
	broken    bool // a blank line came since
}

func (w *writer) raw(s string) {
	w.b.WriteString(s)
	w.b.WriteByte('\n')
	w.afterText, w.broken = false, false
}

// text writes lines of text, which roff fills into paragraphs.
func (w *writer) text(s string) {
	for line := range strings.SplitSeq(s, "\n") {
		if line = strings.TrimSpace(line); line != "" {
			w.b.WriteString(`\&` + escape(line) + "\n")
			w.afterText, w.broken = true, false
		}
	}
}

// pre writes a line of a .nf block as it is.
func (w *writer) pre(line string) {
	w.b.WriteString(`\&` + escape(line) + "\n")
}

// endsLine reports whether prev, a line of prose in the -h text, ends a
// line on purpose rather than where the text was wrapped: it is short, or
// it ends a sentence and next starts another with a capital.
func endsLine(prev, next string) bool {
	if strings.TrimSpace(prev) == "" || strings.HasPrefix(prev, " ") {
		return false
	}
	if len(prev) < 60 {
		return true
	}
	sentence := strings.HasSuffix(prev, ".") || strings.HasSuffix(prev, ":")
	return sentence && next != "" && next[0] >= 'A' && next[0] <= 'Z'
}

func (w *writer) blank() { w.broken = true }

// paragraph opens a paragraph if the text does not continue one.
func (w *writer) paragraph() {
	if !w.afterText || w.broken {
		w.raw(".PP")
	}
}

func (w *writer) section(name string) string {
	w.raw(".SH " + quote(name))
	return name
}

// escape makes s literal roff text: a backslash is \e and a hyphen-minus
// \- (which Debian's groff prints as "-", so that flags can be copied).
func escape(s string) string {
	s = strings.ReplaceAll(s, `\`, `\e`)
	return strings.ReplaceAll(s, "-", `\-`)
}

// quote makes s one macro argument.
func quote(s string) string {
	return `"` + strings.ReplaceAll(escape(s), `"`, `\(dq`) + `"`
}

// Gzip compresses a page as Debian wants it: best compression, no name
// and no time in the header, so the bytes depend on the page alone.
func Gzip(page []byte) []byte {
	var b bytes.Buffer
	zw, _ := gzip.NewWriterLevel(&b, gzip.BestCompression) // a valid level: no error
	zw.Write(page)                                         // a bytes.Buffer: no error
	zw.Close()
	return b.Bytes()
}
