#!/usr/bin/env bash
# Flurry and Snowflake v2.14.1 side by side, in one run, on loopback:
# broker memory per waiting proxy poll (arriving in batches, and all at
# once) and matches per second, relay memory per idle carrier, each
# measured by flurry-loadgen against Flurry's binary and then Snowflake's
# (built from Snowflake's Go module by `make snowflake-bins`). Both relays
# run as tor would run them (managed pluggable-transport server, TOR_PT_*
# environment). Results (tables and JSON) go to $OUT. Run through
# `make sidebyside`; docs/performance.md shows the figures. The chain
# figures (MB/s, CPU per MB per process) come from `make interop`, whose
# matrix runs both implementations in one run. PARTS=relayusers and
# PARTS=proxyusers run flurry-loadgen's many-user modes, both
# implementations alternating in one command (section "Many users"; the
# proxy part needs root for its network namespace, and the binaries of all
# four roles in $BIN).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
SF=${SF:?SF must name the directory of the Snowflake binaries (make snowflake-bins DIR=...)}
OUT=${OUT:-out/sidebyside}
DURATION=${DURATION:-10s}
IDLE=${IDLE:-1000,5000,15000,19000} # waiting polls, in batches of 250, on one broker
BURSTS=${BURSTS:-1000 5000 15000 19000} # polls arriving at once; each process needs as many open files
WINDOW=${WINDOW:-20s} # broker memory is sampled over two proxy holds: waves of returning polls included
PARTS=${PARTS:-broker relay} # which parts to run: broker relay relayusers proxyusers
ROUNDS=${ROUNDS:-2} # relayusers, proxyusers: runs per implementation and step, alternating
mkdir -p "$OUT"
ulimit -n 65536 2>/dev/null || true

# shellcheck source=scripts/lib.sh
. scripts/lib.sh

# Flurry's broker runs without rate limits, as Snowflake's has none: with
# them, its per-address and global limits (5 and 1 000 client offers per
# second) would be what is measured.
broker_flags() { # name
	if [ "$1" = flurry ]; then echo -disable-tls -disable-geoip -disable-rate-limits; else echo -disable-tls -disable-geoip; fi
}

broker() { # name binary addr
	echo "== $1 broker: memory per waiting poll at $IDLE (in batches)"
	# shellcheck disable=SC2046
	"$2" $(broker_flags "$1") -addr "$3" >"$OUT/$1-broker.log" 2>&1 &
	local pid=$!; pids+=("$pid")
	wait_port "$3"
	"$BIN/flurry-loadgen" broker -quiet -url "http://$3" -pid "$pid" -proxies 0 -clients 0 -duration 1s \
		-idle-polls "$IDLE" -idle-window "$WINDOW" -json "$OUT/$1-broker.json" | sed -n '/memory per waiting/,/^$/p' | tee "$OUT/$1-broker.txt"
	kill "$pid"
}

# On a fresh broker at another port: the idle polls' closed connections
# (tens of thousands in TIME_WAIT) would take the ephemeral ports that
# brokers closing their connections need.
broker_matches() { # name binary addr
	echo "== $1 broker: matches/s with 500 proxies at 50 clients"
	# shellcheck disable=SC2046
	"$2" $(broker_flags "$1") -addr "$3" >"$OUT/$1-broker-matches.log" 2>&1 &
	local pid=$!; pids+=("$pid")
	wait_port "$3"
	"$BIN/flurry-loadgen" broker -quiet -url "http://$3" -pid "$pid" -proxies 500 -clients 50 \
		-duration "$DURATION" -json "$OUT/$1-broker-matches.json" | tee "$OUT/$1-broker-matches.txt"
	kill "$pid"
}

broker_burst() { # name binary addr polls
	echo "== $1 broker: memory per waiting poll, $4 polls arriving at once on a fresh broker"
	# shellcheck disable=SC2046
	"$2" $(broker_flags "$1") -addr "$3" >"$OUT/$1-broker-burst$4.log" 2>&1 &
	local pid=$!; pids+=("$pid")
	wait_port "$3"
	"$BIN/flurry-loadgen" broker -quiet -url "http://$3" -pid "$pid" -proxies 0 -clients 0 -duration 1s \
		-idle-burst -idle-polls "$4" -idle-window "$WINDOW" -json "$OUT/$1-broker-burst$4.json" | sed -n '/memory per waiting/,/^$/p' | tee "$OUT/$1-broker-burst$4.txt"
	kill "$pid"
}

