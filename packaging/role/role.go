package role

import _ "embed"

// Copyright is the Debian-format copyright file of every package and image.
//
//go:embed copyright
var Copyright []byte

// Role is one binary, flurry-NAME.
type Role struct {
	Name        string
	Synopsis    string // a few words: the Debian package's synopsis, the man page's NAME line
	Description string // a paragraph, lines under 80 columns
	// Service: the Debian package ships a systemd unit and
	// /etc/default/flurry-NAME.
	Service bool
	// StartOnInstall: the package enables and starts the unit, because its
	// default configuration serves without editing (the proxy's -network
	// tor). Other services need their configuration first.
	StartOnInstall bool
	// Image: the release builds a container image of it, whose default
	// arguments are ImageArgs.
	Image     bool
	ImageArgs []string
	// KeepsState: the service keeps files (ACME certificates, the relay's
	// key) in /var/lib/flurry-NAME.
	KeepsState bool
}

// Binary returns the command's name, flurry-NAME.
func (r Role) Binary() string { return "flurry-" + r.Name }

// All returns every role, in the order the release lists them.
func All() []Role {
	return []Role{
		{Name: "broker", Synopsis: "Snowflake-compatible rendezvous broker",
			Description: "The broker introduces censored clients to volunteer proxies. Snowflake proxies\nand clients use it unchanged.",
			Service:     true, Image: true, KeepsState: true},
		{Name: "proxy", Synopsis: "volunteer proxy for censored users",
			Description: "The proxy relays censored clients' WebRTC connections to a Flurry or Snowflake\nrelay. Run it to help people reach the open internet.",
			Service:     true, StartOnInstall: true, Image: true, ImageArgs: []string{"-network", "tor"}},
		{Name: "client", Synopsis: "censorship-circumvention client for Tor",
			Description: "The client is a Tor pluggable transport that reaches Tor through volunteer\nproxies found by a broker; compatible with Snowflake's network."},
		{Name: "relay", Synopsis: "WebSocket bridge of Flurry and Snowflake",
			Description: "The relay takes the proxies' WebSocket connections and hands clients' streams\nto Tor or, standalone, to any TCP service.",
			Service:     true, Image: true, KeepsState: true},
		{Name: "natprobe", Synopsis: "NAT probe peer for Flurry and Snowflake proxies",
			Description: "The NAT probe tells proxies whether their NAT is restricted, by trying a\nWebRTC connection to them from behind a restrictive NAT.",
			Service:     true, KeepsState: true},
	}
}

// Platform is a Linux target of the release, as its binaries are named.
type Platform struct {
	Arch       string // in the binary's name: amd64, arm64, armv7
	GOARCH     string // amd64, arm64, arm
	Variant    string // OCI platform variant: v7 for armv7, else empty
	DebianArch string // amd64, arm64, armhf
}

// Platforms returns the Linux targets the release builds every role for.
func Platforms() []Platform {
	return []Platform{
		{Arch: "amd64", GOARCH: "amd64", DebianArch: "amd64"},
		{Arch: "arm64", GOARCH: "arm64", DebianArch: "arm64"},
		{Arch: "armv7", GOARCH: "arm", Variant: "v7", DebianArch: "armhf"},
	}
}

// BinaryFile returns the release's file name of r's binary for p,
// flurry-NAME-VERSION-linux-ARCH.
func (r Role) BinaryFile(version string, p Platform) string {
	return r.Binary() + "-" + version + "-linux-" + p.Arch
}
