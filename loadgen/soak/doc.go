// Package soak runs a whole chain of real binaries (package demo's
// Cluster) for a long time under churn and flags every process whose
// memory or goroutines grow (RunSoak).
package soak
