package broker

import (
	"context"

	"github.com/flurrypt/flurry/broker/internal/event"
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
	var desc messages.SessionDescription
	if err == nil {
		desc, err = checkOffer(req.Offer)
	}
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
	if ip, ok := sdp.ClientIP(desc.SDP); ok {
		ev.Addr = ip
	}
	answer, outcome := b.clientRendezvous(ctx, ev, req)
	if outcome != event.ClientMatched {
		return b.fixed.clientError(outcome), nil
	}
	return messages.ClientPollResponse{Answer: answer}.Encode()
}
