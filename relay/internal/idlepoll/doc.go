// Package idlepoll parks idle connections: it waits for any of them to
// become readable without a goroutine each, and hands one back (to a
// function given at New, which typically starts a goroutine to read it)
// when it is readable, when its deadline passes, when Wake is called for it,
// or when the Poller closes.
//
// On Linux a Poller is one epoll instance of its own (the runtime's
// netpoller keeps its registration too: a socket may be in several epoll
// sets) and one goroutine, blocked in epoll_wait, for all parked
// connections; a parked connection costs a map entry. Elsewhere New
// reports errors.ErrUnsupported, and the caller keeps a goroutine reading
// each connection as before.
package idlepoll
