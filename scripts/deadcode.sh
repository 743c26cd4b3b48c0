#!/usr/bin/env bash
# Fails when deadcode (golang.org/x/tools/cmd/deadcode, pinned, through go
# run) finds a function that no command, test or benchmark of the module can
# reach, except those named in scripts/deadcode-allow.txt. deadcode itself
# exits 0 whatever it finds, so this script is the gate.
# Run through `make lint`.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
DEADCODE_VERSION=${DEADCODE_VERSION:?set by the Makefile}
allow=scripts/deadcode-allow.txt

# One line per function: package path.Name, a tab, file:line:col.
found=$("$GO" run "golang.org/x/tools/cmd/deadcode@$DEADCODE_VERSION" -test \
	-f '{{range .Funcs}}{{$.Path}}.{{.Name}}{{"\t"}}{{.Position}}{{"\n"}}{{end}}' ./...)

# Drop the allowed names; warn about allowed names that are no longer dead,
# so that the list does not outlive its reasons.
dead=$(awk -F '\t' -v allow="$allow" '
	BEGIN {
		while ((getline line < allow) > 0) {
			sub(/[ \t]*#.*/, "", line)
			if (line != "") allowed[line] = 1
		}
	}
	$1 in allowed { seen[$1] = 1; next }
	NF { print $2 ": unreachable func: " $1 }
	END {
		for (name in allowed)
			if (!(name in seen)) print "warning: " allow ": " name " is reachable or gone; remove it from the list" > "/dev/stderr"
	}
' <<<"$found")

if [ -n "$dead" ]; then
	echo "deadcode: unreachable functions (delete them, or list them in $allow with the reason they stay):"
	echo "$dead"
	exit 1
fi
echo "deadcode: nothing unreachable"
