// Package torpt is the part of tor's pluggable-transport protocol (pt-spec,
// over goptlib) that Flurry's client and relay commands speak alike:
// whether tor started the process, the transport's state directory, the
// setup with the version report, exiting when tor closes stdin, and the
// method lines of the one transport both offer, "snowflake". The client's
// upstream proxy (TOR_PT_PROXY) is here too. The role libraries never
// import it: they take listeners and a configuration.
package torpt
