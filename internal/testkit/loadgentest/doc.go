// Package loadgentest holds the load generator's test fakes (a broker, a
// relay and a SOCKS5 server that speak just enough of the protocols) and
// CheckReport, which checks that a run's result survives JSON and prints a
// table and a well-formed SVG.
package loadgentest
