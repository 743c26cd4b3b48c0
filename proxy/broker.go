package proxy

import (
	"bytes"
	"context"
	"crypto/rand"
	"encoding/base64"
	"fmt"
	"io"
	"net/http"
	"net/url"

	"github.com/flurrypt/flurry/messages"
)

// newSid returns a fresh session id like Snowflake's: 16 random bytes in
// unpadded standard base64 (22 characters).
func newSid() string {
	var b [16]byte
	rand.Read(b[:]) // never fails (crypto/rand)
	return base64.RawStdEncoding.EncodeToString(b[:])
}

// roundClients rounds a client count down to a multiple of 8, as Snowflake
// does, so that the broker learns less about the proxy's users.
func roundClients(n int) int { return n / 8 * 8 }

// post sends body to u and returns the reply body, at most
// messages.MaxBodySize bytes; any status but 200 is an error.
func (p *Proxy) post(ctx context.Context, u *url.URL, body []byte) ([]byte, error) {
	ctx, cancel := context.WithTimeout(ctx, p.s.BrokerTimeout)
	defer cancel()
	req, err := http.NewRequestWithContext(ctx, http.MethodPost, u.String(), bytes.NewReader(body))
	if err != nil {
		return nil, err
	}
	resp, err := p.http.Do(req)
	if err != nil {
		return nil, err
	}
	defer resp.Body.Close()
	if resp.StatusCode != http.StatusOK {
		io.Copy(io.Discard, io.LimitReader(resp.Body, messages.MaxBodySize))
		return nil, fmt.Errorf("%w: %d", errBrokerStatus, resp.StatusCode)
	}
	b, err := io.ReadAll(io.LimitReader(resp.Body, messages.MaxBodySize+1))
	if err != nil {
		return nil, err
	}
	if len(b) > messages.MaxBodySize {
		return nil, errBrokerTooLarge
	}
	return b, nil
}

// poll asks the broker for a client. The response is returned together
// with messages.ErrIncorrectRelayPattern so that its NextPoll can be obeyed.
func (p *Proxy) poll(ctx context.Context, sid string, clients int) (messages.ProxyPollResponse, error) {
	pattern := p.s.AllowedRelayPattern
	body, err := messages.ProxyPollRequest{
		Sid:                  sid,
		Version:              messages.ProxyVersion,
		Type:                 p.s.ProxyType,
		NAT:                  p.NATType(),
		Clients:              roundClients(clients),
		AcceptedRelayPattern: &pattern,
	}.Encode()
	if err != nil {
		return messages.ProxyPollResponse{}, fmt.Errorf("encode poll: %w", err)
	}
	reply, err := p.post(ctx, p.s.brokerPoll, body)
	if err != nil {
		return messages.ProxyPollResponse{}, fmt.Errorf("poll broker: %w", err)
	}
	resp, err := messages.DecodeProxyPollResponse(reply)
	if err != nil {
		return resp, fmt.Errorf("poll broker: %w", err)
	}
	return resp, nil
}

// answer sends the SDP answer for sid to the broker.
func (p *Proxy) answer(ctx context.Context, sid, answer string) error {
	body, err := messages.ProxyAnswerRequest{Version: messages.ProxyVersion, Sid: sid, Answer: answer}.Encode()
	if err != nil {
		return fmt.Errorf("encode answer: %w", err)
	}
	reply, err := p.post(ctx, p.s.brokerAnswer, body)
	if err != nil {
		return fmt.Errorf("send answer: %w", err)
	}
	resp, err := messages.DecodeProxyAnswerResponse(reply)
	if err != nil {
		return fmt.Errorf("send answer: %w", err)
	}
	if resp.Status != messages.StatusSuccess {
		return errClientGone
	}
	return nil
}