relay() { # name binary addr
	echo "== $1 relay (managed PT server): memory per idle carrier at 1000 and 5000"
	local state; state=$(mktemp -d)
	env -i PATH="$PATH" TOR_PT_MANAGED_TRANSPORT_VER=1 TOR_PT_SERVER_TRANSPORTS=snowflake \
		TOR_PT_SERVER_BINDADDR="snowflake-$3" TOR_PT_ORPORT=127.0.0.1:9 TOR_PT_STATE_LOCATION="$state" \
		"$2" -disable-tls >"$OUT/$1-relay.log" 2>&1 &
	local pid=$!; pids+=("$pid")
	wait_port "$3"
	"$BIN/flurry-loadgen" relay -quiet -url "ws://$3/" -pid "$pid" -carriers 1000,5000 \
		-throughput-carriers 0 -json "$OUT/$1-relay.json" | tee "$OUT/$1-relay.txt"
	kill "$pid"
	rm -rf "$state"
}

# matches_summary: both brokers' matches/s, CPU and CPU per match, from
# the step line of broker_matches' table (the last two columns are the
# broker's CPU and its CPU per match).
matches_summary() {
	echo "== brokers side by side, 500 proxies, 50 clients ($(uptime | sed 's/.*load/load/'))"
	printf '%-10s %10s %10s %14s\n' broker matches/s "CPU" "CPU µs/match"
	for name in flurry snowflake; do
		awk -v n="$name" '$1 == "clients" { getline; printf "%-10s %10s %10s %14s\n", n, $4, $(NF-1), $NF }' "$OUT/$name-broker-matches.txt"
	done | tee "$OUT/broker-matches-summary.txt"
}

if [[ " $PARTS " == *" broker "* ]]; then
	broker_matches flurry "$BIN/flurry-broker" 127.0.0.1:18182
	broker_matches snowflake "$SF/broker" 127.0.0.1:18183
	matches_summary
	broker flurry "$BIN/flurry-broker" 127.0.0.1:18180
	broker snowflake "$SF/broker" 127.0.0.1:18181
	for n in $BURSTS; do
		broker_burst flurry "$BIN/flurry-broker" 127.0.0.1:18180 "$n"
		broker_burst snowflake "$SF/broker" 127.0.0.1:18181 "$n"
	done
fi
if [[ " $PARTS " == *" relay "* ]]; then
	relay flurry "$BIN/flurry-relay" 127.0.0.1:18100
	relay snowflake "$SF/server" 127.0.0.1:18101
fi
if [[ " $PARTS " == *" relayusers "* ]]; then
	echo "== relays under 100, 500 and 2000 users, then 2000 mostly idle users"
	"$BIN/flurry-loadgen" relayusers -quiet -impl "snowflake=$SF/" -impl "flurry=$BIN/flurry-" \
		-users 100,500,2000 -rounds "$ROUNDS" -json "$OUT/relayusers.json" | tee "$OUT/relayusers.txt"
	"$BIN/flurry-loadgen" relayusers -quiet -impl "snowflake=$SF/" -impl "flurry=$BIN/flurry-" \
		-users 2000 -rounds "$ROUNDS" -bulk -1 -think 30s -duration 30s \
		-json "$OUT/relayusers-idle.json" | tee "$OUT/relayusers-idle.txt"
fi
if [[ " $PARTS " == *" proxyusers "* ]]; then
	echo "== one proxy serving 1, 10 and 50 users (a network namespace of its own; about an hour)"
	unshare -n sh -c 'ip link set lo up && exec "$0" "$@"' "$BIN/flurry-loadgen" proxyusers -quiet \
		-impl "snowflake=$SF/" -impl "flurry=$BIN/flurry-" -users 1,10,50 -rounds "$ROUNDS" \
		-max-time 3h -json "$OUT/proxyusers.json" | tee "$OUT/proxyusers.txt"
fi
