// Package fdwatch tells, from one goroutine, when any of many idle
// connections becomes readable (data, end of stream or an error), so that a
// connection that only waits holds no goroutine of its own.
//
// A [Watcher] keeps one epoll instance (Linux) and one goroutine blocked in
// epoll_wait. [Watcher.Add] registers a connection's socket one-shot, under
// a token that the watcher maps back to its [Watch]: once the socket is
// readable, the watch's function runs once on the watcher's goroutine and
// the socket is disarmed until [Watch.Rearm]. The functions must not block.
// [Watch.ReadNow] reads what is there without waiting, so that a function
// can tell data from a disconnect.
//
// The sockets stay in Go's own poller as well: the package never closes a
// connection and never changes its mode, so that the connection can go back
// to ordinary blocking use once its watch is removed.
//
// A caller with a table of its own can do without a Watch per socket: a
// watcher made by [NewTokens] reports the token a socket was armed under
// ([Watcher.Arm]) and leaves the bookkeeping to the caller.
//
// The broker watches its parked proxy polls with Add, the relay (through
// relay/internal/idlepoll) its parked carriers with tokens.
//
// On other systems [New] fails: callers fall back to what they do without it.
package fdwatch
