#!/usr/bin/env bash
# govulncheck (pinned, through go run) against a local copy of the Go
# vulnerability database, judged by internal/cmd/vulngate: a vulnerable
# module with a fixed version fails, the standard library warns with the Go
# release that fixes it.
#
# The public database (vuln.go.dev) cannot be reached from every machine that
# runs `make lint`, but the Go module proxy serves golang.org/x/vulndb, which
# carries the database as OSV files; its cmd/indexdb turns them into the
# layout govulncheck reads. The result is cached per vulndb version in
# VULNDB_CACHE (default: the user's cache directory), so only the first run
# pays for it.
# Run through `make lint`.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
GOVULNCHECK_VERSION=${GOVULNCHECK_VERSION:?set by the Makefile}
VULNDB_VERSION=${VULNDB_VERSION:?set by the Makefile}
VULNDB_CACHE=${VULNDB_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/flurry-vulndb}

db=$VULNDB_CACHE/$VULNDB_VERSION
if [ ! -f "$db/index/db.json" ]; then
	src=$("$GO" mod download -json "golang.org/x/vulndb@$VULNDB_VERSION" |
		sed -n 's/^[[:space:]]*"Dir": "\(.*\)",\{0,1\}$/\1/p')
	if [ ! -d "$src/data/osv" ]; then
		echo "vulncheck: no data/osv in golang.org/x/vulndb@$VULNDB_VERSION ($src)" >&2
		exit 1
	fi
	echo "vulncheck: building the vulnerability database from golang.org/x/vulndb@$VULNDB_VERSION"
	mkdir -p "$VULNDB_CACHE"
	tmp=$(mktemp -d "$VULNDB_CACHE/build.XXXXXX")
	trap 'rm -rf "$tmp"' EXIT
	"$GO" run "golang.org/x/vulndb/cmd/indexdb@$VULNDB_VERSION" -vulns "$src/data/osv" -out "$tmp/db"
	rm -rf "$db"
	mv "$tmp/db" "$db"
fi

# The module to check: the main one, or the one in directory $1 (make
# package-check checks packaging/).
dbpath=$(cd "$db" && pwd)
(cd "${1:-.}" && "$GO" run "golang.org/x/vuln/cmd/govulncheck@$GOVULNCHECK_VERSION" \
	-db "file://$dbpath" -format json ./...) |
	"$GO" run ./internal/cmd/vulngate
