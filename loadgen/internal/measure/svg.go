package measure

import (
	"bufio"
	"encoding/xml"
	"fmt"
	"io"
	"math"
	"strconv"
	"strings"
)

// Plot is one chart: lines through points, both axes starting at zero.
type Plot struct {
	Title, XLabel, YLabel string
	Series                []Series
}

// Series is one line of a plot.
type Series struct {
	Name   string
	Points [][2]float64
}

var seriesColors = [...]string{"#1f77b4", "#d62728", "#2ca02c", "#9467bd", "#ff7f0e"}

// Plot geometry, in SVG user units.
const (
	plotW, plotH                       = 720, 380
	marginL, marginR, marginT, marginB = 80, 150, 40, 50
	innerW, innerH                     = plotW - marginL - marginR, plotH - marginT - marginB
	svgFont                            = "font-family=\"sans-serif\" font-size=\"12\""
)

// WriteSVG draws plots stacked in one standalone SVG document.
func WriteSVG(w io.Writer, plots []Plot) error {
	bw := bufio.NewWriter(w)
	height := max(len(plots), 1) * plotH
	fmt.Fprintf(bw, `<?xml version="1.0" encoding="UTF-8"?>`+"\n")
	fmt.Fprintf(bw, `<svg xmlns="http://www.w3.org/2000/svg" width="%d" height="%d" viewBox="0 0 %d %d">`+"\n", plotW, height, plotW, height)
	fmt.Fprintf(bw, `<rect width="100%%" height="100%%" fill="white"/>`+"\n")
	if len(plots) == 0 {
		fmt.Fprintf(bw, `<text x="20" y="40" %s>no data to plot (memory plots need a PID)</text>`+"\n", svgFont)
	}
	for i, p := range plots {
		fmt.Fprintf(bw, `<g transform="translate(0,%d)">`+"\n", i*plotH)
		p.write(bw)
		fmt.Fprintf(bw, "</g>\n")
	}
	fmt.Fprintf(bw, "</svg>\n")
	return bw.Flush()
}

func escapeXML(s string) string {
	var b strings.Builder
	_ = xml.EscapeText(&b, []byte(s))
	return b.String()
}

// niceCeil returns a round number (1, 2 or 5 times a power of ten) at least v.
func niceCeil(v float64) float64 {
	if v <= 0 || math.IsNaN(v) || math.IsInf(v, 0) {
		return 1
	}
	p := math.Pow(10, math.Floor(math.Log10(v)))
	for _, m := range []float64{1, 2, 5, 10} {
		if m*p >= v {
			return m * p
		}
	}
	return 10 * p
}

func fmtTick(v float64) string {
	if v == math.Trunc(v) && math.Abs(v) < 1e15 {
		return strconv.FormatInt(int64(v), 10)
	}
	return strconv.FormatFloat(v, 'g', 3, 64)
}

func (p Plot) write(w *bufio.Writer) {
	var xMax, yMax float64
	for _, s := range p.Series {
		for _, pt := range s.Points {
			xMax, yMax = max(xMax, pt[0]), max(yMax, pt[1])
		}
	}
	xMax, yMax = niceCeil(xMax), niceCeil(yMax*1.05)
	px := func(x float64) float64 { return marginL + x/xMax*innerW }
	py := func(y float64) float64 { return marginT + innerH - y/yMax*innerH }

	fmt.Fprintf(w, `<text x="%d" y="24" %s font-weight="bold">%s</text>`+"\n", marginL, svgFont, escapeXML(p.Title))
	// Grid and ticks.
	const ticks = 5
	for i := 0; i <= ticks; i++ {
		yv := yMax * float64(i) / ticks
		y := py(yv)
		fmt.Fprintf(w, `<line x1="%d" y1="%.1f" x2="%d" y2="%.1f" stroke="#ddd"/>`+"\n", marginL, y, marginL+innerW, y)
		fmt.Fprintf(w, `<text x="%d" y="%.1f" %s text-anchor="end">%s</text>`+"\n", marginL-6, y+4, svgFont, fmtTick(yv))
		xv := xMax * float64(i) / ticks
		x := px(xv)
		fmt.Fprintf(w, `<line x1="%.1f" y1="%d" x2="%.1f" y2="%d" stroke="#ddd"/>`+"\n", x, marginT, x, marginT+innerH)
		fmt.Fprintf(w, `<text x="%.1f" y="%d" %s text-anchor="middle">%s</text>`+"\n", x, marginT+innerH+16, svgFont, fmtTick(xv))
	}
	// Axes and labels.
	fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", marginL, marginT+innerH, marginL+innerW, marginT+innerH)
	fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="black"/>`+"\n", marginL, marginT, marginL, marginT+innerH)
	fmt.Fprintf(w, `<text x="%d" y="%d" %s text-anchor="middle">%s</text>`+"\n", marginL+innerW/2, plotH-10, svgFont, escapeXML(p.XLabel))
	fmt.Fprintf(w, `<text x="18" y="%d" %s text-anchor="middle" transform="rotate(-90 18 %d)">%s</text>`+"\n",
		marginT+innerH/2, svgFont, marginT+innerH/2, escapeXML(p.YLabel))
	// Series and legend.
	for i, s := range p.Series {
		color := seriesColors[i%len(seriesColors)]
		pts := make([]string, len(s.Points))
		for j, pt := range s.Points {
			pts[j] = fmt.Sprintf("%.1f,%.1f", px(pt[0]), py(pt[1]))
		}
		fmt.Fprintf(w, `<polyline fill="none" stroke="%s" stroke-width="2" points="%s"/>`+"\n", color, strings.Join(pts, " "))
		for _, pt := range s.Points {
			fmt.Fprintf(w, `<circle cx="%.1f" cy="%.1f" r="3" fill="%s"><title>%s: %s, %s</title></circle>`+"\n",
				px(pt[0]), py(pt[1]), color, escapeXML(s.Name), fmtTick(pt[0]), strconv.FormatFloat(pt[1], 'f', 2, 64))
		}
		ly := marginT + 10 + i*18
		fmt.Fprintf(w, `<line x1="%d" y1="%d" x2="%d" y2="%d" stroke="%s" stroke-width="2"/>`+"\n", marginL+innerW+16, ly, marginL+innerW+36, ly, color)
		fmt.Fprintf(w, `<text x="%d" y="%d" %s>%s</text>`+"\n", marginL+innerW+42, ly+4, svgFont, escapeXML(s.Name))
	}
}
