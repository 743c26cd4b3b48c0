// Package wscarrier dials relays as Snowflake's clients reach them:
// WebSocket carriers from a range of loopback source addresses, and
// turbotunnel sessions (KCP and smux with Snowflake's parameters) over
// them.
package wscarrier
