#!/usr/bin/env bash
# The connection flood of docs/security.md: a broker with its defaults
# (-max-conns-per-addr 512) started under a file limit of NOFILE (default
# 2048) descriptors, 20 s of honest load without the flood, then 20 s while
# four addresses (127.0.0.2-5) each try to hold 600 connections. BROKER
# (default bin/flurry-broker) may name another build; results go to $OUT
# (default out/) as JSON. Extra arguments go to flurry-loadgen.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
BROKER=${BROKER:-$BIN/flurry-broker}
OUT=${OUT:-out}
ADDR=${ADDR:-127.0.0.1:18482}
METRICS=${METRICS:-127.0.0.1:18483}
NOFILE=${NOFILE:-2048}
TAG=${TAG:-$(basename "$BROKER")}
mkdir -p "$OUT"
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
prlimit --nofile="$NOFILE:$NOFILE" "$BROKER" -disable-tls -disable-geoip -addr "$ADDR" -metrics-addr "$METRICS" \
	2>"$OUT/attack-connflood-$TAG-broker.log" &
pids+=($!)
wait_port "$ADDR"
echo "== connflood against $BROKER (RLIMIT_NOFILE $NOFILE)"
"$BIN/flurry-loadgen" attack connflood -url "http://$ADDR" -metrics-url "http://$METRICS/prometheus" \
	-conns-per-addr 600 -proxies 50 -proxy-interval 1s -clients 20 -rate 20 -duration 20s \
	-quiet -json "$OUT/attack-connflood-$TAG.json" "$@"
