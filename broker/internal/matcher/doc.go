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
//     ordered by the proxy's reported client count (then by arrival, oldest
//     first);
//   - a map from session id (Sid) to the proxy's session, which holds a
//     session from the moment its poll is enqueued until its answer is
//     delivered, its client gives up, or its poll ends unmatched.
//
// Every hand-over is a channel close performed under the mutex by the one
// party that removed the session from the map or heap, after it has written
// the values the other side will read. A close never blocks, so no send can
// hang (Snowflake's offer and answer races, reference section 9 items 10 and
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
// A client that reports an unrestricted NAT takes a proxy from the
// restricted-or-unknown pool first and from the unrestricted pool only when
// the first has none; a restricted or unknown client only ever takes an
// unrestricted proxy. Within a pool the least-loaded proxy whose acceptance
// mask includes the client's bridge wins. Finding it costs one comparison per
// non-empty class, and the number of classes is bounded by the number of
// distinct acceptance sets (at most 2^bridges - 1, usually one or two).
package matcher
