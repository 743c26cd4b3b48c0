// Package brokerwire speaks the broker's HTTP protocol as the load
// generator's simulated proxies and clients do: a lean HTTP/1.1 keep-alive
// client, a fixed real SDP offer and answer, request templates with a
// fresh Sid patched in, the counters of client outcomes, and scraping a
// broker's Prometheus page.
package brokerwire
