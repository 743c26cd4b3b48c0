#!/usr/bin/env bash
# Release builds (docs/install.md, "Building a release").
#
#   scripts/release.sh VERSION [TARGET...]   (make release VERSION=0.1.0)
#       Static binaries (CGO_ENABLED=0, -trimpath, no build ID, version and
#       commit stamped with -ldflags -X) into out/release/VERSION/ (OUT
#       overrides), with LICENSE and SHA256SUMS. TARGET is os/arch[/arm],
#       optionally :flurry-<role> for one binary, e.g. linux/arm/7:flurry-proxy;
#       default: every target below. The commit is HEAD's; a tree with
#       uncommitted changes is refused unless ALLOW_DIRTY=1 (commit marked
#       -dirty). COMMIT=<hash> sets it without git (a copy of the tree).
#
#   scripts/release.sh -check                (make release-check)
#       Reproducibility: copies the tree into two temporary directories of
#       different names and builds CHECK_TARGETS (default: the relay for
#       linux/amd64) in each, the second time with an empty build cache, so
#       that nothing is reused; the binaries must be identical byte for byte.
#
# A full release (no TARGET) also compiles the client library for
# android/arm64 (a check only: docs/install.md says why no Android executable
# is built) and makes, from the Linux binaries (packaging/), a Debian package
# per role and architecture with its manual page, a container image archive
# of the proxy, relay and broker, and the proxy's compose file.
set -euo pipefail
cd "$(dirname "$0")/.."
GO=${GO:-go}
module=github.com/flurrypt/flurry

# Targets and the roles built for each.
all_roles="broker proxy client relay natprobe"
targets=(
	"linux/amd64 $all_roles"
	"linux/arm64 $all_roles"
	"linux/arm/7 $all_roles"
	"windows/amd64 client proxy"
	"windows/arm64 client proxy"
	"darwin/amd64 client proxy"
	"darwin/arm64 client proxy"
)

die() { echo "release.sh: $*" >&2; exit 1; }

# roles_of OS/ARCH[/ARM]: the roles the table builds for that target.
roles_of() {
	local t
	for t in "${targets[@]}"; do
		if [ "${t%% *}" = "$1" ]; then echo "${t#* }"; return; fi
	done
	die "unknown target $1 (known: $(for t in "${targets[@]}"; do printf '%s ' "${t%% *}"; done))"
}

# build_target OUT VERSION COMMIT OS/ARCH[/ARM] ROLE...: one go build for the
# target's roles, each binary renamed flurry-ROLE-VERSION-OS-ARCH[vARM][.exe].
build_target() {
	local out=$1 version=$2 commit=$3 target=$4
	shift 4
	local os arch arm=""
	IFS=/ read -r os arch arm <<<"$target"
	local pkgs=() role
	for role in "$@"; do pkgs+=("./$role/cmd/flurry-$role"); done
	local tmp
	tmp=$(mktemp -d "$out/.build.XXXXXX")
	# Everything that changes code generation is set, not inherited: a
	# GOAMD64, GOARM64 or GOFLAGS in the caller's environment must not change
	# the bytes. -buildvcs=false: the commit is stamped instead, so a copy of
	# the tree without .git builds the same binary.
	env CGO_ENABLED=0 GOOS="$os" GOARCH="$arch" GOARM="${arm:-7}" GOAMD64=v1 GOARM64=v8.0 \
		GOEXPERIMENT= GOFLAGS=-mod=readonly \
		"$GO" build -trimpath -buildvcs=false \
		-ldflags="-s -w -buildid= -X $module/common/version.Version=$version -X $module/common/version.Commit=$commit" \
		-o "$tmp/" "${pkgs[@]}"
	local suffix="$os-$arch${arm:+v$arm}" ext=""
	[ "$os" = windows ] && ext=.exe
	for role in "$@"; do
		mv "$tmp/flurry-$role$ext" "$out/flurry-$role-$version-$suffix$ext"
	done
	rmdir "$tmp"
}

