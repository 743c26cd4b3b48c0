package broker

import (
	"context"
	"net/http"
	"strings"
	"time"

	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/common/amp"
	"github.com/flurrypt/flurry/messages"
)

// AMPPathPrefix is the path under which AMPHandler must be mounted: the
// encoded poll request follows it.
const AMPPathPrefix = "/amp/client/"

// maxAMPPath bounds the path after AMPPathPrefix: the encoding of the
// largest poll request a decoder accepts (base64url of MaxBodySize bytes,
// plus the format indicator, cache-buster and '/'), with some room for
// whatever a client puts before the last '/'. Longer paths are refused
// before anything is decoded.
const maxAMPPath = 2 + 12 + (messages.MaxBodySize*4+2)/3 + 256

// StrCannotDecodeURLPath is the error an AMP client gets for a path that is
// not an encoded poll request (Snowflake's text).
const StrCannotDecodeURLPath = "cannot decode URL path"

// AMP response headers: what Snowflake sends. Caches consider a page fresh
// for at least 15 s anyway; max-age asks them not to keep it longer.
const (
	ampContentType  = "text/html"
	ampCacheControl = "max-age=15"
	ampAllow        = "GET, OPTIONS"
)

// AMPHandler returns the AMP cache rendezvous endpoint, to be mounted at
// AMPPathPrefix ("/amp/client/", a subtree):
//
//	GET /amp/client/<amp.EncodePath(encoded poll request)>
//
// An AMP cache can only GET pages, so the client's poll request comes in
// the URL path and the reply goes back as an AMP page (package amp): always
// status 200, Content-Type text/html, Cache-Control max-age=15, the
// ClientPollResponse armored. A path that does not decode (or is longer
// than any poll request could make it) gets the armored error
// {"error":"cannot decode URL path"}; a poll request that does not decode
// gets the decoder's error text, as on /client.
//
// The request comes from the cache, so its address says nothing of the
// client: the statistics use the first public address among the offer's
// ICE candidates (or its c= line) instead, as Snowflake does, and no
// address at all when there is none. The rate limits (AMPRate per address,
// which is the cache's or that of whoever skips the cache, and
// AMPGlobalRate) answer 429 without a page: a cache passes that on as an
// error. OPTIONS gets the CORS preflight answer; other methods than GET (even
// HEAD, which would use up a proxy for nothing) get 405.
func (b *Broker) AMPHandler() http.Handler {
	return http.HandlerFunc(b.serveAMP)
}

func (b *Broker) serveAMP(w http.ResponseWriter, r *http.Request) {
	start := time.Now()
	h := w.Header()
	h["Access-Control-Allow-Origin"] = b.cors[0]
	h["Access-Control-Allow-Headers"] = b.cors[1]
	switch r.Method {
	case http.MethodGet:
	case http.MethodOptions:
		return // preflight: 200, empty body
	default:
		h.Set("Allow", ampAllow)
		refuse(w, r, "method not allowed", http.StatusMethodNotAllowed)
		return
	}
	if addr := b.addrs.Addr(r); !b.limits.allow(&b.limits.amp, addr) {
		b.rateLimited(w, r, event.EndpointAMP, addr)
		return
	}
	resp, err := b.ampClientPoll(r.Context(), r.URL.Path, start)
	if err != nil {
		// Not even an error message could be encoded (cannot happen). An
		// AMP cache turns this 500 into a 404.
		b.cfg.Logger.Error("encode AMP client response", "err", err)
		http.Error(w, "internal error", http.StatusInternalServerError)
		return
	}
	page := amp.Armor(resp)
	h.Set("Content-Type", ampContentType)
	h.Set("Cache-Control", ampCacheControl)
	_, _ = w.Write(page) // a failed write means the cache went away
}

// ampClientPoll decodes the poll request in an AMP request path, runs the
// rendezvous and returns the encoded ClientPollResponse.
func (b *Broker) ampClientPoll(ctx context.Context, urlPath string, start time.Time) ([]byte, error) {
	encoded, ok := strings.CutPrefix(urlPath, AMPPathPrefix)
	var body []byte
	if ok = ok && len(encoded) <= maxAMPPath; ok {
		var err error
		body, err = amp.DecodePath(encoded)
		ok = err == nil
	}
	if !ok {
		b.sink.ClientPollEnded(event.Client{NAT: messages.NATUnknown, Method: event.MethodAMPCache}, event.ClientBadRequest)
		b.cfg.Logger.Debug("client request rejected", "method", event.MethodAMPCache.String(), "reason", StrCannotDecodeURLPath)
		return messages.ClientPollResponse{Error: StrCannotDecodeURLPath}.Encode()
	}
	ctx, cancel := context.WithDeadline(ctx, start.Add(b.cfg.ClientTimeout))
	defer cancel()
	return b.relayedClientPoll(ctx, body, event.MethodAMPCache)
}
