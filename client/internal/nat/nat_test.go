package nat

import (
	"context"
	"errors"
	"net"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/pion/stun/v4"
	"go.uber.org/goleak"

	"github.com/flurrypt/flurry/client/internal/proxynet"
	"github.com/flurrypt/flurry/client/internal/socks5udp"
	"github.com/flurrypt/flurry/internal/testkit/socks5test"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

// stunMode selects how the test STUN server behaves.
type stunMode int

const (
	honest      stunMode = iota // RFC 5780 server, endpoint-independent mapping
	dependent                   // reports another mapped port from the alternate address
	noOther                     // no OTHER-ADDRESS (RFC 5389-only server)
	silentOther                 // the alternate address never answers
)

// stunServer listens on 127.0.0.1:p (primary) and 127.0.0.2:p (alternate).
type stunServer struct {
	primary, alternate net.PacketConn
	wg                 sync.WaitGroup
}

func startSTUN(tb testing.TB, mode stunMode) string {
	tb.Helper()
	var s stunServer
	for range 20 {
		p, err := net.ListenPacket("udp4", "127.0.0.1:0")
		if err != nil {
			tb.Fatal(err)
		}
		port := p.LocalAddr().(*net.UDPAddr).Port
		a, err := net.ListenPacket("udp4", "127.0.0.2:"+strconv.Itoa(port))
		if err != nil {
			p.Close()
			continue // port taken on 127.0.0.2; try another
		}
		s.primary, s.alternate = p, a
		break
	}
	if s.primary == nil {
		tb.Skip("cannot bind the same port on 127.0.0.1 and 127.0.0.2")
	}
	serve := func(conn net.PacketConn, other net.Addr, isAlternate bool) {
		defer s.wg.Done()
		buf := make([]byte, 1500)
		for {
			n, from, err := conn.ReadFrom(buf)
			if err != nil {
				return
			}
			if isAlternate && mode == silentOther {
				continue
			}
			req := &stun.Message{Raw: append([]byte(nil), buf[:n]...)}
			if err := req.Decode(); err != nil || req.Type != stun.BindingRequest {
				continue
			}
			udp := from.(*net.UDPAddr)
			mapped := &stun.XORMappedAddress{IP: udp.IP, Port: udp.Port}
			if isAlternate && mode == dependent {
				mapped.Port++
			}
			setters := []stun.Setter{stun.NewTransactionIDSetter(req.TransactionID), stun.BindingSuccess, mapped}
			if mode != noOther {
				o := other.(*net.UDPAddr)
				setters = append(setters, &stun.OtherAddress{IP: o.IP, Port: o.Port})
			}
			setters = append(setters, stun.Fingerprint)
			resp, err := stun.Build(setters...)
			if err != nil {
				continue
			}
			_, _ = conn.WriteTo(resp.Raw, from)
		}
	}
	s.wg.Add(2)
	go serve(s.primary, s.alternate.LocalAddr(), false)
	go serve(s.alternate, s.primary.LocalAddr(), true)
	tb.Cleanup(func() {
		s.primary.Close()
		s.alternate.Close()
		s.wg.Wait()
	})
	return s.primary.LocalAddr().String()
}

func loopbackListen(ctx context.Context) (net.PacketConn, error) {
	var lc net.ListenConfig
	return lc.ListenPacket(ctx, "udp4", "127.0.0.1:0")
}

func TestProbe(t *testing.T) {
	tests := []struct {
		name    string
		mode    stunMode
		want    string
		wantErr error
	}{
		{name: "endpoint-independent mapping", mode: honest, want: Unrestricted},
		{name: "address-dependent mapping", mode: dependent, want: Restricted},
		{name: "no RFC 5780 support", mode: noOther, want: Unknown, wantErr: ErrNoRFC5780},
		{name: "alternate address silent", mode: silentOther, want: Unknown, wantErr: errTimeout},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			server := startSTUN(t, tt.mode)
			got, err := Probe(context.Background(), server, ProbeConfig{
				ListenPacket:     loopbackListen,
				RoundTripTimeout: 200 * time.Millisecond,
			})
			if got != tt.want {
				t.Errorf("Probe = %q, want %q", got, tt.want)
			}
			switch {
			case tt.wantErr == nil && err != nil:
				t.Errorf("Probe error %v", err)
			case tt.wantErr == errTimeout && err == nil:
				t.Error("Probe succeeded without a reply")
			case tt.wantErr != nil && tt.wantErr != errTimeout && !errors.Is(err, tt.wantErr):
				t.Errorf("Probe error %v, want %v", err, tt.wantErr)
			}
		})
	}
}

