// Package sleep pauses a goroutine unless its context ends first: the wait
// between attempts of every retry loop (the broker's SQS reader, the
// proxy's polls, the load generator's phases).
package sleep
