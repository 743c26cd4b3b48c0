// Package relayload measures a relay (Flurry's or Snowflake's server) over
// its wire protocol alone:
//
//   - RunRelayIdle opens N WebSocket carriers (upgrade, token, ClientID,
//     then nothing) and reports the relay's memory per idle carrier.
//   - RunRelaySessions opens turbotunnel sessions (carrier, KCP and smux
//     each) in steps and reports the relay's memory per session.
//   - RunRelayThroughput: C carriers each run KCP and smux with Snowflake's
//     client parameters through the relay to its forward target (an echo or
//     a source) and report MB/s.
//   - RunRelayUsers starts several implementations' relays in turn as
//     managed pluggable transports (package chainproc) and runs 100, 500,
//     2000 users (package manyusers) through each: CPU per MB, memory per
//     session, starvation.
package relayload
