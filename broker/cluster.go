package broker

import (
	"context"
	"encoding/hex"
	"errors"
	"net/http"
	"os"

	"github.com/flurrypt/flurry/broker/internal/cluster"
	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/broker/internal/matcher"
	"github.com/flurrypt/flurry/messages"
)

// errCluster: the cluster configuration is invalid (Config.NATS,
// NATSCreds, Instance).
var errCluster = errors.New("broker cluster")

// DefaultInstance is the instance name when Config.Instance is empty: the
// host name, or "broker" if it is not a valid name.
func DefaultInstance() string {
	if h, err := os.Hostname(); err == nil && cluster.ValidInstance(h) {
		return h
	}
	return "broker"
}

// ValidInstance reports whether s can be Config.Instance: 1 to 64 of
// A-Z a-z 0-9 . _ -.
func ValidInstance(s string) bool { return cluster.ValidInstance(s) }

// clusterConfig is the part of the cluster's configuration that comes
// straight from c.
func (c *Config) clusterConfig() cluster.Config {
	return cluster.Config{
		URL:       c.NATS,
		CredsFile: c.NATSCreds,
		NKeyFile:  c.NATSNKey,
		TLSCAFile: c.NATSTLSCA,
		Instance:  c.Instance,
		MaxBudget: c.ClientTimeout,
	}
}

// startCluster joins the brokers' cluster (Config.NATS) and hooks it to the
// matcher. Without Config.NATS it does nothing. set says how exposed the
// link is (settle refused an open one without NATSInsecure).
func (b *Broker) startCluster(set *settings) error {
	if b.cfg.NATS == "" {
		return nil
	}
	switch set.natsExposure {
	case cluster.Open:
		b.cfg.Logger.Warn("INSECURE NATS LINK: plaintext to a remote server without credentials (NATSInsecure): anyone who reaches it can join the brokers, take clients' offers and answer them; use tls:// and credentials (docs/cluster.md)", "server", set.natsRemote)
	case cluster.Readable:
		b.cfg.Logger.Warn("plaintext NATS link to a remote server: clients' offers (their addresses) and proxies' answers can be read on the path; use tls:// or a NATS TLS CA (docs/cluster.md)", "server", set.natsRemote)
	}
	fps := make([]string, b.bridges.Len())
	for i := range fps {
		fps[i] = hex.EncodeToString(b.bridges.At(i).Fingerprint)
	}
	cc := b.cfg.clusterConfig()
	cc.Bridges = fps
	cc.Local = clusterLocal{b}
	cc.Registry = b.stats.Registry()
	cc.Logger = b.cfg.Logger
	cc.CheckOffer = func(offer string) error {
		_, err := checkOffer(offer)
		return err
	}
	cc.CheckAnswer = checkAnswer
	c, err := cluster.Start(cc)
	if err != nil {
		return errors.Join(errCluster, err)
	}
	b.cluster = c
	b.match.SetHooks(matcher.Hooks{Changed: c.Changed, Matched: c.Matched})
	return nil
}

// rendezvous matches a client with a local proxy or, in a cluster, with
// another instance's.
func (b *Broker) rendezvous(ctx context.Context, req messages.ClientPollRequest, bridge int) (matcher.Answer, error) {
	nat := matcherNAT(req.NAT)
	ans, err := b.match.Rendezvous(ctx, matcher.ClientOffer{SDP: req.Offer, NAT: nat, Bridge: bridge})
	if errors.Is(err, matcher.ErrNoProxies) && b.cluster != nil {
		ans.SDP, err = b.cluster.Rendezvous(ctx, req, nat, bridge)
	}
	return ans, err
}

// forwardAnswer hands an answer for a session this instance does not hold
// to the instance that does; it reports whether a client still waited.
func (b *Broker) forwardAnswer(ctx context.Context, req messages.ProxyAnswerRequest) bool {
	return b.cluster != nil && b.cluster.ForwardAnswer(ctx, req.Sid, req.Answer)
}

// serveHealth answers a load balancer's health check: 503 while the link to
// the cluster is down, 200 otherwise (always without a cluster).
func (b *Broker) serveHealth(w http.ResponseWriter, _ *http.Request) {
	w.Header().Set("Content-Type", textPlain)
	w.Header().Set("Cache-Control", "no-store")
	if b.cluster != nil && !b.cluster.Healthy() {
		http.Error(w, "cluster link down", http.StatusServiceUnavailable)
		return
	}
	_, _ = w.Write([]byte("ok\n"))
}

// Healthy reports what /healthz does: false while the link to the cluster
// is down.
func (b *Broker) Healthy() bool { return b.cluster == nil || b.cluster.Healthy() }

// clusterLocal is the broker as the cluster sees it.
type clusterLocal struct{ b *Broker }

// Serve matches another instance's client with a local proxy. The client's
// poll is counted where it arrived; a proxy that leaves it unanswered is
// struck here, where its address is known.
func (l clusterLocal) Serve(ctx context.Context, req messages.ClientPollRequest) (string, error) {
	b := l.b
	fp, err := messages.ParseFingerprint(req.Fingerprint)
	if err != nil {
		return "", matcher.ErrNoProxies
	}
	bridge, ok := b.bridges.Lookup(fp)
	if !ok {
		return "", matcher.ErrNoProxies
	}
	ans, err := b.match.Rendezvous(ctx, matcher.ClientOffer{SDP: req.Offer, NAT: matcherNAT(req.NAT), Bridge: bridge})
	if errors.Is(err, matcher.ErrTimedOut) && ans.ProxyKey != 0 && errors.Is(ctx.Err(), context.DeadlineExceeded) {
		b.unanswered(ans)
	}
	return ans.SDP, err
}

// Answer delivers an answer another instance received for a local session.
func (l clusterLocal) Answer(sid, sdp string) bool {
	proxyType, ok := l.b.match.Answer(sid, sdp)
	if ok {
		l.b.sink.ProxyAnswered(proxyType, event.AnswerSuccess)
	}
	return ok
}

func (l clusterLocal) Available() (restricted, unrestricted uint64) {
	return l.b.match.Available()
}