release() {
	local version=${1#v}
	shift
	[[ $version =~ ^[0-9]+\.[0-9]+\.[0-9]+(-[0-9A-Za-z.-]+)?$ ]] ||
		die "VERSION must be MAJOR.MINOR.PATCH[-PRERELEASE], got '${version}'"
	local commit=${COMMIT:-}
	if [ -z "$commit" ]; then
		commit=$(git rev-parse HEAD) || die "no git: set COMMIT"
		if [ -n "$(git status --porcelain --untracked-files=no)" ]; then
			[ "${ALLOW_DIRTY:-}" = 1 ] || die "uncommitted changes: commit them, or ALLOW_DIRTY=1 for a test build"
			commit+=-dirty
		fi
	fi
	local out=${OUT:-out/release/$version}
	rm -rf "$out"
	mkdir -p "$out"
	local start=$SECONDS
	echo "release $version, commit $commit, $("$GO" version)" >&2
	local spec target roles
	if [ $# -eq 0 ]; then
		for spec in "${targets[@]}"; do set -- "$@" "${spec%% *}"; done
		local android=1
	fi
	for spec in "$@"; do
		target=${spec%%:*}
		roles=$(roles_of "$target")
		if [[ $spec == *:* ]]; then
			local want=${spec#*:}
			want=${want#flurry-}
			[[ " $roles " == *" $want "* ]] || die "$want is not built for $target"
			roles=$want
		fi
		echo "  $target: $roles" >&2
		# shellcheck disable=SC2086 # roles is a word list
		build_target "$out" "$version" "$commit" "$target" $roles
	done
	if [ -n "${android:-}" ]; then
		# The client library must compile for Android apps; an executable
		# does not link there without -checklinkname=0 (docs/install.md).
		echo "  android/arm64: client library (compile check)" >&2
		# shellcheck disable=SC2046 # one package per word
		env CGO_ENABLED=0 GOOS=android GOARCH=arm64 GOFLAGS=-mod=readonly "$GO" build -trimpath \
			$("$GO" list ./client/... | grep -v /cmd/)
	fi
	if [ -n "${android:-}" ]; then
		# Debian packages, container images and the compose file, from the
		# Linux binaries (packaging/, its own module: nfpm and
		# go-containerregistry stay out of the product's go.mod). Their files
		# carry the commit's time, so that they are reproducible too.
		echo "  Debian packages, container images" >&2
		local epoch=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 0)}
		local abs
		abs=$(cd "$out" && pwd)
		(cd packaging && GOFLAGS=-mod=readonly "$GO" run ./cmd/flurry-package -version "$version" -dir "$abs" \
			-mtime "$epoch" -commit "$commit")
	fi
	cp LICENSE "$out/"
	(cd "$out" && sha256sum -- * >SHA256SUMS)
	echo "release $version: $(($(ls "$out" | wc -l) - 1)) files in $out ($((SECONDS - start)) s)" >&2
}

# check: the reproducibility check (see the top).
check() {
	local targets_to_check=${CHECK_TARGETS:-linux/amd64:flurry-relay}
	tmp=$(mktemp -d) # global: the trap runs after check returns
	trap 'rm -rf "$tmp"' EXIT
	mkdir -p "$tmp/first-tree" "$tmp/second/tree-at-another-path" "$tmp/cache"
	local commit
	commit=$(git rev-parse HEAD 2>/dev/null || echo 0000000000000000000000000000000000000000)
	local dir
	for dir in "$tmp/first-tree" "$tmp/second/tree-at-another-path"; do
		git ls-files -co --exclude-standard -z | grep -zv '^out/\|^bin/' | xargs -0 cp --parents -t "$dir"
	done
	# shellcheck disable=SC2086 # a list of targets
	(cd "$tmp/first-tree" && COMMIT=$commit OUT="$tmp/out1" GO=$GO scripts/release.sh 0.0.0-check $targets_to_check)
	# shellcheck disable=SC2086
	(cd "$tmp/second/tree-at-another-path" && GOCACHE="$tmp/cache" COMMIT=$commit OUT="$tmp/out2" GO=$GO \
		scripts/release.sh 0.0.0-check $targets_to_check)
	if ! diff "$tmp/out1/SHA256SUMS" "$tmp/out2/SHA256SUMS"; then
		die "not reproducible: the two builds differ (above)"
	fi
	echo "reproducible: $targets_to_check built in two trees, the second with an empty build cache:" >&2
	grep -v LICENSE "$tmp/out1/SHA256SUMS" >&2
}

case "${1:-}" in
"") die "usage: $0 VERSION [OS/ARCH[/ARM][:flurry-ROLE]...] | $0 -check" ;;
-check) check ;;
*) release "$@" ;;
esac
