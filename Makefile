# Flurry: the single entry point for building, testing and measuring.
# `make` (or `make help`) lists the targets.

GO        ?= go
# go.mod asks for Go 1.27.3 (README, "What a machine needs"). A machine
# starts on its own Go, which may be older or set to GOTOOLCHAIN=local (as
# Debian's is): name the release, and the go command fetches it from the Go
# module proxy once. The environment may override it.
GOTOOLCHAIN ?= go1.27.3
export GOTOOLCHAIN
BIN       ?= bin
PKGS      ?= ./...
FUZZTIME  ?= 10s
BENCHTIME ?= 1s
BENCHCOUNT ?= 1
STRESSCOUNT ?= 20
STATICCHECK_VERSION ?= v0.8.2
DEADCODE_VERSION ?= v0.52.0
GOVULNCHECK_VERSION ?= v1.9.0
# golang.org/x/vulndb carries the vulnerability database govulncheck reads
# (scripts/vulncheck.sh); a newer pin brings newer advisories.
VULNDB_VERSION ?= v0.0.0-20261105234957-e22db6528018

# Every main package lives in a cmd/ directory under its role. ($(shell)
# does not see exported variables before GNU make 4.4: name the toolchain.)
CMDS = $(shell GOTOOLCHAIN=$(GOTOOLCHAIN) $(GO) list -f '{{if eq .Name "main"}}{{.ImportPath}}{{end}}' $(PKGS))

.DEFAULT_GOAL := help
.PHONY: help demo build test fmt-check vet race stress bench-smoke bench loadtest clusterbench fuzz lint clean interop censorlab pathlab pathlab-failover snowflake-bins sidebyside httpcmp webproxy webproxy-test webproxy-sidebyside

help: ## List the targets
	@echo 'Flurry make targets:'
	@grep -hE '^[a-zA-Z_-]+:.*## ' $(MAKEFILE_LIST) | sort | awk 'BEGIN {FS = ":.*## "}; {printf "  %-12s %s\n", $$1, $$2}'
	@echo
	@echo 'Variables: FUZZTIME=$(FUZZTIME) (per fuzz target), BENCHTIME=$(BENCHTIME), BENCHCOUNT=$(BENCHCOUNT), STRESSCOUNT=$(STRESSCOUNT), PKGS=$(PKGS)'

demo: ## Run the whole system on loopback and download a 20 MiB file through it (no flags, no internet, no root)
	$(GO) run ./demo/cmd/flurry-demo

build: ## Build every cmd/* binary into ./bin (-trimpath, reproducible)
	@mkdir -p $(BIN)
	@if [ -n "$(strip $(CMDS))" ]; then \
		$(GO) build -trimpath -ldflags=-buildid= -o $(BIN)/ $(CMDS) && ls $(BIN); \
	else echo 'no commands yet'; fi

test: fmt-check vet lint race bench-smoke webproxy-test ## gofmt check, go vet, lint, go test -race, every benchmark once, allocation tests, the browser proxy's unit tests

fmt-check: ## Fail if any Go file is not gofmt-formatted
	@out=$$(gofmt -l $$(git ls-files -co --exclude-standard '*.go')); \
	if [ -n "$$out" ]; then echo "not gofmt-formatted:"; echo "$$out"; exit 1; fi

vet: ## go vet
	$(GO) vet $(PKGS)

race: ## go test -race
	$(GO) test -race -timeout 15m $(PKGS)

stress: ## Before a release (not in CI: hours): every package's tests with -race -count=STRESSCOUNT, to shake out rare failures
	$(GO) test -race -count=$(STRESSCOUNT) -timeout 3h $(PKGS)

bench-smoke: ## Run every benchmark once (-benchtime=1x, short sizes) so none can rot, and the allocation tests (without -race, which distorts them)
	FLURRY_BENCH_SMOKE=1 $(GO) test -run='Alloc' -bench=. -benchtime=1x -timeout 10m $(PKGS)

bench: ## Benchmarks with -benchmem; compare runs with benchstat (see below)
	$(GO) test -run='^$$' -bench=. -benchmem -benchtime=$(BENCHTIME) -count=$(BENCHCOUNT) $(PKGS)
	@echo
	@echo 'To compare two runs: make bench BENCHCOUNT=10 > old.txt; (change); make bench BENCHCOUNT=10 > new.txt;'
	@echo '  go run golang.org/x/perf/cmd/benchstat@latest old.txt new.txt'

