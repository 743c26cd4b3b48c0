package main

import (
	"context"
	"io"
	"testing"
)

// TestMeasureInProcess runs the measurement at a small scale with the relay
// in this process, so that the tool keeps working (the real measurement
// runs the relay in a child process).
func TestMeasureInProcess(t *testing.T) {
	for _, useTLS := range []bool{false, true} {
		inR, inW := io.Pipe()
		outR, outW := io.Pipe()
		done := make(chan error, 1)
		go func() {
			err := serve(context.Background(), useTLS, inR, outW)
			outW.Close()
			done <- err
		}()
		srv, err := newServer(inW, outR, func() {})
		if err != nil {
			t.Fatal(err)
		}
		res, err := measure(srv, 20, useTLS, 4)
		if err != nil {
			t.Fatal(err)
		}
		if res.after.Conns != 20 {
			t.Errorf("relay saw %d connections, want 20", res.after.Conns)
		}
		t.Log(res.String())
		inW.Close()
		if err := <-done; err != nil {
			t.Fatal(err)
		}
	}
}
