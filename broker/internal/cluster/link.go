package cluster

import (
	"fmt"
	"net/netip"
	"net/url"
	"strings"
)

// Exposure says who can read or join the cluster over its NATS link, as
// far as the configuration shows (Config.Exposure).
type Exposure int

const (
	// Protected: TLS (a tls:// or wss:// URL, or a TLS CA), or every
	// server on loopback.
	Protected Exposure = iota
	// Readable: plaintext to a server that is not on loopback, with
	// credentials. Offers (client addresses) and answers can be read on the
	// path; only the credentials' holders can join.
	Readable
	// Open: plaintext to a server that is not on loopback, without
	// credentials. Anybody who reaches the server can join the brokers'
	// queue group, take client offers and answer clients.
	Open
)

// Exposure tells how exposed cfg's link would be, and names the first
// server that is not on loopback (empty when all are). It looks at the
// URLs and files named, never at the network (no name lookups): a server
// named by anything but "localhost" or a loopback address counts as
// remote. Credentials are Config.CredsFile, Config.NKeyFile, or a user (and
// password) or token in a URL. An error means a URL does not parse.
func (cfg Config) Exposure() (Exposure, string, error) {
	secure := cfg.TLSCAFile != ""
	creds := cfg.CredsFile != "" || cfg.NKeyFile != ""
	remote := ""
	for s := range strings.SplitSeq(cfg.URL, ",") {
		s = strings.TrimSpace(s)
		if s == "" {
			continue
		}
		if !strings.Contains(s, "://") {
			s = "nats://" + s // as nats.go reads it
		}
		u, err := url.Parse(s)
		if err != nil {
			return Open, "", fmt.Errorf("%w: NATS URL does not parse", errInvalidConfig)
		}
		switch strings.ToLower(u.Scheme) {
		case "tls", "wss":
			secure = true // nats.go then uses TLS with every server
		case "nats", "ws":
		default:
			return Open, "", fmt.Errorf("%w: NATS URL scheme %q: want nats, tls, ws or wss", errInvalidConfig, u.Scheme)
		}
		if u.User != nil {
			creds = true
		}
		if remote == "" && !loopbackHost(u.Hostname()) {
			remote = u.Host
		}
	}
	switch {
	case secure || remote == "":
		return Protected, remote, nil
	case creds:
		return Readable, remote, nil
	}
	return Open, remote, nil
}

// loopbackHost reports whether host (without port or brackets) is
// "localhost" or a loopback address.
func loopbackHost(host string) bool {
	if strings.EqualFold(host, "localhost") {
		return true
	}
	ip, err := netip.ParseAddr(host)
	return err == nil && ip.Unmap().IsLoopback()
}
