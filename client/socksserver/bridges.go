package socksserver

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"

	pt "gitlab.torproject.org/tpo/anti-censorship/pluggable-transports/goptlib"

	"github.com/flurrypt/flurry/client"
)

// errTooManyBridges: every kept Client is in use and the connection's
// arguments name yet another bridge.
var errTooManyBridges = errors.New("too many distinct bridge lines in use at once")

// bridges keeps a Client per set of bridge arguments, so that NAT detection
// runs once per bridge. At most max are kept (every distinct set would
// otherwise add a Client for good): a new set evicts the least recently
// used Client that carries no connection.
type bridges struct {
	max       int
	newClient func(pt.Args) (*client.Client, error)

	mu      sync.Mutex // guards the fields below
	closed  bool
	clock   uint64 // counts acquisitions, for least-recently-used order
	entries map[string]*bridge
}

type bridge struct {
	c        *client.Client
	refs     int    // connections using c
	lastUsed uint64 // bridges.clock at the last acquisition
}

func newBridges(max int, newClient func(pt.Args) (*client.Client, error)) *bridges {
	return &bridges{max: max, newClient: newClient, entries: make(map[string]*bridge)}
}

// bridgeKey is a canonical text of args.
func bridgeKey(args pt.Args) string {
	keys := make([]string, 0, len(args))
	for k := range args {
		keys = append(keys, k)
	}
	slices.Sort(keys)
	var b strings.Builder
	for _, k := range keys {
		fmt.Fprintf(&b, "%q=%q;", k, args[k])
	}
	return b.String()
}

// acquire returns the Client for args, creating it on first use, and a
// function to call when the connection that uses it ends.
func (bs *bridges) acquire(args pt.Args) (*client.Client, func(), error) {
	key := bridgeKey(args)
	bs.mu.Lock()
	if bs.closed {
		bs.mu.Unlock()
		return nil, nil, client.ErrClosed
	}
	e, ok := bs.entries[key]
	var evicted *client.Client
	if !ok {
		if len(bs.entries) >= bs.max {
			victim := bs.idlestLocked()
			if victim == "" {
				bs.mu.Unlock()
				return nil, nil, errTooManyBridges
			}
			evicted = bs.entries[victim].c
			delete(bs.entries, victim)
		}
		c, err := bs.newClient(args)
		if err != nil {
			bs.mu.Unlock()
			closeClient(evicted)
			return nil, nil, err
		}
		e = &bridge{c: c}
		bs.entries[key] = e
	}
	bs.clock++
	e.refs++
	e.lastUsed = bs.clock
	bs.mu.Unlock()
	closeClient(evicted)
	var once sync.Once
	release := func() {
		once.Do(func() {
			bs.mu.Lock()
			e.refs--
			bs.mu.Unlock()
		})
	}
	return e.c, release, nil
}

// idlestLocked returns the key of the least recently used entry that no
// connection uses, or "" if every entry is in use.
func (bs *bridges) idlestLocked() string {
	var key string
	var oldest uint64
	for k, e := range bs.entries {
		if e.refs == 0 && (key == "" || e.lastUsed < oldest) {
			key, oldest = k, e.lastUsed
		}
	}
	return key
}

// close closes every Client (their sessions end, so connections using them
// fail) and refuses new ones.
func (bs *bridges) close() {
	bs.mu.Lock()
	bs.closed = true
	clients := make([]*client.Client, 0, len(bs.entries))
	for _, e := range bs.entries {
		clients = append(clients, e.c)
	}
	clear(bs.entries)
	bs.mu.Unlock()
	for _, c := range clients {
		closeClient(c)
	}
}

func closeClient(c *client.Client) {
	if c != nil {
		_ = c.Close()
	}
}
