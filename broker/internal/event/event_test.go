package event

import (
	"net/netip"
	"slices"
	"testing"
)

// log is a Sink that records the names of the events it receives.
type log struct {
	name string
	out  *[]string
}

func (l log) add(ev string) { *l.out = append(*l.out, l.name+":"+ev) }

func (l log) ProxyPollStarted(Proxy)                       { l.add("started") }
func (l log) ProxyPollEnded(Proxy, ProxyOutcome)           { l.add("ended") }
func (l log) ProxyPollRejected(Proxy)                      { l.add("rejected") }
func (l log) ClientPollEnded(Client, ClientOutcome)        { l.add("client") }
func (l log) ProxyAnswered(string, AnswerOutcome)          { l.add("answered") }
func (l log) ProxyUnanswered(string)                       { l.add("unanswered") }
func (l log) RequestRejected(Endpoint, Reason, netip.Addr) { l.add("request") }

func TestTee(t *testing.T) {
	var got []string
	sinks := []Sink{log{"a", &got}, Nop{}, log{"b", &got}}
	s := Tee(sinks...)
	sinks[0] = Nop{} // Tee copied the slice
	s.ProxyPollStarted(Proxy{})
	s.ProxyPollEnded(Proxy{}, ProxyIdle)
	s.ProxyPollRejected(Proxy{})
	s.ClientPollEnded(Client{}, ClientMatched)
	s.ProxyAnswered("", AnswerSuccess)
	s.ProxyUnanswered("")
	s.RequestRejected(EndpointProxy, ReasonMethod, netip.Addr{})
	want := []string{"a:started", "b:started", "a:ended", "b:ended", "a:rejected", "b:rejected",
		"a:client", "b:client", "a:answered", "b:answered", "a:unanswered", "b:unanswered", "a:request", "b:request"}
	if !slices.Equal(got, want) {
		t.Errorf("events = %v, want %v", got, want)
	}
}
