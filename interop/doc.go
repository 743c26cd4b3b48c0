// Package interop keeps Flurry's promise of wire compatibility with Tor
// Snowflake v2.14.1 checked against Snowflake itself, not against captured
// bytes.
//
// It lives in a nested Go module (interop/go.mod) so that Snowflake's
// dependency versions never enter Flurry's own go.mod. The module requires
// Snowflake's Go module for two things only: the differential tests import
// its common/messages, common/encapsulation and common/turbotunnel packages,
// and BuildSnowflake compiles its four binaries (broker, proxy, client,
// server) from the module cache with Snowflake's own go.mod, so they are
// built exactly as released. Nothing of Snowflake's source is copied.
//
// The tests run whole-process chains in which each role is either
// Flurry's or Snowflake's binary, started with Snowflake's command lines
// (see Chain), and compare the encoders and decoders of both
// implementations (differential and fuzz tests). `make interop` runs them.
package interop
