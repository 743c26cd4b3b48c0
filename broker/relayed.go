package broker

import (
	"context"
	"errors"

	"github.com/flurrypt/flurry/broker/internal/event"
	"github.com/flurrypt/flurry/broker/internal/matcher"
	"github.com/flurrypt/flurry/common/sdp"
	"github.com/flurrypt/flurry/messages"
)

// relayedClientPoll runs the rendezvous for a poll request ("1.0\n{…}",
// never the legacy format) that reached the broker through a relay that
// hides the client's address (an AMP cache, an SQS queue), and returns the
// encoded ClientPollResponse as POST /client would answer it. The
// statistics use the first public address among the offer's ICE candidates
// (or its c= line) as the client's, as Snowflake does; it goes nowhere
// else. ctx bounds the wait for a proxy's answer.
func (b *Broker) relayedClientPoll(ctx context.Context, body []byte, method event.Method) ([]byte, error) {
	ev := event.Client{NAT: messages.NATUnknown, Method: method}
	req, err := messages.DecodeClientPollRequest(body)
	if err != nil {
		b.sink.ClientPollEnded(ev, event.ClientBadRequest)
		b.cfg.Logger.Debug("client request rejected", "method", method.String(), "reason", messageErrorText(err))
		resp, encErr := messages.ClientPollResponse{Error: err.Error()}.Encode()
		if encErr != nil {
			return messages.ClientPollResponse{Error: messages.ErrMalformed.Error()}.Encode()
		}
		return resp, nil
	}
	ev.NAT = req.NAT
	if desc, err := messages.DecodeSessionDescription(req.Offer); err == nil {
		if ip, ok := sdp.ClientIP(desc.SDP); ok {
			ev.Addr = ip
		}
	}
	bridge, ok := -1, false
	if fp, err := messages.ParseFingerprint(req.Fingerprint); err == nil {
		bridge, ok = b.bridges.Lookup(fp)
	}
	if !ok {
		b.sink.ClientPollEnded(ev, event.ClientUnknownBridge)
		return b.fixed.unknownBridge, nil
	}
	ans, err := b.match.Rendezvous(ctx, matcher.ClientOffer{SDP: req.Offer, NAT: matcherNAT(req.NAT), Bridge: bridge})
	switch {
	case err == nil:
		b.sink.ClientPollEnded(ev, event.ClientMatched)
		return messages.ClientPollResponse{Answer: ans.SDP}.Encode()
	case errors.Is(err, matcher.ErrNoProxies):
		b.sink.ClientPollEnded(ev, event.ClientDenied)
		return b.fixed.noProxies, nil
	default: // matcher.ErrTimedOut
		b.sink.ClientPollEnded(ev, event.ClientTimeout)
		return b.fixed.timedOut, nil
	}
}
