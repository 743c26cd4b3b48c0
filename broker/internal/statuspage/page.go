package statuspage

import (
	"bytes"
	"crypto/sha256"
	"encoding/base64"
	"fmt"
	"html/template"
	"net/http"
	"runtime/debug"
	"time"

	"github.com/flurrypt/flurry/broker/internal/stats"
)

// DefaultRefresh is how often the page reloads itself when Config.Refresh
// is zero.
const DefaultRefresh = time.Minute

// MinRefresh is the shortest reload interval New accepts.
const MinRefresh = 5 * time.Second

// Bridge is one entry of the broker's bridge list as the page shows it.
// Both fields are escaped whatever they contain.
type Bridge struct {
	Fingerprint string // hex fingerprint
	URL         string // the relay's WebSocket URL
}

// Snapshot is everything the page shows.
type Snapshot struct {
	Stats   stats.Snapshot // proxies available now and client history
	Version string         // build version
	Uptime  time.Duration  // time since the broker started
	Bridges []Bridge
	Refresh time.Duration // reload interval of the page (zero: DefaultRefresh)
}

// Config configures a Page.
type Config struct {
	// Stats is the broker's Recorder. Required.
	Stats *stats.Recorder
	// Bridges is the bridge list to show (copied).
	Bridges []Bridge
	// Version is the build version shown. Empty means the one in the
	// binary's build information.
	Version string
	// Start is when the broker started, for the uptime. Zero means when
	// New is called.
	Start time.Time
	// Refresh is how often the page reloads itself. Zero means
	// DefaultRefresh; otherwise at least MinRefresh.
	Refresh time.Duration
}

// Page serves the status page. It is safe for concurrent use.
type Page struct {
	stats   *stats.Recorder
	bridges []Bridge
	version string
	start   time.Time
	refresh time.Duration
	tmpl    *template.Template
	csp     string
}

// New returns a Page for cfg.
func New(cfg Config) (*Page, error) {
	if cfg.Stats == nil {
		return nil, fmt.Errorf("%w: no stats recorder", ErrInvalidConfig)
	}
	if cfg.Refresh == 0 {
		cfg.Refresh = DefaultRefresh
	}
	if cfg.Refresh < MinRefresh {
		return nil, fmt.Errorf("%w: refresh interval %v", ErrInvalidConfig, cfg.Refresh)
	}
	if cfg.Version == "" {
		cfg.Version = buildVersion()
	}
	if cfg.Start.IsZero() {
		cfg.Start = time.Now()
	}
	tmpl, err := parseTemplate()
	if err != nil {
		return nil, err
	}
	return &Page{
		stats:   cfg.Stats,
		bridges: append([]Bridge(nil), cfg.Bridges...),
		version: cfg.Version,
		start:   cfg.Start,
		refresh: cfg.Refresh,
		tmpl:    tmpl,
		csp:     ContentSecurityPolicy(),
	}, nil
}

// Snapshot returns what the page shows now.
func (p *Page) Snapshot() Snapshot {
	st := p.stats.Snapshot()
	return Snapshot{
		Stats:   st,
		Version: p.version,
		Uptime:  max(0, st.Now.Sub(p.start)),
		Bridges: p.bridges,
		Refresh: p.refresh,
	}
}

// ServeHTTP answers GET and HEAD with the page, anything else with 405.
func (p *Page) ServeHTTP(w http.ResponseWriter, r *http.Request) {
	if r.Method != http.MethodGet && r.Method != http.MethodHead {
		w.Header().Set("Allow", "GET, HEAD")
		http.Error(w, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	var buf bytes.Buffer
	if err := p.tmpl.Execute(&buf, newView(p.Snapshot())); err != nil {
		http.Error(w, "cannot render the status page", http.StatusInternalServerError)
		return
	}
	h := w.Header()
	h.Set("Content-Type", "text/html; charset=utf-8")
	h.Set("Content-Security-Policy", p.csp)
	h.Set("X-Content-Type-Options", "nosniff")
	h.Set("X-Frame-Options", "DENY")
	h.Set("Referrer-Policy", "no-referrer")
	h.Set("Cache-Control", "no-store")
	_, _ = w.Write(buf.Bytes()) // a failed write means the client went away
}

// ContentSecurityPolicy returns the policy the page is served with: nothing
// may load or run except the page's own stylesheet (allowed by its hash)
// and data: images (the empty favicon). The page has no script at all.
func ContentSecurityPolicy() string {
	sum := sha256.Sum256([]byte(styleSheet))
	return "default-src 'none'; style-src 'sha256-" + base64.StdEncoding.EncodeToString(sum[:]) +
		"'; img-src data:; base-uri 'none'; form-action 'none'; frame-ancestors 'none'"
}

// buildVersion returns the main module's version from the build
// information, with the first 8 hex digits of the VCS revision (and "*" if
// the tree was modified), like Snowflake's version string.
func buildVersion() string {
	info, ok := debug.ReadBuildInfo()
	if !ok {
		return "unknown"
	}
	v := info.Main.Version
	var rev, modified string
	for _, s := range info.Settings {
		switch s.Key {
		case "vcs.revision":
			rev = s.Value
		case "vcs.modified":
			if s.Value == "true" {
				modified = "*"
			}
		}
	}
	if len(rev) >= 8 {
		v += " (" + rev[:8] + modified + ")"
	}
	return v
}
