// Package deb builds Flurry's Debian packages, one per role, with nfpm.
// Each holds the binary in /usr/bin, its manual page (made from its -h by
// package manpage), copyright and changelog, and, for the services, a
// hardened systemd unit, a default configuration file
// (/etc/default/flurry-ROLE, a conffile) the unit reads its flags from,
// and maintainer scripts that reload, restart and stop it as Debian's do.
// Only a role whose default configuration serves as it is (the proxy's
// -network tor) is enabled and started on install. Every file carries the
// given time, so the same inputs give the same bytes.
package deb
