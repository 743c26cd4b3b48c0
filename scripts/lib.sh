# Shared by the benchmark scripts (source it from the repository root):
# background processes the script adds to pids are killed when it exits,
# and wait_port waits for a server to listen.

pids=()

# stop_all: kill every process in pids and wait for them.
stop_all() {
	for pid in "${pids[@]}"; do kill "$pid" 2>/dev/null || true; done
	wait 2>/dev/null || true
	pids=()
}
trap stop_all EXIT INT TERM

# wait_port HOST:PORT: until something listens there (at most 10 s).
wait_port() {
	for _ in $(seq 100); do
		(exec 3<>"/dev/tcp/${1%:*}/${1##*:}") 2>/dev/null && return 0
		sleep 0.1
	done
	echo "nothing listens on $1" >&2
	return 1
}
