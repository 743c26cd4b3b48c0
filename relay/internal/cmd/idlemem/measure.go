package main

import (
	"bufio"
	"context"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/tls"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/json"
	"fmt"
	"io"
	"math/big"
	"net"
	"os"
	"os/exec"
	"runtime"
	"runtime/debug"
	"runtime/metrics"
	"strconv"
	"strings"
	"sync"
	"syscall"
	"time"

	"github.com/gorilla/websocket"

	"github.com/flurrypt/flurry/common/turbotunnel"
	"github.com/flurrypt/flurry/relay"
)

// raiseFileLimit raises the soft open-file limit to the hard limit.
func raiseFileLimit() {
	var lim syscall.Rlimit
	if err := syscall.Getrlimit(syscall.RLIMIT_NOFILE, &lim); err != nil {
		return
	}
	lim.Cur = lim.Max
	_ = syscall.Setrlimit(syscall.RLIMIT_NOFILE, &lim)
}

// snapshot is the relay side's memory and connection count.
type snapshot struct {
	HeapObjects uint64 // bytes in live heap objects
	Stacks      uint64 // bytes of goroutine stacks
	RSS         uint64 // process resident set size, bytes
	Goroutines  int
	Conns       int64 // carriers past the handshake
	Parked      int64 // of which idle in the relay's poller
}

func takeSnapshot(r *relay.Relay) snapshot {
	runtime.GC()
	runtime.GC()
	debug.FreeOSMemory()
	samples := []metrics.Sample{
		{Name: "/memory/classes/heap/objects:bytes"},
		{Name: "/memory/classes/heap/stacks:bytes"},
	}
	metrics.Read(samples)
	st := r.Stats()
	return snapshot{
		HeapObjects: samples[0].Value.Uint64(),
		Stacks:      samples[1].Value.Uint64(),
		RSS:         readRSS(),
		Goroutines:  runtime.NumGoroutine(),
		Conns:       st.ActiveConnections,
		Parked:      st.ParkedConnections,
	}
}

// readRSS returns VmRSS from /proc/self/status, or 0.
func readRSS() uint64 {
	b, err := os.ReadFile("/proc/self/status")
	if err != nil {
		return 0
	}
	for _, line := range strings.Split(string(b), "\n") {
		if rest, ok := strings.CutPrefix(line, "VmRSS:"); ok {
			kb, _ := strconv.ParseUint(strings.TrimSuffix(strings.TrimSpace(rest), " kB"), 10, 64)
			return kb << 10
		}
	}
	return 0
}

// serve runs a relay on loopback, prints "ADDR <host:port>", then answers
// each "measure" line read from in with a JSON snapshot, until in ends.
func serve(ctx context.Context, useTLS bool, in io.Reader, out io.Writer) error {
	cfg := relay.Config{
		ForwardAddr:        "127.0.0.1:9", // never dialed: the clients open no stream
		NumTurbotunnel:     2,
		MaxConns:           -1,
		MaxCarriersPerAddr: -1, // every carrier comes from loopback
		CarrierIdleTimeout: time.Hour,
	}
	if useTLS {
		cert, err := selfSignedCert()
		if err != nil {
			return err
		}
		cfg.TLSConfig = &tls.Config{Certificates: []tls.Certificate{cert}}
	}
	r, err := relay.New(cfg)
	if err != nil {
		return err
	}
	defer r.Close()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		return err
	}
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	done := make(chan error, 1)
	go func() { done <- r.Serve(ctx, ln) }()
	fmt.Fprintf(out, "ADDR %s\n", ln.Addr())
	sc := bufio.NewScanner(in)
	for sc.Scan() {
		if sc.Text() != "measure" {
			continue
		}
		b, _ := json.Marshal(takeSnapshot(r))
		fmt.Fprintf(out, "%s\n", b)
	}
	cancel()
	<-done
	return nil
}

func selfSignedCert() (tls.Certificate, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return tls.Certificate{}, err
	}
	tmpl := &x509.Certificate{
		SerialNumber: big.NewInt(1),
		Subject:      pkix.Name{CommonName: "127.0.0.1"},
		IPAddresses:  []net.IP{net.IPv4(127, 0, 0, 1)},
		NotBefore:    time.Now().Add(-time.Hour),
		NotAfter:     time.Now().Add(24 * time.Hour),
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, tmpl, &key.PublicKey, key)
	if err != nil {
		return tls.Certificate{}, err
	}
	return tls.Certificate{Certificate: [][]byte{der}, PrivateKey: key}, nil
}

// server is the relay side as seen by the measuring side.
type server struct {
	addr string
	in   io.WriteCloser
	out  *bufio.Reader
	stop func()
	mu   sync.Mutex
}

func (s *server) snapshot() (snapshot, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	var snap snapshot
	if _, err := io.WriteString(s.in, "measure\n"); err != nil {
		return snap, err
	}
	line, err := s.out.ReadString('\n')
	if err != nil {
		return snap, err
	}
	return snap, json.Unmarshal([]byte(line), &snap)
}

