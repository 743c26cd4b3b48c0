// Package networkpreset holds the settings of the public networks that
// flurry-proxy and flurry-client can join by name (-network tor): the one
// place where each of those hosts is written. A binary uses a preset only
// when told to; without one, no flag points at a public host.
package networkpreset
