// Package pionlog sends pion's logs to a slog.Logger instead of pion's
// default (stdout and stderr: a pluggable transport must not write there,
// and nothing may log peer text verbatim).
//
// pion's messages can repeat what the peer sent, control characters
// included (an SDP line, an SCTP abort reason), so errors are logged at
// info level as a fixed text with pion's scope only; the message itself
// appears quoted (control characters escaped) and truncated at debug
// level, as do warnings; pion's info, debug and trace logs are dropped.
package pionlog
