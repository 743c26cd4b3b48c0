#!/usr/bin/env bash
# The broker attacks of docs/security.md: for each of junk-offers and
# amp-flood, a fresh broker with its default limits, 20 s of honest load
# without the attack, then 20 s with 10 000 attack requests from one
# address. BROKER (default bin/flurry-broker) may name another build, for a
# comparison; results go to $OUT (default out/) as JSON.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
BROKER=${BROKER:-$BIN/flurry-broker}
OUT=${OUT:-out}
ADDR=${ADDR:-127.0.0.1:18481}
TAG=${TAG:-$(basename "$BROKER")}
mkdir -p "$OUT"
# shellcheck source=scripts/lib.sh
. scripts/lib.sh
for attack in junk-offers amp-flood; do
	"$BROKER" -disable-tls -disable-geoip -addr "$ADDR" 2>"$OUT/attack-$attack-$TAG-broker.log" &
	pids+=($!)
	wait_port "$ADDR"
	echo "== $attack against $BROKER"
	"$BIN/flurry-loadgen" attack "$attack" -url "http://$ADDR" -requests 10000 -attack-rate 520 -concurrency 64 \
		-proxies 50 -proxy-interval 1s -clients 20 -rate 20 -duration 20s -quiet -json "$OUT/attack-$attack-$TAG.json"
	stop_all
done
