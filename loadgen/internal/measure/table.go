package measure

import (
	"fmt"
	"io"
	"strings"
	"text/tabwriter"
)

// KiB formats b bytes in KiB, "-" for 0.
func KiB(b float64) string {
	if b == 0 {
		return "-"
	}
	return fmt.Sprintf("%.1f KiB", b/1024)
}

// MiBOrDash formats b bytes in MiB, "-" for 0.
func MiBOrDash(b int64) string {
	if b == 0 {
		return "-"
	}
	return MiB(b)
}

// CPUOrDash formats a CPU percentage, "-" for 0.
func CPUOrDash(p float64) string {
	if p == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f%%", p)
}

// MicrosOrDash formats microseconds, "-" for 0.
func MicrosOrDash(us float64) string {
	if us == 0 {
		return "-"
	}
	return fmt.Sprintf("%.0f", us)
}

// Table writes right-aligned columns under titles, as flurry-loadgen
// prints its results.
type Table struct {
	w  io.Writer
	tw *tabwriter.Writer
}

// NewTable returns a Table that writes to w.
func NewTable(w io.Writer) *Table {
	return &Table{w: w, tw: tabwriter.NewWriter(w, 0, 0, 2, ' ', tabwriter.AlignRight)}
}

// Line writes one row.
func (t *Table) Line(cells ...any) {
	parts := make([]string, len(cells))
	for i, c := range cells {
		parts[i] = fmt.Sprint(c)
	}
	fmt.Fprintln(t.tw, strings.Join(parts, "\t")+"\t")
}

// Title ends the rows so far and writes a title line.
func (t *Table) Title(s string) {
	t.Flush()
	fmt.Fprintf(t.w, "\n%s\n", s)
}

// Flush writes the rows so far; text written to the underlying writer
// after it follows them.
func (t *Table) Flush() { t.tw.Flush() }

// WriteErrors writes one line per error sample.
func WriteErrors(w io.Writer, samples []string) {
	for _, s := range samples {
		fmt.Fprintf(w, "  error sample: %s\n", s)
	}
}
