package httpcmp

import (
	"bytes"
	"io"
	"net/http"
	"net/url"
	"strings"

	"github.com/valyala/fasthttp"
)

// fastHTTPHandler calls h for each fasthttp request, in fasthttp's worker
// goroutine (fasthttpadaptor starts a goroutine per request, which would
// measure the adapter rather than the server): the request as net/http
// would give it (method, target, protocol, every header field, the body
// read in full), and a ResponseWriter that fills fasthttp's response.
func fastHTTPHandler(h http.Handler) fasthttp.RequestHandler {
	return func(ctx *fasthttp.RequestCtx) {
		uri := string(ctx.RequestURI())
		u, err := url.ParseRequestURI(uri)
		if err != nil {
			ctx.Error("Bad Request", fasthttp.StatusBadRequest)
			return
		}
		header := make(http.Header, 8)
		for k, v := range ctx.Request.Header.All() {
			header.Add(string(k), string(v))
		}
		body := ctx.PostBody()
		r := &http.Request{
			Method: string(ctx.Method()), URL: u, RequestURI: uri,
			Proto: "HTTP/1.1", ProtoMajor: 1, ProtoMinor: 1,
			Header: header, Host: string(ctx.Host()),
			Body: io.NopCloser(bytes.NewReader(body)), ContentLength: int64(len(body)),
			RemoteAddr: ctx.RemoteAddr().String(),
		}
		if !ctx.Request.Header.IsHTTP11() {
			r.Proto, r.ProtoMinor = "HTTP/1.0", 0
		}
		w := &fastResponse{ctx: ctx, header: make(http.Header, 4)}
		h.ServeHTTP(w, r.WithContext(ctx))
		w.finish()
	}
}

// fastResponse is the http.ResponseWriter of fastHTTPHandler. fasthttp
// sends the response once the handler returns: a Flush sends nothing.
type fastResponse struct {
	ctx       *fasthttp.RequestCtx
	header    http.Header
	status    int
	committed bool
}

func (w *fastResponse) Header() http.Header { return w.header }

func (w *fastResponse) WriteHeader(code int) {
	if w.committed {
		return
	}
	w.committed, w.status = true, code
	w.ctx.SetStatusCode(code)
	for k, vs := range w.header {
		if k == "Connection" && len(vs) == 1 && strings.EqualFold(vs[0], "close") {
			w.ctx.SetConnectionClose()
			continue
		}
		for _, v := range vs {
			w.ctx.Response.Header.Add(k, v)
		}
	}
	if _, ok := w.header["Content-Type"]; !ok {
		// As net/http, which sniffs the body: the broker's bodies are
		// text or JSON, both sniffed as text/plain.
		w.ctx.Response.Header.SetContentType("text/plain; charset=utf-8")
	}
}

func (w *fastResponse) Write(p []byte) (int, error) {
	w.WriteHeader(http.StatusOK)
	return w.ctx.Write(p)
}

// FlushError is a no-op: the whole response goes out at the end.
func (w *fastResponse) FlushError() error { return nil }

func (w *fastResponse) finish() { w.WriteHeader(http.StatusOK) }
