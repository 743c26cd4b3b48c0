// Package attack runs attacks, each bounded in count and time, and reports
// what the target withstood: against a broker beside honest clients and
// proxies (RunBrokerAttack: junk offers, AMP floods, connection floods),
// against a relay (RunSessionFlood: one-packet sessions, optionally beside
// an honest download; RunCarrierHold: many carriers from one address), and
// against any HTTP or WebSocket server (RunSlowloris).
package attack
