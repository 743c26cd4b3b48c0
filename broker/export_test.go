package broker

import (
	"context"
	"errors"
	"os"
	"time"

	"github.com/flurrypt/flurry/broker/internal/event"
)

// NewWithSink is New with an event sink, for tests.
func NewWithSink(cfg Config, sink event.Sink) (*Broker, error) { return newBroker(cfg, sink) }

// Background runs the background work Serve runs (metrics periods, address
// counts) without serving, for tests in a synctest bubble.
func (b *Broker) Background(ctx context.Context) error { return b.background(ctx) }

// EndMetricsPeriod ends the metrics period now and appends its descriptor
// to Config.MetricsLogPath, as Serve does every MetricsInterval.
func (b *Broker) EndMetricsPeriod() error {
	f, err := os.OpenFile(b.cfg.MetricsLogPath, os.O_WRONLY|os.O_APPEND, 0)
	if err != nil {
		return err
	}
	return errors.Join(b.stats.EndPeriod(f), f.Close())
}

// SetParkAfter sets how long a parkable poll waits in its handler before it
// is parked (0: at once). Call it before serving.
func (b *Broker) SetParkAfter(d time.Duration) { b.parkAfter = d }

// Parked is the number of parked polls (not idle connections) the broker
// holds now.
func (b *Broker) Parked() int {
	b.parks.mu.Lock()
	defer b.parks.mu.Unlock()
	n := 0
	for pk := b.parks.head; pk != nil; pk = pk.next {
		pk.mu.Lock()
		if pk.ph == phasePoll {
			n++
		}
		pk.mu.Unlock()
	}
	return n
}

// StopRateLimitClock rebuilds the rate limiters on a clock that stands
// still, so that no bucket refills during a test. Call it before serving.
func (b *Broker) StopRateLimitClock() {
	now := time.Now()
	b.limits = newLimits(b.cfg, func() time.Time { return now })
}

// ClusterPools is cluster.Cluster.Pools (0 without a cluster).
func (b *Broker) ClusterPools() int {
	if b.cluster == nil {
		return 0
	}
	return b.cluster.Pools()
}

// ClusterServer is cluster.Cluster.Server ("" without a cluster).
func (b *Broker) ClusterServer() string {
	if b.cluster == nil {
		return ""
	}
	return b.cluster.Server()
}

// CheckConfig fills in cfg's defaults and validates it as New does, without
// starting anything (no NATS connection, no listener).
func CheckConfig(cfg Config) error {
	_, err := cfg.settle()
	return err
}
