#!/usr/bin/env bash
# Builds the servers the end-to-end tests run -- kube-apiserver, etcd and
# kube-scheduler -- from source, with the versions pinned in hack/tools/go.mod.
# Nothing is downloaded except Go modules.
#
# Binaries go to ${SCHEDQ_BIN:-$HOME/.cache/schedq/bin}. A binary is rebuilt
# only when it is missing or its stamp file (<name>.stamp, a hash of
# hack/tools/go.mod, hack/tools/go.sum, the Go version and the target
# platform) differs. The last line of output is the bin directory, so
#
#   export SCHEDQ_BIN="$(hack/build-servers.sh | tail -n 1)"
#
# works. Options (environment):
#   SCHEDQ_BIN     where to put the binaries (default $HOME/.cache/schedq/bin)
#   SCHEDQ_REBUILD=1  rebuild even if the stamps match
#   CGO_ENABLED    default 0, so no C compiler is needed
#
# Arguments: the binaries to build (default: kube-apiserver etcd kube-scheduler).
set -euo pipefail

# Braces: bash reads the whole script before running any of it, so editing
# or checking out this file during a long build cannot derail the build.
{

die() {
	echo "build-servers: error: $*" >&2
	exit 1
}

here="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
tools="$here/tools"
bin="${SCHEDQ_BIN:-${HOME:?HOME is not set; set SCHEDQ_BIN}/.cache/schedq/bin}"

command -v go >/dev/null 2>&1 || die "go is not on PATH"
[[ -f "$tools/go.mod" && -f "$tools/go.sum" ]] || die "missing $tools/go.mod or go.sum"

mkdir -p "$bin" || die "cannot create $bin"
bin="$(cd "$bin" && pwd)"

# The tools module is deliberately not in go.work: build it on its own.
export GOWORK=off
export CGO_ENABLED="${CGO_ENABLED:-0}"

hash_cmd() {
	if command -v sha256sum >/dev/null 2>&1; then
		sha256sum | cut -d' ' -f1
	elif command -v shasum >/dev/null 2>&1; then
		shasum -a 256 | cut -d' ' -f1
	else
		# Last resort: cksum is in POSIX.
		cksum | tr ' ' '-'
	fi
}

goversion="$(go env GOVERSION)"
goos="$(go env GOOS)"
goarch="$(go env GOARCH)"
stamp="$(cat "$tools/go.mod" "$tools/go.sum" | hash_cmd) $goversion $goos/$goarch cgo=$CGO_ENABLED"

# Versions reported by the Kubernetes binaries (otherwise "v0.0.0-master").
k8s_version="$(cd "$tools" && go list -m -f '{{.Version}}' k8s.io/kubernetes)" ||
	die "cannot resolve k8s.io/kubernetes in $tools/go.mod (run: cd hack/tools && GOWORK=off go mod download)"
k8s_minor="${k8s_version#v*.}"
k8s_minor="${k8s_minor%%.*}"
k8s_major="${k8s_version#v}"
k8s_major="${k8s_major%%.*}"
k8s_ldflags="-s -w"
for kv in "gitVersion=$k8s_version" "gitMajor=$k8s_major" "gitMinor=$k8s_minor" "gitTreeState=clean"; do
	k8s_ldflags+=" -X k8s.io/component-base/version.$kv"
done

pkg_of() {
	case "$1" in
	kube-apiserver) echo k8s.io/kubernetes/cmd/kube-apiserver ;;
	kube-scheduler) echo k8s.io/kubernetes/cmd/kube-scheduler ;;
	etcd) echo go.etcd.io/etcd/server/v3 ;;
	*) die "unknown binary '$1' (known: kube-apiserver etcd kube-scheduler)" ;;
	esac
}

build_one() {
	local name="$1" pkg out ldflags start
	pkg="$(pkg_of "$name")"
	out="$bin/$name"
	if [[ "${SCHEDQ_REBUILD:-0}" != 1 && -x "$out" && -f "$out.stamp" && "$(cat "$out.stamp")" == "$stamp" ]]; then
		echo "build-servers: $name is up to date ($out)" >&2
		return 0
	fi
	ldflags="-s -w"
	[[ "$name" == kube-* ]] && ldflags="$k8s_ldflags"
	echo "build-servers: building $name from $pkg (a cold build takes minutes) ..." >&2
	start=$SECONDS
	rm -f "$out.stamp"
	# Build to a temporary name so an interrupted build never leaves a
	# half-written binary that looks usable.
	if ! (cd "$tools" && go build -trimpath -ldflags "$ldflags" -o "$out.tmp.$$" "$pkg"); then
		rm -f "$out.tmp.$$"
		die "go build of $name ($pkg) failed; see the compiler output above"
	fi
	mv -f "$out.tmp.$$" "$out"
	printf '%s\n' "$stamp" >"$out.stamp"
	echo "build-servers: built $name in $((SECONDS - start))s" >&2
}

names=("$@")
[[ ${#names[@]} -gt 0 ]] || names=(kube-apiserver etcd kube-scheduler)
for name in "${names[@]}"; do
	pkg_of "$name" >/dev/null || exit 1
done
# One at a time: each build already uses every core and ~2 GB of memory.
for name in "${names[@]}"; do
	build_one "$name"
done

echo "$bin"

exit 0
}
