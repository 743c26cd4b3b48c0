// Package chainproc starts an implementation's roles (Flurry's binaries or
// Snowflake's, named by Implementation) as processes on loopback, with
// Snowflake v2.14.1's flag names and tor's pluggable-transport environment:
// a whole chain (StartChain: target, server, broker, proxy, client) or a
// lone managed server (StartManagedServer). Every process runs under
// internal/childproc.
package chainproc
