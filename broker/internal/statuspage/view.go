package statuspage

import (
	"fmt"
	"strings"
	"time"

	"github.com/flurrypt/flurry/broker/internal/stats"
	"github.com/flurrypt/flurry/messages"
)

// view is the template's data: everything already computed, so the
// template only lays it out.
type view struct {
	Version        string
	Uptime         string
	NowISO         string
	NowText        string
	RefreshSeconds int
	Rows           []availableRow // one per proxy type, unknown last
	Totals         availableRow
	Hour, Day      stats.Bucket
	HourChart      chart
	DayChart       chart
	Bridges        []Bridge
}

type availableRow struct {
	Type                                   string
	Restricted, Unrestricted, Unknown, All int
}

func newView(s Snapshot) view {
	if s.Refresh <= 0 {
		s.Refresh = DefaultRefresh
	}
	a := s.Stats.Available
	v := view{
		Version:        s.Version,
		Uptime:         formatUptime(s.Uptime),
		NowISO:         s.Stats.Now.UTC().Format(time.RFC3339),
		NowText:        s.Stats.Now.UTC().Format("2006-01-02 15:04:05 UTC"),
		RefreshSeconds: max(1, int(s.Refresh/time.Second)),
		Hour:           s.Stats.HourTotal,
		Day:            s.Stats.DayTotal,
		HourChart:      newChart("chart-hour", "Clients per minute, last hour", s.Stats.LastHour, "15:04", 15),
		DayChart:       newChart("chart-day", "Clients per hour, last 24 hours", s.Stats.LastDay, "15:04", 6),
		Bridges:        s.Bridges,
	}
	for _, t := range append(messages.KnownProxyTypes(), messages.ProxyTypeUnknown) {
		v.Rows = append(v.Rows, availableRow{
			Type:         t,
			Restricted:   a.Count(t, messages.NATRestricted),
			Unrestricted: a.Count(t, messages.NATUnrestricted),
			Unknown:      a.Count(t, messages.NATUnknown),
			All:          a.Type(t),
		})
	}
	v.Totals = availableRow{
		Type:         "all",
		Restricted:   a.NAT(messages.NATRestricted),
		Unrestricted: a.NAT(messages.NATUnrestricted),
		Unknown:      a.NAT(messages.NATUnknown),
		All:          a.Total(),
	}
	return v
}

// formatUptime writes d as "3d 4h 5m 6s", leaving out leading zero units.
func formatUptime(d time.Duration) string {
	d = d.Truncate(time.Second)
	days := d / (24 * time.Hour)
	d -= days * 24 * time.Hour
	h := d / time.Hour
	d -= h * time.Hour
	m := d / time.Minute
	d -= m * time.Minute
	sec := d / time.Second
	var b strings.Builder
	if days > 0 {
		fmt.Fprintf(&b, "%dd ", days)
	}
	if days > 0 || h > 0 {
		fmt.Fprintf(&b, "%dh ", h)
	}
	if days > 0 || h > 0 || m > 0 {
		fmt.Fprintf(&b, "%dm ", m)
	}
	fmt.Fprintf(&b, "%ds", sec)
	return b.String()
}

// Chart geometry, in SVG user units.
const (
	chartLeft   = 44  // room for the scale label
	chartPlotW  = 720 // divisible by 60 and 24
	chartRight  = 12
	chartTop    = 10
	chartPlotH  = 140
	chartBottom = 24 // room for the time labels
	chartWidth  = chartLeft + chartPlotW + chartRight
	chartHeight = chartTop + chartPlotH + chartBottom
	chartBase   = chartTop + chartPlotH // y of the time axis
)

// chart is a stacked bar chart of client outcomes, drawn as inline SVG.
type chart struct {
	ID, Caption          string
	Width, Height        int
	Left, Right, Base    int
	Top                  int
	MaxLabel             string
	MaxLabelX, MaxLabelY int
	Bars                 []bar
	Ticks                []tick
}

type bar struct {
	Title string // tooltip: time and counts
	Segs  []seg
}

type seg struct {
	Class      string // m (matched), t (timeout), d (denied)
	X, Y, W, H int
}

type tick struct {
	X, Y  int
	Label string
}

// newChart lays out one bar per bucket, matched at the bottom, then timed
// out, then denied, scaled so the tallest bar fills the plot; every
// labelEvery-th bucket gets a time label.
func newChart(id, caption string, buckets []stats.Bucket, layout string, labelEvery int) chart {
	c := chart{
		ID: id, Caption: caption,
		Width: chartWidth, Height: chartHeight,
		Left: chartLeft, Right: chartLeft + chartPlotW, Base: chartBase, Top: chartTop,
		MaxLabelX: chartLeft - 6, MaxLabelY: chartTop + 10,
	}
	peak := 0
	for _, b := range buckets {
		peak = max(peak, b.Matched+b.Timeout+b.Denied)
	}
	c.MaxLabel = fmt.Sprint(peak)
	if len(buckets) == 0 {
		return c
	}
	slot := chartPlotW / len(buckets)
	width := max(1, slot-max(1, slot/6))
	for i, b := range buckets {
		x := chartLeft + i*slot + (slot-width)/2
		br := bar{Title: fmt.Sprintf("%s UTC: %d matched, %d timed out, %d denied",
			b.Start.UTC().Format(layout), b.Matched, b.Timeout, b.Denied)}
		// Segment tops are rounded from cumulative counts, so the stack's
		// height is the bar's total, scaled; a non-empty segment is at
		// least one unit tall.
		cum, prevTop := 0, 0
		for _, part := range []struct {
			class string
			n     int
		}{{"m", b.Matched}, {"t", b.Timeout}, {"d", b.Denied}} {
			if part.n == 0 || peak == 0 {
				continue
			}
			cum += part.n
			top := min(chartPlotH, max(prevTop+1, (cum*chartPlotH+peak/2)/peak))
			if top == prevTop {
				continue // the stack already fills the plot
			}
			br.Segs = append(br.Segs, seg{Class: part.class, X: x, Y: chartBase - top, W: width, H: top - prevTop})
			prevTop = top
		}
		c.Bars = append(c.Bars, br)
		if i%labelEvery == 0 {
			c.Ticks = append(c.Ticks, tick{X: chartLeft + i*slot + slot/2, Y: chartBase + 16, Label: b.Start.UTC().Format(layout)})
		}
	}
	return c
}
