package broker

import "github.com/flurrypt/flurry/broker/internal/event"

// NewWithSink is New with an event sink, for tests.
func NewWithSink(cfg Config, sink event.Sink) (*Broker, error) { return newBroker(cfg, sink) }
