#!/usr/bin/env bash
# The broker's HTTP server beside the libraries, in one run, on loopback:
# CPU per match (500 proxies, 50 clients) and memory per waiting proxy poll
# (IDLE polls, arriving at once) of one broker served by each server of
# internal/testkit/httpcmp (Broker.Serve, net/http, fasthttp), measured by
# flurry-loadgen broker, in ROUNDS alternating rounds, each on a fresh
# broker. Results (tables and JSON) go to $OUT; docs/performance.md,
# "Hand-written servers against libraries", shows the figures. Run through
# `make httpcmp`. BIN must hold flurry-loadgen and httpcmp-broker; another
# build of httpcmp-broker (an older tree) may be added with
# EXTRA=name=path, e.g. EXTRA=before=out/before/httpcmp-broker:flurry.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
OUT=${OUT:-out/httpcmp}
DURATION=${DURATION:-10s}
IDLE=${IDLE:-5000}
WINDOW=${WINDOW:-20s}
ROUNDS=${ROUNDS:-2}
SERVERS=${SERVERS:-flurry nethttp fasthttp}
STEPS=${STEPS:-matches idle} # which figures: matches (CPU per match), idle (memory per waiting poll)
ADDR=127.0.0.1:18190
mkdir -p "$OUT"
ulimit -n 65536 2>/dev/null || true

# shellcheck source=scripts/lib.sh
. scripts/lib.sh

# start NAME: a fresh broker served by NAME (a server of httpcmp, or
# name=path:server from EXTRA) on the next port; sets pid and addr.
port=18190
start() {
	local bin=$BIN/httpcmp-broker server=$1
	for e in ${EXTRA:-}; do
		if [ "${e%%=*}" = "$1" ]; then bin=${e#*=}; server=${bin##*:}; bin=${bin%:*}; fi
	done
	port=$((port + 1))
	addr=127.0.0.1:$port
	"$bin" -server "$server" -addr "$addr" >>"$OUT/$1.log" 2>&1 &
	pid=$!; pids+=("$pid")
	wait_port "$addr"
}

# matches NAME ROUND: matches/s and CPU per match on a fresh broker.
matches() {
	echo "== round $2, $1: matches/s and CPU per match ($(uptime | sed 's/.*load/load/'))"
	start "$1"
	"$BIN/flurry-loadgen" broker -quiet -url "http://$addr" -pid "$pid" -proxies 500 -clients 50 \
		-duration "$DURATION" -json "$OUT/$1-matches-$2.json" | tee "$OUT/$1-matches-$2.txt"
	kill "$pid"; wait "$pid" 2>/dev/null || true
}

# idle NAME ROUND: memory per waiting poll on a fresh broker.
idle() {
	echo "== round $2, $1: memory per waiting poll, $IDLE polls at once ($(uptime | sed 's/.*load/load/'))"
	start "$1"
	"$BIN/flurry-loadgen" broker -quiet -url "http://$addr" -pid "$pid" -proxies 0 -clients 0 -duration 1s \
		-idle-burst -idle-polls "$IDLE" -idle-window "$WINDOW" -json "$OUT/$1-idle-$2.json" |
		sed -n '/memory per waiting/,/^$/p' | tee "$OUT/$1-idle-$2.txt"
	kill "$pid"; wait "$pid" 2>/dev/null || true
}

all="$SERVERS"
for e in ${EXTRA:-}; do all="$all ${e%%=*}"; done
for round in $(seq "$ROUNDS"); do
	for s in $all; do
		for step in $STEPS; do "$step" "$s" "$round"; done
	done
done

echo "== summary ($(date -u '+%Y-%m-%d %H:%M UTC'))"
printf '%-14s %6s %10s %13s %17s\n' server round matches/s "CPU µs/match" "per waiting poll"
for round in $(seq "$ROUNDS"); do
	for s in $all; do
		m="- -"; k=-
		[ -f "$OUT/$s-matches-$round.txt" ] && m=$(awk '$1 == "clients" { getline; print $4, $NF }' "$OUT/$s-matches-$round.txt")
		[ -f "$OUT/$s-idle-$round.txt" ] && k=$(awk '/KiB/ { for (i = 1; i <= NF; i++) if ($i ~ /KiB/) { print $(i-1) " " $i; exit } }' "$OUT/$s-idle-$round.txt")
		printf '%-14s %6s %10s %13s %17s\n' "$s" "$round" "${m% *}" "${m#* }" "$k"
	done
done | tee "$OUT/summary.txt"
