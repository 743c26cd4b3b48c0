// Package manyusers simulates the users of the many-user runs: bulk users
// that download without pause and interactive users that send a request
// and read a response, then think, against a mixed target, in the shares a
// UserMix sets. A Group runs them and reports each class's bytes, latency
// and starvation over a measured window.
package manyusers