loadtest: build ## A few minutes of flurry-loadgen against a real broker, relay and demo chain on loopback (results in out/)
	BIN=$(BIN) scripts/loadtest.sh

clusterbench: build ## flurry-loadgen against 1 and 3 brokers on NATS behind HAProxy, and NATS's cost per match (needs nats-server, haproxy; results in out/)
	BIN=$(BIN) scripts/clusterbench.sh

fuzz: ## Run each fuzz target for FUZZTIME (default 10s)
	@set -e; for pkg in $$($(GO) list $(PKGS)); do \
		for target in $$($(GO) test -list '^Fuzz' $$pkg | grep '^Fuzz' || true); do \
			echo "== $$pkg $$target ($(FUZZTIME))"; \
			$(GO) test -run='^$$' -fuzz="^$$target$$" -fuzztime=$(FUZZTIME) $$pkg; \
		done; \
	done

lint: ## staticcheck, deadcode, govulncheck (fails on vulnerable modules, warns on the standard library) and a go mod tidy check; pinned versions through go run
	$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) $(PKGS)
	GO=$(GO) DEADCODE_VERSION=$(DEADCODE_VERSION) scripts/deadcode.sh
	GO=$(GO) GOVULNCHECK_VERSION=$(GOVULNCHECK_VERSION) VULNDB_VERSION=$(VULNDB_VERSION) scripts/vulncheck.sh
	$(GO) mod tidy -diff
	cd interop && $(GO) mod tidy -diff

