#!/usr/bin/env bash
# flurry-loadgen broker against a cluster of brokers on loopback: a
# nats-server, N brokers joined through it (-nats) and HAProxy in front
# (round robin, health checks on /healthz), for N = 1 and 3; then the cost
# of NATS per match (proxies at one instance, clients at another).
# Needs Debian's nats-server and haproxy. Run through `make clusterbench`
# (which builds ./bin first). Results in out/cluster-*.json; figures in
# docs/cluster.md.
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${BIN:-bin}
OUT=${OUT:-out}
DURATION=${DURATION:-10s}
PROXIES=${PROXIES:-300}
CLIENTS=${CLIENTS:-30}
NATS_ADDR=127.0.0.1:14222
LB_ADDR=127.0.0.1:18180
mkdir -p "$OUT"

# shellcheck source=scripts/lib.sh
. scripts/lib.sh

# metric URL SERIES: the sum of one series' values (0 if absent).
metric() {
	curl -s "$1" | awk -v s="$2" 'index($0, s) == 1 { sum += $NF } END { print sum + 0 }'
}

# start N: nats-server, N brokers on 127.0.0.1:1819x (their operator
# listeners, /prometheus, on 127.0.0.1:1829x), HAProxy on LB_ADDR.
start() {
	local n=$1 servers=""
	printf 'listen: "%s"\n' "$NATS_ADDR" >"$OUT/cluster-nats.conf"
	/usr/sbin/nats-server -c "$OUT/cluster-nats.conf" 2>"$OUT/cluster-nats.log" &
	pids+=($!)
	wait_port "$NATS_ADDR"
	for i in $(seq "$n"); do
		"$BIN/flurry-broker" -disable-tls -addr "127.0.0.1:1819$i" -metrics-addr "127.0.0.1:1829$i" -disable-geoip -disable-rate-limits \
			-nats "nats://$NATS_ADDR" -instance "broker$i" 2>"$OUT/cluster-broker$i.log" &
		pids+=($!)
		wait_port "127.0.0.1:1819$i"
		servers+="  server broker$i 127.0.0.1:1819$i check"$'\n'
	done
	cat >"$OUT/cluster-haproxy.cfg" <<CFG
global
  maxconn 2000
defaults
  mode http
  timeout connect 2s
  timeout client 30s
  timeout server 30s
  retries 2
  option redispatch
frontend brokers
  bind $LB_ADDR
  default_backend brokers
backend brokers
  balance roundrobin
  option httpchk GET /healthz
  http-check expect status 200
  default-server inter 500ms fall 2 rise 2
$servers
CFG
	/usr/sbin/haproxy -db -f "$OUT/cluster-haproxy.cfg" 2>"$OUT/cluster-haproxy.log" &
	pids+=($!)
	wait_port "$LB_ADDR"
	sleep 2 # HAProxy's first health checks (rise 2, inter 500ms)
}

# crossed N: matches that crossed instances, summed over the brokers.
crossed() {
	local sum=0
	for i in $(seq "$1"); do
		v=$(metric "http://127.0.0.1:1829$i/prometheus" "flurry_broker_cluster_requests_total{instance=\"broker$i\",result=\"matched\"}")
		sum=$(awk -v a="$sum" -v b="$v" 'BEGIN { print a + b }')
	done
	echo "$sum"
}

for n in 1 3; do
	echo "== $n instance(s) behind HAProxy: $PROXIES proxies, $CLIENTS clients, $DURATION"
	start "$n"
	checks=$(seq -s, -f "http://127.0.0.1:1829%g/prometheus" "$n")
	"$BIN/flurry-loadgen" broker -url "http://$LB_ADDR" -proxies "$PROXIES" -clients "$CLIENTS" \
		-duration "$DURATION" -check-urls "$checks" -json "$OUT/cluster-$n.json"
	echo "matches that crossed instances: $(crossed "$n")"
	stop_all
done

echo "== NATS per match: 3 instances; proxies at broker1, clients at broker1 (local) then at broker2 (every match crosses)"
start 3
"$BIN/flurry-loadgen" broker -url "http://127.0.0.1:18191" -proxies "$PROXIES" -clients "$CLIENTS" \
	-duration "$DURATION" -json "$OUT/cluster-local.json"
"$BIN/flurry-loadgen" broker -url "http://127.0.0.1:18191" -client-url "http://127.0.0.1:18192" \
	-proxies "$PROXIES" -clients "$CLIENTS" -duration "$DURATION" -json "$OUT/cluster-cross.json"
echo "matches that crossed instances: $(crossed 3)"
stop_all
