package networkpreset

import (
	"flag"
	"fmt"
	"strings"
)

// Flag is one command-line flag a preset sets, by the flag's name.
type Flag struct{ Name, Value string }

// Network is a named public network.
type Network struct {
	Name  string
	About string // a few words, for -h
	// proxy lists the flags that point flurry-proxy at the network.
	proxy []Flag
	// bridgeLines are torrc Bridge lines of the network's bridges, with
	// every argument the client needs (url=, fronts=, ice=, utls-imitate=):
	// tor hands them to flurry-client, which therefore needs no preset.
	bridgeLines []string
}

// ProxyFlags returns the flags that point flurry-proxy at the network.
func (n Network) ProxyFlags() []Flag { return n.proxy }

// BridgeLines returns torrc Bridge lines of the network's bridges.
func (n Network) BridgeLines() []string { return n.bridgeLines }

// torBridgeArgs are the arguments Tor's Snowflake bridge lines share.
const torBridgeArgs = "url=https://1098762253.rsc.cdn77.org/ fronts=www.cdn77.com,www.phpmyadmin.net " +
	"ice=stun:stun.antisip.com:3478,stun:stun.epygi.com:3478,stun:stun.uls.co.za:3478,stun:stun.voipgate.com:3478," +
	"stun:stun.mixvoip.com:3478,stun:stun.nextcloud.com:3478,stun:stun.bethesda.net:3478,stun:stun.nextcloud.com:443 " +
	"utls-imitate=hellorandomizedalpn"

// networks returns every preset.
func networks() []Network { return []Network{Tor()} }

// Tor returns Tor's Snowflake network. Its values are those of Snowflake
// v2.14.1: its proxy's defaults (proxy/lib and the proxy's
// -allowed-relay-hostname-pattern) and the bridge lines of its client/torrc
// (the interop module's TestNetworkPresetTor compares them).
func Tor() Network {
	return Network{
		Name:  "tor",
		About: "Tor's Snowflake network",
		proxy: []Flag{
			{"broker", "https://snowflake-broker.torproject.net/"},
			{"relay", "wss://snowflake.torproject.net/"},
			{"allowed-relay-hostname-pattern", "snowflake.torproject.net$"},
			{"stun", "stun:stun.l.google.com:19302,stun:stun.voip.blackberry.com:3478"},
			{"nat-probe-server", "https://snowflake-broker.torproject.net:8443/probe"},
		},
		bridgeLines: []string{
			// 192.0.2.x:80 are placeholders: tor only uses the fingerprint.
			"Bridge snowflake 192.0.2.3:80 2B280B23E1107BB62ABFC40DDCC8824814F80A72 fingerprint=2B280B23E1107BB62ABFC40DDCC8824814F80A72 " + torBridgeArgs,
			"Bridge snowflake 192.0.2.4:80 8838024498816A039FCBBAB14E6F40A0843051FA fingerprint=8838024498816A039FCBBAB14E6F40A0843051FA " + torBridgeArgs,
		},
	}
}

// Names lists the presets' names.
func Names() []string {
	var names []string
	for _, n := range networks() {
		names = append(names, n.Name)
	}
	return names
}

// Lookup returns the preset called name.
func Lookup(name string) (Network, error) {
	for _, n := range networks() {
		if n.Name == name {
			return n, nil
		}
	}
	return Network{}, fmt.Errorf("unknown network %q (known: %s)", name, strings.Join(Names(), ", "))
}

// Apply sets each of flags that fs's command line left unset; call it after
// fs.Parse. A flag given on the command line keeps its value: a preset only
// fills in defaults.
func Apply(fs *flag.FlagSet, flags []Flag) error {
	given := map[string]bool{}
	fs.Visit(func(f *flag.Flag) { given[f.Name] = true })
	for _, f := range flags {
		if given[f.Name] {
			continue
		}
		if err := fs.Set(f.Name, f.Value); err != nil {
			return fmt.Errorf("preset flag -%s: %w", f.Name, err)
		}
	}
	return nil
}

// ProxyUsage is a paragraph for flurry-proxy -h: each preset and the flags
// it stands for.
func ProxyUsage() string {
	var b strings.Builder
	for _, n := range networks() {
		fmt.Fprintf(&b, "  -network %s (%s) stands for\n", n.Name, n.About)
		for _, f := range n.proxy {
			fmt.Fprintf(&b, "    -%s %s\n", f.Name, f.Value)
		}
	}
	return b.String()
}
