package wscarrier

import (
	"context"
	"net/url"
	"sync"
	"time"

	"github.com/gorilla/websocket"
	"github.com/xtaci/kcp-go/v5"
	"github.com/xtaci/smux"

	"github.com/flurrypt/flurry/common/turbotunnel"
)

// Tunnel is one carrier with its KCP and smux sessions.
type Tunnel struct {
	pc  *CarrierConn
	kcp *kcp.UDPSession
	Mux *smux.Session
}

// TunnelSet holds a run's tunnels and streams until closeAll; safe for
// concurrent use.
type TunnelSet struct {
	mu      sync.Mutex
	tunnels []*Tunnel
	Streams []*smux.Stream
	Opened  []time.Time // when each stream was added
}

// AddTunnel keeps t until CloseAll.
func (s *TunnelSet) AddTunnel(t *Tunnel) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.tunnels = append(s.tunnels, t)
}

// AddStream keeps st, and when it opened, until CloseAll.
func (s *TunnelSet) AddStream(st *smux.Stream) {
	s.mu.Lock()
	defer s.mu.Unlock()
	s.Streams = append(s.Streams, st)
	s.Opened = append(s.Opened, time.Now())
}

// CloseAll closes every stream, then every tunnel.
func (s *TunnelSet) CloseAll() {
	s.mu.Lock()
	defer s.mu.Unlock()
	for _, st := range s.Streams {
		st.Close()
	}
	for _, t := range s.tunnels {
		t.Close()
	}
}

// OpenTunnel dials a carrier and starts KCP and smux over it.
func OpenTunnel(ctx context.Context, d *websocket.Dialer, u *url.URL) (*Tunnel, error) {
	id := turbotunnel.NewClientID()
	ws, err := DialCarrier(ctx, d, u, id)
	if err != nil {
		return nil, err
	}
	pc := NewCarrierConn(ws, id)
	sess, err := kcp.NewConn2(id, nil, 0, 0, pc)
	if err != nil {
		pc.Close()
		return nil, err
	}
	turbotunnel.ConfigureKCP(sess)
	mux, err := smux.Client(sess, turbotunnel.ClientSmuxConfig())
	if err != nil {
		sess.Close()
		pc.Close()
		return nil, err
	}
	return &Tunnel{pc: pc, kcp: sess, Mux: mux}, nil
}

// Close closes the tunnel's streams, session and carrier.
func (t *Tunnel) Close() {
	t.Mux.Close()
	t.kcp.Close()
	t.pc.Close()
}
