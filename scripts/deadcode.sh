#!/usr/bin/env bash
# Fails when deadcode (golang.org/x/tools/cmd/deadcode, pinned, through go
# run) finds a function that nothing reaches, in two runs:
#
#   - tests: from the module's commands, tests and benchmarks (-test);
#   - commands: from the module's commands alone, so that code only tests
#     reach does not look alive. The test kits (internal/testkit/...) are
#     for tests only and are left out of this run.
#
# A name listed in scripts/deadcode-allow.txt stays in both runs, one
# listed in scripts/deadcode-allow-commands.txt in the second only; each
# line says why. deadcode itself exits 0 whatever it finds, so this script
# is the gate. Run through `make lint`.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
DEADCODE_VERSION=${DEADCODE_VERSION:?set by the Makefile}
format='{{range .Funcs}}{{$.Path}}.{{.Name}}{{"\t"}}{{.Position}}{{"\n"}}{{end}}'

# unreached RUN ALLOW...: the functions deadcode finds in RUN's output
# (one per line: package path.Name, a tab, file:line:col), less the
# allowed names; warns about allowed names that are no longer dead, so
# that the lists do not outlive their reasons.
unreached() {
	local found=$1
	shift
	awk -F '\t' -v allow="$*" '
		BEGIN {
			n = split(allow, files, " ")
			for (i = 1; i <= n; i++)
				while ((getline line < files[i]) > 0) {
					sub(/[ \t]*#.*/, "", line)
					if (line != "") { allowed[line] = 1; from[line] = files[i] }
				}
		}
		$1 in allowed { seen[$1] = 1; next }
		NF { print $2 ": unreachable func: " $1 }
		END {
			for (name in allowed)
				if (!(name in seen) && from[name] == files[n])
					print "warning: " files[n] ": " name " is reachable or gone; remove it from the list" > "/dev/stderr"
		}
	' <<<"$found"
}

tests=$("$GO" run "golang.org/x/tools/cmd/deadcode@$DEADCODE_VERSION" -test -f "$format" ./...)
commands=$("$GO" run "golang.org/x/tools/cmd/deadcode@$DEADCODE_VERSION" -f "$format" ./...)
commands=$(grep -v '^github.com/flurrypt/flurry/internal/testkit/' <<<"$commands" || true)

failed=0
dead=$(unreached "$tests" scripts/deadcode-allow.txt)
if [ -n "$dead" ]; then
	echo "deadcode: functions that no command, test or benchmark reaches (delete them, or list them in scripts/deadcode-allow.txt with the reason they stay):"
	echo "$dead"
	failed=1
fi
dead=$(unreached "$commands" scripts/deadcode-allow.txt scripts/deadcode-allow-commands.txt)
if [ -n "$dead" ]; then
	echo "deadcode: functions that only tests reach (move them to the tests or delete them, or list them in scripts/deadcode-allow-commands.txt with the reason they stay):"
	echo "$dead"
	failed=1
fi
if [ "$failed" = 0 ]; then
	echo "deadcode: nothing unreachable, from the tests or from the commands alone"
fi
exit "$failed"
