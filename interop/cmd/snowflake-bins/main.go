// Command snowflake-bins builds Tor Snowflake v2.14.1's broker, proxy,
// client and server into a directory, from Snowflake's Go module with its
// own go.mod (so exactly as released), for side-by-side measurements and
// manual interop runs:
//
//	cd interop && go run ./cmd/snowflake-bins -o ../out/snowflake
//
// or `make snowflake-bins DIR=out/snowflake` from the repository root.
// A second run with the same Go version reuses the binaries.
package main

import (
	"context"
	"flag"
	"fmt"
	"os"
	"os/signal"

	"github.com/flurrypt/flurry/interop"
)

func main() {
	def, _ := interop.DefaultSnowflakeDir()
	out := flag.String("o", def, "directory to build the binaries into (default: the user's cache directory)")
	goCmd := flag.String("go", "go", "go command")
	flag.Parse()
	if *out == "" {
		fmt.Fprintln(os.Stderr, "snowflake-bins: -o is required (no user cache directory)")
		os.Exit(2)
	}
	ctx, stop := signal.NotifyContext(context.Background(), os.Interrupt)
	defer stop()
	bins, err := interop.BuildSnowflake(ctx, *goCmd, *out)
	if err != nil {
		fmt.Fprintln(os.Stderr, "snowflake-bins:", err)
		os.Exit(1)
	}
	fmt.Println(bins.Broker)
	fmt.Println(bins.Proxy)
	fmt.Println(bins.Client)
	fmt.Println(bins.Server)
}