interop: ## Against Snowflake v2.14.1 built from its Go module: mixed chains, failover, differential and flag-parity tests (nested module interop/, see docs/interop.md)
	cd interop && $(GO) vet ./... && $(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./... && \
		$(GO) run ./cmd/snowflake-bins >/dev/null && $(GO) test -v -count=1 -timeout 15m -skip '^TestCensorLab(Switch|WebProxy)?$$' ./...

censorlab: ## Flurry and Snowflake v2.14.1 through each censor program of the network lab, client behind a user-space middlebox (root; matrix printed, JSON in out/censorlab.json; see docs/censorship.md)
	@mkdir -p out
	cd interop && $(GO) run ./cmd/snowflake-bins >/dev/null && \
		FLURRY_CENSORLAB_OUT=$(abspath out/censorlab.json) $(GO) test -v -count=1 -timeout 15m -parallel 8 -run '^TestCensorLab(Switch|WebProxy)?$$' .

pathlab: ## Snowflake v2.14.1, Flurry, the mixed chains and plain TCP side by side on the lab's path profiles (root; about 20 minutes; see docs/performance.md)
	cd interop && $(GO) run ./cmd/snowflake-bins >/dev/null && \
		FLURRY_PATHLAB=1 $(GO) test -v -count=1 -timeout 40m -run '^TestPathLab$$' .

pathlab-failover: ## The serving proxy SIGKILLed mid-download on each path profile: Snowflake v2.14.1's chain, Flurry's with max=1, max=1 and a standby, and max=2 (root; about 20 minutes; see docs/performance.md)
	cd interop && $(GO) run ./cmd/snowflake-bins >/dev/null && \
		FLURRY_PATHLAB=1 $(GO) test -v -count=1 -timeout 40m -run '^TestPathLabFailover$$' .

snowflake-bins: ## Build Snowflake v2.14.1's broker, proxy, client and server into DIR (default: the user's cache directory); reused while the Go version is the same
	cd interop && $(GO) run ./cmd/snowflake-bins $(if $(DIR),-o $(abspath $(DIR)))

sidebyside: ## Broker and relay memory and matches/s of Flurry and Snowflake v2.14.1 in one run (flurry-loadgen; results in out/sidebyside; PARTS="relayusers proxyusers" for the many-user runs)
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./broker/cmd/flurry-broker ./relay/cmd/flurry-relay ./proxy/cmd/flurry-proxy \
		./client/cmd/flurry-client ./loadgen/cmd/flurry-loadgen
	cd interop && $(GO) run ./cmd/snowflake-bins -o $(abspath out/snowflake-bin)
	BIN=$(BIN) SF=out/snowflake-bin scripts/sidebyside.sh

httpcmp: ## The broker's HTTP server beside net/http and fasthttp: CPU per match, memory per waiting poll (flurry-loadgen; results in out/httpcmp; the relay's WebSocket side: go test -bench . ./relay/internal/wsserver)
	@mkdir -p $(BIN)
	$(GO) build -o $(BIN)/ ./loadgen/cmd/flurry-loadgen ./internal/testkit/httpcmp/cmd/httpcmp-broker
	BIN=$(BIN) scripts/httpcmp.sh

.PHONY: release release-check package-check
release: ## Every release artifact into out/release/VERSION with SHA256SUMS: static binaries (every role for Linux amd64, arm64, armv7; client and proxy for Windows and macOS), Debian packages with man pages, container images, the compose file: make release VERSION=0.1.0 (docs/install.md)
	@test -n "$(VERSION)" || { echo 'usage: make release VERSION=0.1.0'; exit 2; }
	GO=$(GO) scripts/release.sh $(VERSION)

package-check: ## The release's packages for this machine's architecture: Debian packages linted, installed with dpkg and run; man pages; container images run with podman; compose file; all reproducible (root; packaging/, docs/install.md)
	GO=$(GO) GOVULNCHECK_VERSION=$(GOVULNCHECK_VERSION) VULNDB_VERSION=$(VULNDB_VERSION) scripts/vulncheck.sh packaging
	cd packaging && $(GO) mod tidy -diff && $(GO) vet ./... && \
		$(GO) run honnef.co/go/tools/cmd/staticcheck@$(STATICCHECK_VERSION) ./... && $(GO) test -count=1 -timeout 20m ./...

release-check: ## Reproducibility: one release binary built in two copies of the tree, the second with an empty build cache, must be identical
	GO=$(GO) scripts/release.sh -check

# The browser proxy (webproxy/, JavaScript, no npm dependencies): built for
# one network from webproxy/config.json, whose values these variables
# override. See docs/webproxy.md.
NODE ?= node
NPM  ?= npm
WEBPROXY_OUT ?= out/webproxy
webproxy: ## Build the browser proxy for a network: make webproxy BROKER=https://broker.example/ RELAY_PATTERN='relay.example$$' [RELAY=wss://… NATPROBE=https://… STUN=stun:…,stun:… CAPACITY=N] (extension, badge, test page in out/webproxy)
	cd webproxy && $(NPM) ci --ignore-scripts --no-audit --no-fund --silent
	$(NODE) webproxy/build.mjs -out $(WEBPROXY_OUT) $(if $(BROKER),-broker '$(BROKER)') \
		$(if $(RELAY_PATTERN),-relay-pattern '$(RELAY_PATTERN)') $(if $(RELAY),-relay '$(RELAY)') \
		$(if $(NATPROBE),-nat-probe '$(NATPROBE)') $(if $(STUN),-stun '$(STUN)') $(if $(CAPACITY),-capacity '$(CAPACITY)')

webproxy-test: ## The browser proxy's unit tests (node --test) and a syntax check of every file; the browser tests are in make interop
	cd webproxy && $(NPM) ci --ignore-scripts --no-audit --no-fund --silent
	cd webproxy && for f in build.mjs src/*.js src/*/*.js; do $(NODE) --check $$f || exit 1; done
	cd webproxy && $(NODE) --test test/

webproxy-sidebyside: ## Flurry's browser proxy beside Snowflake's (snowflake-webext's badge, built from its source in SNOWFLAKE_WEBEXT=DIR) in headless Chromium: first byte, MB/s, CPU per MB and memory of the browser (root; docs/webproxy.md)
	@test -n "$(SNOWFLAKE_WEBEXT)" || { echo 'usage: make webproxy-sidebyside SNOWFLAKE_WEBEXT=path/to/snowflake-webext'; exit 2; }
	cd interop && $(GO) run ./cmd/snowflake-bins >/dev/null && \
		FLURRY_SNOWFLAKE_WEBEXT=$(abspath $(SNOWFLAKE_WEBEXT)) $(GO) test -v -count=1 -timeout 20m -run '^TestWebProxySideBySide$$' .

clean: ## Remove build output and test caches
	rm -rf $(BIN) out
	$(GO) clean -testcache
