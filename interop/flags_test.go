package interop

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/flurrypt/flurry/demo"
)

// differentFlags lists Snowflake flags that a Flurry binary deliberately
// does not accept, each with its reason (docs/interop.md repeats them).
// Empty today: every Snowflake flag is accepted.
var differentFlags = map[string]map[string]string{}

// TestFlagParity reads the flags each Snowflake binary prints with -h and
// checks that its Flurry counterpart lists every one, so that a Snowflake
// command line runs unchanged (the chains run them).
func TestFlagParity(t *testing.T) {
	fl, sf := binaries(t)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	for _, pair := range []struct{ role, snowflake, flurry string }{
		{"broker", sf.Broker, fl.Broker},
		{"proxy", sf.Proxy, fl.Proxy},
		{"client", sf.Client, fl.Client},
		{"server", sf.Server, fl.Relay},
	} {
		t.Run(pair.role, func(t *testing.T) {
			theirs, ours := demo.ListFlags(ctx, pair.snowflake), demo.ListFlags(ctx, pair.flurry)
			if len(theirs) == 0 || len(ours) == 0 {
				t.Fatalf("no flags listed: Snowflake %d, Flurry %d", len(theirs), len(ours))
			}
			var missing []string
			for name := range theirs {
				if _, deliberate := differentFlags[pair.role][name]; !ours[name] && !deliberate {
					missing = append(missing, "-"+name)
				}
			}
			slices.Sort(missing)
			if len(missing) > 0 {
				t.Errorf("Flurry's %s lacks Snowflake's %v", pair.role, missing)
			}
		})
	}
}
