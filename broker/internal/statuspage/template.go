package statuspage

import (
	"fmt"
	"html/template"
)

// styleSheet is the page's only style, allowed by its SHA-256 hash in the
// Content-Security-Policy; the template must reproduce it byte for byte
// (so: no HTML or CSS comments, no template actions inside).
const styleSheet = `
:root{color-scheme:light dark;--fg:#1b1f24;--bg:#fbfbfc;--muted:#5f6b7a;--line:#d5d9df;--card:#fff;
--m:#2e7d32;--t:#f0a30a;--d:#c62828}
@media (prefers-color-scheme:dark){:root{--fg:#e6e8eb;--bg:#15181c;--muted:#9aa5b1;--line:#333a42;--card:#1d2127}}
*{box-sizing:border-box}
body{margin:0;font:15px/1.45 system-ui,-apple-system,"Segoe UI",Roboto,sans-serif;color:var(--fg);background:var(--bg)}
header{padding:1rem 1.5rem;border-bottom:1px solid var(--line)}
h1{margin:0;font-size:1.4rem}
h2{font-size:1.1rem;margin:0 0 .6rem}
.meta,.note,figcaption{color:var(--muted);font-size:.9rem}
.meta{margin:.2rem 0 0}
main{padding:1rem 1.5rem;display:grid;gap:1rem;max-width:1100px}
section{background:var(--card);border:1px solid var(--line);border-radius:8px;padding:1rem}
table{border-collapse:collapse}
th,td{padding:.25rem .8rem;text-align:right;border-bottom:1px solid var(--line)}
th:first-child{text-align:left}
tfoot th,tfoot td{font-weight:600;border-bottom:0}
td.n{font-variant-numeric:tabular-nums}
#bridges td,#bridges th{text-align:left}
code{font-size:.85rem;word-break:break-all}
figure{margin:1rem 0 0}
svg{max-width:100%;height:auto;display:block}
rect.m{fill:var(--m)}rect.t{fill:var(--t)}rect.d{fill:var(--d)}
line.axis{stroke:var(--muted);stroke-width:1}
text.lbl{fill:var(--muted);font-size:11px}
.legend{margin:.3rem 0 0;color:var(--muted);font-size:.85rem}
.key{display:inline-block;width:.8rem;height:.8rem;margin:0 .3rem 0 .8rem;vertical-align:-1px;border-radius:2px}
.key.m{background:var(--m)}.key.t{background:var(--t)}.key.d{background:var(--d)}
`

const pageTemplate = `<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<meta http-equiv="refresh" content="{{.RefreshSeconds}}">
<title>Flurry broker status</title>
<link rel="icon" href="data:,">
<style>` + styleSheet + `</style>
</head>
<body>
<header>
<h1>Flurry broker</h1>
<p class="meta">Version <span id="version">{{.Version}}</span> · up <span id="uptime">{{.Uptime}}</span> · <time id="now" datetime="{{.NowISO}}">{{.NowText}}</time> · reloads every {{.RefreshSeconds}} s</p>
</header>
<main>
<section>
<h2>Proxies available now: <span id="available-total">{{.Totals.All}}</span></h2>
<table id="available">
<thead><tr><th scope="col">Type</th><th scope="col">restricted</th><th scope="col">unrestricted</th><th scope="col">unknown NAT</th><th scope="col">all</th></tr></thead>
<tbody>
{{- range .Rows}}
<tr id="available-{{.Type}}"><th scope="row">{{.Type}}</th><td class="n">{{.Restricted}}</td><td class="n">{{.Unrestricted}}</td><td class="n">{{.Unknown}}</td><td class="n">{{.All}}</td></tr>
{{- end}}
</tbody>
<tfoot><tr><th scope="row">all</th><td class="n">{{.Totals.Restricted}}</td><td class="n">{{.Totals.Unrestricted}}</td><td class="n">{{.Totals.Unknown}}</td><td class="n">{{.Totals.All}}</td></tr></tfoot>
</table>
</section>
<section>
<h2>Clients</h2>
<table id="clients">
<thead><tr><th scope="col">Period</th><th scope="col">matched</th><th scope="col">timed out</th><th scope="col">denied</th></tr></thead>
<tbody>
<tr><th scope="row">last hour</th><td class="n" id="hour-matched">{{.Hour.Matched}}</td><td class="n" id="hour-timeout">{{.Hour.Timeout}}</td><td class="n" id="hour-denied">{{.Hour.Denied}}</td></tr>
<tr><th scope="row">last 24 hours</th><td class="n" id="day-matched">{{.Day.Matched}}</td><td class="n" id="day-timeout">{{.Day.Timeout}}</td><td class="n" id="day-denied">{{.Day.Denied}}</td></tr>
</tbody>
</table>
<p class="note">Matched: the client got a proxy's answer. Timed out: the proxy did not answer in time. Denied: no proxy was available. Counts are rounded up to multiples of 8.</p>
{{template "chart" .HourChart}}
{{template "chart" .DayChart}}
</section>
<section>
<h2>Bridges</h2>
{{- if .Bridges}}
<table id="bridges">
<thead><tr><th scope="col">Fingerprint</th><th scope="col">WebSocket URL</th></tr></thead>
<tbody>
{{- range .Bridges}}
<tr><td><code>{{.Fingerprint}}</code></td><td><code>{{.URL}}</code></td></tr>
{{- end}}
</tbody>
</table>
{{- else}}
<p id="bridges">No bridges configured.</p>
{{- end}}
</section>
</main>
</body>
</html>
`

const chartTemplate = `{{define "chart"}}<figure id="{{.ID}}">
<figcaption>{{.Caption}} (UTC)</figcaption>
<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 {{.Width}} {{.Height}}" width="{{.Width}}" height="{{.Height}}" role="img" aria-label="{{.Caption}}">
<line class="axis" x1="{{.Left}}" y1="{{.Base}}" x2="{{.Right}}" y2="{{.Base}}"/>
<line class="axis" x1="{{.Left}}" y1="{{.Top}}" x2="{{.Left}}" y2="{{.Base}}"/>
<text class="lbl" x="{{.MaxLabelX}}" y="{{.MaxLabelY}}" text-anchor="end">{{.MaxLabel}}</text>
<text class="lbl" x="{{.MaxLabelX}}" y="{{.Base}}" text-anchor="end">0</text>
{{- range .Bars}}
<g><title>{{.Title}}</title>{{range .Segs}}<rect class="{{.Class}}" x="{{.X}}" y="{{.Y}}" width="{{.W}}" height="{{.H}}"/>{{end}}</g>
{{- end}}
{{- range .Ticks}}
<text class="lbl" x="{{.X}}" y="{{.Y}}" text-anchor="middle">{{.Label}}</text>
{{- end}}
</svg>
<p class="legend"><span class="key m"></span>matched<span class="key t"></span>timed out<span class="key d"></span>denied</p>
</figure>{{end}}`

// parseTemplate parses the page.
func parseTemplate() (*template.Template, error) {
	t, err := template.New("page").Parse(pageTemplate)
	if err == nil {
		_, err = t.Parse(chartTemplate)
	}
	if err != nil {
		return nil, fmt.Errorf("parse status page template: %w", err)
	}
	return t, nil
}
