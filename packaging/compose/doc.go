// Package compose holds the compose file for volunteers who run the
// proxy's container image with docker compose: it restarts the proxy with
// the machine, serves Tor's Snowflake network and limits what the proxy
// may take of the machine. The release writes it with its version in the
// image's name.
package compose