// newServer reads the ADDR line from out.
func newServer(in io.WriteCloser, out io.Reader, stop func()) (*server, error) {
	br := bufio.NewReader(out)
	line, err := br.ReadString('\n')
	if err != nil {
		return nil, fmt.Errorf("relay side did not start: %w", err)
	}
	addr, ok := strings.CutPrefix(strings.TrimSpace(line), "ADDR ")
	if !ok {
		return nil, fmt.Errorf("unexpected line %q", line)
	}
	return &server{addr: addr, in: in, out: br, stop: stop}, nil
}

// startChild runs this program with -serve in a child process.
func startChild(useTLS bool) (*server, error) {
	exe, err := os.Executable()
	if err != nil {
		return nil, err
	}
	cmd := exec.Command(exe, "-serve", "-tls="+strconv.FormatBool(useTLS))
	cmd.Stderr = os.Stderr
	in, err := cmd.StdinPipe()
	if err != nil {
		return nil, err
	}
	out, err := cmd.StdoutPipe()
	if err != nil {
		return nil, err
	}
	if err := cmd.Start(); err != nil {
		return nil, err
	}
	stop := func() {
		in.Close()
		cmd.Wait()
	}
	s, err := newServer(in, out, stop)
	if err != nil {
		stop()
		return nil, err
	}
	return s, nil
}

// result is the outcome of one measurement.
type result struct {
	n             int
	tls           bool
	before, after snapshot
}

func perConn(after, before uint64, n int) float64 {
	return (float64(after) - float64(before)) / float64(n)
}

func (r result) String() string {
	var b strings.Builder
	kind := "plain"
	if r.tls {
		kind = "TLS"
	}
	fmt.Fprintf(&b, "%d idle %s connections (%d goroutines before, %d after)\n", r.n, kind, r.before.Goroutines, r.after.Goroutines)
	heap := perConn(r.after.HeapObjects, r.before.HeapObjects, r.n)
	stacks := perConn(r.after.Stacks, r.before.Stacks, r.n)
	fmt.Fprintf(&b, "heap objects  %8.0f B/conn\n", heap)
	fmt.Fprintf(&b, "stacks        %8.0f B/conn\n", stacks)
	fmt.Fprintf(&b, "heap+stacks   %8.0f B/conn (%.2f KiB)\n", heap+stacks, (heap+stacks)/1024)
	fmt.Fprintf(&b, "RSS           %8.0f B/conn (%.2f KiB)\n", perConn(r.after.RSS, r.before.RSS, r.n), perConn(r.after.RSS, r.before.RSS, r.n)/1024)
	return b.String()
}

// measure opens n idle carriers to srv and reports the memory they cost.
func measure(srv *server, n int, useTLS bool, parallel int) (result, error) {
	res := result{n: n, tls: useTLS}
	var err error
	if res.before, err = srv.snapshot(); err != nil {
		return res, err
	}
	conns, err := openIdle(srv.addr, n, useTLS, parallel)
	defer func() {
		for _, c := range conns {
			c.Close()
		}
	}()
	if err != nil {
		return res, err
	}
	// Wait until the relay has seen every handshake and parked every
	// carrier.
	for deadline := time.Now().Add(2 * time.Minute); ; {
		if res.after, err = srv.snapshot(); err != nil {
			return res, err
		}
		parked := res.after.Parked >= int64(n) || runtime.GOOS != "linux" // only Linux parks
		if res.after.Conns >= int64(n) && parked {
			break
		}
		if time.Now().After(deadline) {
			return res, fmt.Errorf("relay sees %d of %d connections", res.after.Conns, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	return res, nil
}

// openIdle opens n carriers, each sending the token and a ClientID.
func openIdle(addr string, n int, useTLS bool, parallel int) ([]*websocket.Conn, error) {
	scheme := "ws"
	if useTLS {
		scheme = "wss"
	}
	url := scheme + "://" + addr + "/"
	d := websocket.Dialer{
		HandshakeTimeout: 30 * time.Second,
		TLSClientConfig:  &tls.Config{InsecureSkipVerify: true},
		ReadBufferSize:   256,
		WriteBufferSize:  256,
	}
	conns := make([]*websocket.Conn, n)
	var firstErr error
	var mu sync.Mutex
	var wg sync.WaitGroup
	next := make(chan int)
	for range max(1, parallel) {
		wg.Add(1)
		go func() {
			defer wg.Done()
			for i := range next {
				ws, err := dialIdle(&d, url)
				mu.Lock()
				if err != nil && firstErr == nil {
					firstErr = fmt.Errorf("connection %d: %w", i, err)
				}
				conns[i] = ws
				mu.Unlock()
			}
		}()
	}
	for i := range n {
		next <- i
	}
	close(next)
	wg.Wait()
	out := conns[:0]
	for _, c := range conns {
		if c != nil {
			out = append(out, c)
		}
	}
	return out, firstErr
}

func dialIdle(d *websocket.Dialer, url string) (*websocket.Conn, error) {
	ws, resp, err := d.Dial(url, nil)
	if err != nil {
		return nil, err
	}
	resp.Body.Close()
	id := turbotunnel.NewClientID()
	// As a Snowflake client does: the token and the ClientID as two
	// messages.
	if err := ws.WriteMessage(websocket.BinaryMessage, turbotunnel.Token[:]); err != nil {
		ws.Close()
		return nil, err
	}
	if err := ws.WriteMessage(websocket.BinaryMessage, id[:]); err != nil {
		ws.Close()
		return nil, err
	}
	return ws, nil
}
