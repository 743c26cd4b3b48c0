// Package statuspage renders the broker's HTML status page for operators
// (GET / or /status): proxies available now by type and NAT type, client
// outcomes (matched, timed out, denied) over the last hour and the last
// day with a stacked bar chart of each, the bridge list, the build version
// and the uptime. The page reloads itself (meta refresh).
//
// The page is built for hostile input and a strict browser policy:
//
//   - It is rendered with html/template, so every value is escaped in its
//     context. Proxy types and NAT types can only be the fixed sets the
//     stats package maps everything into (a proxy calling itself
//     "<script>alert(1)</script>" is counted, and shown, as "unknown");
//     bridge fingerprints and URLs are escaped whatever they contain.
//   - The charts are inline SVG drawn on the server; the page has no
//     script, loads nothing from elsewhere, and is served with a
//     Content-Security-Policy that allows only its own stylesheet (by
//     hash) and a data: favicon (see ContentSecurityPolicy), plus nosniff,
//     no-referrer, no framing and no caching headers.
//   - Client counts are shown rounded up to multiples of 8, as in every
//     other export of the broker's statistics.
package statuspage
