package chainproc

import (
	"fmt"
	"os"
	"slices"
	"strings"

	"github.com/flurrypt/flurry/loadgen/internal/measure"
)

// DistinctNames checks that implementation names are distinct words.
func DistinctNames(ims []Implementation) error {
	names := map[string]bool{}
	for _, im := range ims {
		if im.Name == "" || names[im.Name] || strings.ContainsAny(im.Name, "/ ") {
			return fmt.Errorf("%w: implementation names must be distinct words", measure.ErrInvalidConfig)
		}
		names[im.Name] = true
	}
	return nil
}

// Alternate returns the implementations in round's order: as given in
// even rounds, reversed in odd ones.
func Alternate(ims []Implementation, round int) []Implementation {
	order := slices.Clone(ims)
	if round%2 == 1 {
		slices.Reverse(order)
	}
	return order
}

// Chain roles, in the order a side-by-side run starts them.
const (
	RoleServer = "server"
	RoleBroker = "broker"
	RoleProxy  = "proxy"
	RoleClient = "client"
)

// Roles are the four processes of a chain.
var Roles = []string{RoleClient, RoleProxy, RoleServer, RoleBroker}

// Implementation names the four binaries of one implementation of the
// chain. Each is run with Snowflake v2.14.1's flag names and pluggable
// transport environment, so any implementation that accepts those runs.
type Implementation struct {
	Name                          string
	Broker, Proxy, Client, Server string
	// Env (KEY=VALUE) is set for each of its processes, over the load
	// generator's own environment: a runtime setting such as GOGC or
	// GODEBUG compared with the same binaries in one run.
	Env []string
}

// ImplementationFromPrefix finds PREFIX-broker, -proxy, -client and
// -server (or -relay, Flurry's name for it).
func ImplementationFromPrefix(name, prefix string) (Implementation, error) {
	im, err := ServerFromPrefix(name, prefix)
	if err != nil {
		return im, err
	}
	if im.Broker, err = findRole(prefix, "broker"); err != nil {
		return im, err
	}
	if im.Proxy, err = findRole(prefix, "proxy"); err != nil {
		return im, err
	}
	if im.Client, err = findRole(prefix, "client"); err != nil {
		return im, err
	}
	return im, nil
}

// ServerFromPrefix is an implementation of which only the server matters
// (RunRelayUsers): PREFIXserver or PREFIXrelay.
func ServerFromPrefix(name, prefix string) (Implementation, error) {
	im := Implementation{Name: name}
	var err error
	im.Server, err = findRole(prefix, "server", "relay")
	return im, err
}

// findRole returns the first of PREFIXrole that is an executable file.
func findRole(prefix string, roles ...string) (string, error) {
	for _, r := range roles {
		p := prefix + r
		if st, err := os.Stat(p); err == nil && !st.IsDir() && st.Mode()&0o111 != 0 {
			return p, nil
		}
	}
	return "", fmt.Errorf("%w: no executable %s%s", measure.ErrInvalidConfig, prefix, roles[0])
}
