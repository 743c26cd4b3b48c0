package wsconn

import (
	"bytes"
	"context"
	"errors"
	"io"
	"net"
	"net/http"
	"net/http/httptest"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/gorilla/websocket"
	"go.uber.org/goleak"
)

func TestMain(m *testing.M) {
	goleak.VerifyTestMain(m)
}

// wsPair returns the two ends of a real loopback WebSocket connection: the
// server end (upgraded by up) and the client end. Both are closed at cleanup.
func wsPair(tb testing.TB, up *websocket.Upgrader) (server, client *websocket.Conn) {
	tb.Helper()
	return wsPairDialer(tb, up, &websocket.Dialer{HandshakeTimeout: 10 * time.Second})
}

// wsPairDialer is wsPair with the client end dialled by d.
func wsPairDialer(tb testing.TB, up *websocket.Upgrader, d *websocket.Dialer) (server, client *websocket.Conn) {
	tb.Helper()
	if up == nil {
		up = &websocket.Upgrader{}
	}
	ch := make(chan *websocket.Conn, 1)
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		ws, err := up.Upgrade(w, r, nil)
		if err != nil {
			return
		}
		ch <- ws
	}))
	tb.Cleanup(srv.Close)
	url := "ws" + strings.TrimPrefix(srv.URL, "http")
	c, resp, err := d.DialContext(context.Background(), url, nil)
	if err != nil {
		tb.Fatalf("dial: %v", err)
	}
	resp.Body.Close()
	s := <-ch
	tb.Cleanup(func() {
		c.Close()
		s.Close()
	})
	return s, c
}

// connPair is wsPair with both ends wrapped by New.
func connPair(tb testing.TB) (server, client net.Conn) {
	tb.Helper()
	s, c := wsPair(tb, nil)
	server, client = New(s), New(c)
	tb.Cleanup(func() {
		server.Close()
		client.Close()
	})
	return server, client
}

func TestWriteChunksReadBackWhole(t *testing.T) {
	chunks := [][]byte{
		[]byte("hello"),
		{},
		[]byte(", "),
		bytes.Repeat([]byte{0xab}, 10000),
		{},
		[]byte("world"),
	}
	var want []byte
	for _, c := range chunks {
		want = append(want, c...)
	}
	for _, dir := range []string{"server-to-client", "client-to-server"} {
		t.Run(dir, func(t *testing.T) {
			s, c := connPair(t)
			w, r := s, c
			if dir == "client-to-server" {
				w, r = c, s
			}
			errc := make(chan error, 1)
			go func() {
				for _, chunk := range chunks {
					n, err := w.Write(chunk)
					if err != nil {
						errc <- err
						return
					}
					if n != len(chunk) {
						errc <- io.ErrShortWrite
						return
					}
				}
				errc <- w.Close()
			}()
			got, err := io.ReadAll(r)
			if err != nil {
				t.Fatalf("ReadAll: %v", err)
			}
			if err := <-errc; err != nil {
				t.Fatalf("writer: %v", err)
			}
			if !bytes.Equal(got, want) {
				t.Fatalf("read %d bytes, want %d (content differs)", len(got), len(want))
			}
		})
	}
}

func TestReadSmallBuffer(t *testing.T) {
	s, c := connPair(t)
	msg := []byte("0123456789abcdefghij")
	if _, err := s.Write(msg); err != nil {
		t.Fatal(err)
	}
	var got []byte
	buf := make([]byte, 3)
	for len(got) < len(msg) {
		n, err := c.Read(buf)
		if err != nil {
			t.Fatal(err)
		}
		got = append(got, buf[:n]...)
	}
	if !bytes.Equal(got, msg) {
		t.Fatalf("got %q, want %q", got, msg)
	}
	if n, err := c.Read(nil); n != 0 || err != nil {
		t.Fatalf("Read(nil) = %d, %v", n, err)
	}
}

func TestMessageTypes(t *testing.T) {
	s, c := wsPair(t, nil)
	conn := New(s)
	defer conn.Close()
	sends := []struct {
		typ  int
		data string
	}{
		{websocket.BinaryMessage, "bin,"},
		{websocket.TextMessage, "text,"},
		{websocket.BinaryMessage, ""},
		{websocket.PingMessage, "ping"},
		{websocket.TextMessage, "end"},
	}
	for _, m := range sends {
		var err error
		if m.typ == websocket.PingMessage {
			err = c.WriteControl(m.typ, []byte(m.data), time.Now().Add(time.Second))
		} else {
			err = c.WriteMessage(m.typ, []byte(m.data))
		}
		if err != nil {
			t.Fatal(err)
		}
	}
	want := "bin,text,end"
	got := make([]byte, len(want))
	if _, err := io.ReadFull(conn, got); err != nil {
		t.Fatal(err)
	}
	if string(got) != want {
		t.Fatalf("got %q, want %q", got, want)
	}
}

