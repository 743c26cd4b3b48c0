// Package idlepoll parks idle connections: it waits for any of them to
// become readable without a goroutine each, and hands one back (to a
// function given at New, which typically starts a goroutine to read it)
// when it is readable, when its deadline passes, when Wake is called for it,
// or when the Poller closes.
//
// The waiting is internal/fdwatch's (one epoll instance and one goroutine
// for all parked connections), with the parked table as its only table: a
// parked connection costs one map entry. What idlepoll adds is that table,
// the deadlines (checked once a second by one goroutine) and the handing
// back. Where fdwatch is unsupported (not Linux) New fails, and the caller
// keeps a goroutine reading each connection as before.
package idlepoll
