//go:build deps_pin

// This file pins the project's chosen dependencies in go.mod while the packages
// that use them are being written; it is never built. Remove it once every
// module here is imported by real code.

package flurry

import (
	_ "github.com/chromedp/chromedp"
	_ "github.com/gorilla/websocket"
	_ "github.com/pion/stun/v4"
	_ "github.com/pion/webrtc/v4"
	_ "github.com/prometheus/client_golang/prometheus"
	_ "github.com/prometheus/client_golang/prometheus/collectors"
	_ "github.com/prometheus/client_golang/prometheus/promhttp"
	_ "github.com/refraction-networking/utls"
	_ "github.com/xtaci/kcp-go/v5"
	_ "github.com/xtaci/smux"
	_ "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/goptlib"
	_ "go.uber.org/goleak"
	_ "golang.org/x/crypto/acme/autocert"
	_ "golang.org/x/time/rate"
)