func TestCloseCodes(t *testing.T) {
	tests := []struct {
		name    string
		payload []byte
		wantEOF bool
	}{
		{"normal 1000", websocket.FormatCloseMessage(websocket.CloseNormalClosure, "bye"), true},
		{"no status 1005", []byte{}, true},
		{"going away 1001", websocket.FormatCloseMessage(websocket.CloseGoingAway, ""), false},
		{"internal error 1011", websocket.FormatCloseMessage(websocket.CloseInternalServerErr, ""), false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, c := wsPair(t, nil)
			conn := New(s)
			defer conn.Close()
			if err := c.WriteMessage(websocket.BinaryMessage, []byte("data")); err != nil {
				t.Fatal(err)
			}
			if err := c.WriteControl(websocket.CloseMessage, tt.payload, time.Now().Add(time.Second)); err != nil {
				t.Fatal(err)
			}
			got, err := io.ReadAll(conn)
			if string(got) != "data" {
				t.Errorf("read %q before close, want %q", got, "data")
			}
			if tt.wantEOF {
				if err != nil {
					t.Fatalf("ReadAll error %v, want clean EOF", err)
				}
				return
			}
			var ce *websocket.CloseError
			if !errors.As(err, &ce) {
				t.Fatalf("error %v, want *websocket.CloseError", err)
			}
			// The error is sticky.
			if _, err2 := conn.Read(make([]byte, 1)); !errors.Is(err2, err) {
				t.Fatalf("second Read error %v, want %v", err2, err)
			}
		})
	}
}

func TestConcurrentReadWrite(t *testing.T) {
	s, c := connPair(t)
	const total = 1 << 20
	payload := make([]byte, total)
	for i := range payload {
		payload[i] = byte(i * 7)
	}
	var wg sync.WaitGroup
	results := make(chan error, 4)
	// Each end writes the payload in varying chunks while reading the other's.
	for _, ends := range [][2]net.Conn{{s, c}, {c, s}} {
		w, r := ends[0], ends[1]
		wg.Add(2)
		go func() {
			defer wg.Done()
			for off, step := 0, 1; off < total; step = step*3%4093 + 1 {
				end := min(off+step, total)
				if _, err := w.Write(payload[off:end]); err != nil {
					results <- err
					return
				}
				off = end
			}
			results <- nil
		}()
		go func() {
			defer wg.Done()
			got := make([]byte, total)
			if _, err := io.ReadFull(r, got); err != nil {
				results <- err
				return
			}
			if !bytes.Equal(got, payload) {
				results <- errors.New("payload corrupted")
				return
			}
			results <- nil
		}()
	}
	wg.Wait()
	close(results)
	for err := range results {
		if err != nil {
			t.Fatal(err)
		}
	}
}

func TestClose(t *testing.T) {
	s, c := connPair(t)

	// A Read blocked in another goroutine is woken by Close.
	readErr := make(chan error, 1)
	go func() {
		_, err := s.Read(make([]byte, 10))
		readErr <- err
	}()
	// Whether or not the goroutine has reached Read yet, it must end with
	// net.ErrClosed and never hang.
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-readErr; !errors.Is(err, net.ErrClosed) {
		t.Fatalf("blocked Read returned %v, want net.ErrClosed", err)
	}
	if err := s.Close(); err != nil {
		t.Fatalf("second Close: %v", err)
	}
	if _, err := s.Write([]byte("x")); !errors.Is(err, io.ErrClosedPipe) || !errors.Is(err, net.ErrClosed) {
		t.Fatalf("Write after Close = %v, want io.ErrClosedPipe and net.ErrClosed", err)
	}
	if _, err := s.Read(make([]byte, 1)); err == nil {
		t.Fatal("Read after Close succeeded")
	}
	// The peer sees a clean close (code 1000) as EOF.
	if _, err := c.Read(make([]byte, 1)); err != io.EOF {
		t.Fatalf("peer Read = %v, want io.EOF", err)
	}
}

func TestCloseWhileWriteBlocked(t *testing.T) {
	s, _ := connPair(t) // the client never reads
	writeErr := make(chan error, 1)
	go func() {
		buf := make([]byte, 64<<10)
		for {
			if _, err := s.Write(buf); err != nil {
				writeErr <- err
				return
			}
		}
	}()
	// The writer fills the socket buffers and blocks; Close must still
	// return and wake it.
	if err := s.Close(); err != nil {
		t.Fatalf("Close: %v", err)
	}
	if err := <-writeErr; err == nil {
		t.Fatal("Write succeeded after Close")
	}
}

func TestDeadlines(t *testing.T) {
	t.Run("read", func(t *testing.T) {
		s, _ := connPair(t)
		if err := s.SetReadDeadline(time.Now().Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		_, err := s.Read(make([]byte, 1))
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("Read = %v, want a timeout", err)
		}
	})
	t.Run("write", func(t *testing.T) {
		s, _ := connPair(t)
		if err := s.SetWriteDeadline(time.Now().Add(-time.Second)); err != nil {
			t.Fatal(err)
		}
		_, err := s.Write([]byte("x"))
		var ne net.Error
		if !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("Write = %v, want a timeout", err)
		}
	})
	t.Run("blocked write woken", func(t *testing.T) {
		s, _ := connPair(t) // the client never reads
		writeErr := make(chan error, 1)
		go func() {
			buf := make([]byte, 64<<10)
			for {
				if _, err := s.Write(buf); err != nil {
					writeErr <- err
					return
				}
			}
		}()
		if err := s.SetDeadline(time.Now().Add(50 * time.Millisecond)); err != nil {
			t.Fatal(err)
		}
		var ne net.Error
		if err := <-writeErr; !errors.As(err, &ne) || !ne.Timeout() {
			t.Fatalf("Write = %v, want a timeout", err)
		}
	})
}

func TestAddrs(t *testing.T) {
	s, c := connPair(t)
	if s.LocalAddr().String() != c.RemoteAddr().String() || s.RemoteAddr().String() != c.LocalAddr().String() {
		t.Fatalf("addresses do not match: %v %v / %v %v", s.LocalAddr(), s.RemoteAddr(), c.LocalAddr(), c.RemoteAddr())
	}
}
