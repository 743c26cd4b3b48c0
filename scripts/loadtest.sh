#!/usr/bin/env bash
# A short load test (a few minutes) of a real broker, a real relay and the
# whole demo chain on loopback with flurry-loadgen; results go to out/ as
# JSON, tables and SVG plots.
# Run through `make loadtest`, which builds ./bin first. See
# docs/performance.md for what the figures mean and the longer runs.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
OUT=${OUT:-out}
BROKER_ADDR=${BROKER_ADDR:-127.0.0.1:18080}
RELAY_ADDR=${RELAY_ADDR:-127.0.0.1:18000}
TARGET_ADDR=${TARGET_ADDR:-127.0.0.1:18900}
DURATION=${DURATION:-10s}
mkdir -p "$OUT"

# shellcheck source=scripts/lib.sh
. scripts/lib.sh

echo "== broker: matches/s with 500 proxies at 1, 10, 50 clients; memory per waiting poll at 1000 and 5000"
# The simulated peers share one address: measure the broker, not its limits.
"$BIN/flurry-broker" -disable-tls -disable-geoip -addr "$BROKER_ADDR" -disable-rate-limits 2>"$OUT/broker.log" &
broker=$!; pids+=("$broker")
wait_port "$BROKER_ADDR"
"$BIN/flurry-loadgen" broker -url "http://$BROKER_ADDR" -pid "$broker" -proxies 500 -clients 1,10,50 \
	-duration "$DURATION" -idle-polls 1000,5000 -json "$OUT/broker.json" -svg "$OUT/broker.svg"
kill "$broker"

echo "== relay: memory per idle carrier at 1000, 5000, 10000; throughput with 4 carriers"
"$BIN/flurry-relay" -disable-tls -addr "$RELAY_ADDR" -forward "$TARGET_ADDR" -max-carriers-per-addr -1 2>"$OUT/relay.log" &
relay=$!; pids+=("$relay")
wait_port "$RELAY_ADDR"
"$BIN/flurry-loadgen" relay -url "ws://$RELAY_ADDR/" -pid "$relay" -carriers 1000,5000,10000 \
	-serve-target "$TARGET_ADDR" -throughput-carriers 4 -duration "$DURATION" \
	-json "$OUT/relay.json" -svg "$OUT/relay.svg"
kill "$relay"

echo "== chain: throughput and time to first byte through client -> proxy -> relay -> target (flurry-demo -hold)"
"$BIN/flurry-demo" -bin "$BIN" -hold -size 0 >"$OUT/demo.log" 2>&1 &
demo=$!; pids+=("$demo")
socks="" url=""
for _ in $(seq 300); do # at most 30 s for the chain to come up
	socks=$(sed -n 's/^ *SOCKS5 proxy *\([0-9.:]*\).*/\1/p' "$OUT/demo.log")
	url=$(sed -n 's/^ *target URL *\(http:[^ ]*\).*/\1/p' "$OUT/demo.log")
	[ -n "$socks" ] && [ -n "$url" ] && break
	kill -0 "$demo" 2>/dev/null || { cat "$OUT/demo.log" >&2; exit 1; }
	sleep 0.1
done
[ -n "$socks" ] || { echo "flurry-demo did not print its SOCKS address" >&2; cat "$OUT/demo.log" >&2; exit 1; }
"$BIN/flurry-loadgen" chain -socks "$socks" -url "$url" -requests 5 -concurrency 1 -json "$OUT/chain.json"
kill "$demo"
wait "$demo" 2>/dev/null || true
echo "results in $OUT/"
