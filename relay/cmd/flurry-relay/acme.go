package main

import (
	"net"
	"net/http"
	"time"
)

// httpChallengeServer answers ACME HTTP-01 challenges (and redirects
// everything else to https) on port 80.
type httpChallengeServer struct {
	handler http.Handler
}

// start serves on ln until the returned function is called.
func (s *httpChallengeServer) start(ln net.Listener) (stop func()) {
	srv := &http.Server{
		Handler:           s.handler,
		ReadHeaderTimeout: 5 * time.Second,
		ReadTimeout:       10 * time.Second,
		WriteTimeout:      10 * time.Second,
		IdleTimeout:       30 * time.Second,
		MaxHeaderBytes:    8 << 10,
	}
	done := make(chan struct{})
	go func() {
		defer close(done)
		srv.Serve(ln)
	}()
	return func() {
		srv.Close()
		<-done
	}
}