// errTimeout marks a case that must fail with some error.
var errTimeout = errors.New("any error")

func TestProbeContext(t *testing.T) {
	server := startSTUN(t, silentOther)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan error, 1)
	go func() {
		_, err := Probe(ctx, server, ProbeConfig{ListenPacket: loopbackListen, RoundTripTimeout: time.Hour})
		done <- err
	}()
	cancel()
	if err := <-done; !errors.Is(err, context.Canceled) {
		t.Fatalf("Probe after cancel = %v, want context.Canceled", err)
	}
}

func TestDetect(t *testing.T) {
	if _, err := Detect(context.Background(), nil, ProbeConfig{}); !errors.Is(err, ErrNoServers) {
		t.Errorf("Detect without servers: %v", err)
	}
	bad := startSTUN(t, noOther)
	good := startSTUN(t, dependent)
	got, err := Detect(context.Background(), []string{bad, good}, ProbeConfig{ListenPacket: loopbackListen, RoundTripTimeout: time.Second})
	if err != nil || got != Restricted {
		t.Errorf("Detect = %q, %v; want restricted from the second server", got, err)
	}
	got, err = Detect(context.Background(), []string{bad}, ProbeConfig{ListenPacket: loopbackListen, RoundTripTimeout: time.Second})
	if got != Unknown || !errors.Is(err, ErrNoRFC5780) {
		t.Errorf("Detect = %q, %v; want unknown and ErrNoRFC5780", got, err)
	}
}

func TestPolicy(t *testing.T) {
	steps := []struct {
		do     func(p *Policy)
		toSend string
	}{
		{do: func(*Policy) {}, toSend: Unrestricted},                                   // unknown: claim unrestricted
		{do: func(p *Policy) { p.ConnectionFailed(Restricted) }, toSend: Unrestricted}, // not a claim: no change
		{do: func(p *Policy) { p.ConnectionFailed(Unrestricted) }, toSend: Unknown},    // the claim failed
		{do: func(p *Policy) { p.Set(Restricted) }, toSend: Restricted},
		{do: func(p *Policy) { p.ConnectionFailed(Restricted) }, toSend: Restricted},
		{do: func(p *Policy) { p.Set(Unrestricted) }, toSend: Unrestricted},
		{do: func(p *Policy) { p.Set(Unknown) }, toSend: Unknown}, // stays off once failed
	}
	var p Policy
	for i, s := range steps {
		s.do(&p)
		if got := p.ToSend(); got != s.toSend {
			t.Errorf("step %d: ToSend = %q, want %q", i, got, s.toSend)
		}
	}
	var fresh Policy
	fresh.Set(Unrestricted)
	fresh.ConnectionFailed(Unrestricted) // a real unrestricted NAT is not a claim
	fresh.Set(Unknown)
	if got := fresh.ToSend(); got != Unrestricted {
		t.Errorf("ToSend = %q after a failure with a real type, want unrestricted", got)
	}
}

// TestProbeThroughSOCKS5 runs the mapping test through a SOCKS5 proxy, as
// a client with a proxy does: the server name is resolved through the
// proxy and both tests go through one UDP association, so the result is
// the mapping behaviour of the proxy's relay socket.
func TestProbeThroughSOCKS5(t *testing.T) {
	proxy, err := socks5test.New(socks5test.Config{})
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	socks, err := socks5udp.New(socks5udp.Config{ProxyAddr: proxy.Addr()})
	if err != nil {
		t.Fatal(err)
	}
	pn, err := proxynet.New(proxynet.Config{SOCKS: socks})
	if err != nil {
		t.Fatal(err)
	}
	server := startSTUN(t, honest)
	_, port, _ := net.SplitHostPort(server)
	got, err := Probe(context.Background(), net.JoinHostPort("localhost", port), ProbeConfig{
		ListenPacket:     pn.Associate,
		Resolve:          pn.ResolveSTUN,
		RoundTripTimeout: time.Second,
	})
	if err != nil || got != Unrestricted {
		t.Fatalf("Probe = %q, %v; want unrestricted", got, err)
	}
	// One association to resolve the name, one for tests I and II.
	if st := proxy.Stats(); st.Associations != 2 || st.DatagramsOut < 3 || st.DatagramsIn < 3 {
		t.Errorf("proxy stats %+v: the probe did not go through the proxy", st)
	}
}
