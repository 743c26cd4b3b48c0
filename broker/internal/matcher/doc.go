// Package matcher pairs waiting proxy polls with client offers and carries
// each proxy's answer back to the client that is waiting for it.
//
// # Design
//
// There is no matcher goroutine and no goroutine per poll. The goroutine that
// serves a proxy's HTTP poll calls [Matcher.Poll] and waits there (or, for a
// poll that must not block a goroutine, [Matcher.Enqueue], [Matcher.Notify]
// to learn of its match, then [Matcher.End] or [Matcher.Abandon]); the
// goroutine that serves a client calls [Matcher.Rendezvous]; the goroutine
// that serves a proxy's answer calls [Matcher.Answer]. They meet under one
// mutex that guards:
//
//   - two pools of waiting proxies, chosen by the proxy's NAT type
//     (unrestricted, and restricted-or-unknown), each split into classes by
//     the set of bridges the proxy will relay to, each class a binary min-heap
//     ordered by the proxy's strikes, then its reported client count, then
//     arrival (oldest first);
//   - a map from session id (Sid) to the proxy's session, which holds a
//     session from the moment its poll is enqueued until its answer is
//     delivered, its client gives up, or its poll ends unmatched.
//
// Every hand-over is a channel close performed under the mutex by the one
// party that removed the session from the map or heap, after it has written
// the values the other side will read. A close never blocks, so no send can
// hang (Snowflake's offer and answer races, docs/design.md, weaknesses 10 and
// 11, cannot happen), and a waiter that gives up takes the mutex and finds out
// exactly which of the two outcomes happened.
//
// # Life of a session
//
//	Poll:        enqueue ──▶ waiting ──(client pops it)──▶ matched ──(Answer)──▶ done
//	                            │                             │
//	            hold/Close/ctx  ▼                  client ctx ▼   proxy ctx (offer never delivered)
//	                          done (no match)                done      done, client retries
//
// A second poll with a Sid that is waiting or matched is refused with
// [ErrDuplicateSid]; once the session is done the Sid may be used again.
//
// # Choosing a proxy
//
// Among the proxies whose acceptance mask includes the client's bridge, a
// pool's best is the one with the fewest strikes ([Proxy.Strikes]: matches
// it recently left unanswered, counted by the caller; [MaxStrikes] or more
// all count as MaxStrikes), then the fewest reported clients, then the one
// waiting longest. A struck proxy is therefore chosen only when no proxy with
// fewer strikes in its pool can serve the client.
//
// A client that reports an unrestricted NAT takes the best proxy of the
// restricted-or-unknown pool, and the unrestricted pool's best only when the
// first pool has none or its best has more strikes; a restricted or unknown
// client only ever takes an unrestricted proxy. Finding a pool's best costs
// one comparison per non-empty class, and the number of classes is bounded by
// the number of distinct acceptance sets (at most 2^bridges - 1, usually one
// or two).
//
// When a client's time runs out while its matched proxy holds the offer
// without answering, [Matcher.Rendezvous] returns [ErrTimedOut] with that
// proxy's Key ([Answer.ProxyKey]), which the caller can count as a strike
// against it. The matcher itself keeps no memory of proxies between polls.
package matcher
