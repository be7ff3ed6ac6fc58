#!/usr/bin/env bash
# Builds SeaweedFS's weed (an S3-compatible object store, Apache-2.0) from
# the Go module proxy, once per pinned version, into a cache folder outside
# the work tree (next to the control plane of hack/kube-binaries.sh):
#   ${PLATFORM_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/platform-operator}/seaweedfs-<version>
# The local cluster runs it as its object store, a simulation part.
#
# go install PACKAGE@VERSION refuses SeaweedFS: its go.mod has a replace
# directive. So the build runs in a throwaway module of its own that
# requires SeaweedFS and repeats that directive; our go.mod never sees it.
#
# Usage:
#   hack/seaweedfs.sh          build it when missing, then print the folder
#   hack/seaweedfs.sh --dir    print the folder without building
set -euo pipefail

# The object store's tests run this weed; bump it here (a pseudo-version:
# SeaweedFS's module publishes no semantic versions).
version=v0.0.0-20261109003541-7506e5f91cd6
# The replace directive of SeaweedFS's own go.mod at that version.
replace='github.com/tyler-smith/go-bip39 => github.com/cosmos/go-bip39 v1.0.0'

cache=${PLATFORM_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/platform-operator}
dir=$cache/seaweedfs-$version

if [[ ${1:-} == --dir ]]; then
  echo "$dir"
  exit 0
fi

die() {
  echo "seaweedfs: $*" >&2
  exit 1
}

built() {
  [[ -x $dir/weed && -f $dir/.version && $(cat "$dir/.version") == "$version" ]]
}

if ! built; then
  command -v go >/dev/null || die "the go command is not on PATH: install Go (https://go.dev/dl/)"
  mkdir -p "$dir"
  # One builder at a time per cache: a second caller waits, then finds weed built.
  exec 9>"$dir/.lock"
  flock 9
  if ! built; then
    echo "seaweedfs: building weed $version from github.com/seaweedfs/seaweedfs (a cold build takes many minutes)" >&2
    start=$SECONDS
    log=$dir/.build.log
    work=$(mktemp -d)
    trap 'rm -rf "$work"' EXIT
    printf 'module example.com/seaweedfs-build\n\ngo 1.26\n\nreplace %s\n' "$replace" >"$work/go.mod"
    # GOFLAGS cleared: the project's own flags (-mod=...) mean nothing outside it.
    if ! (cd "$work" && GOFLAGS= go get "github.com/seaweedfs/seaweedfs/weed@$version" &&
      GOFLAGS= go build -trimpath -ldflags "-s -w" -o "$dir/weed.tmp" github.com/seaweedfs/seaweedfs/weed) >"$log" 2>&1; then
      tail -n 20 "$log" >&2
      die "building weed $version failed; the whole log is $log"
    fi
    mv "$dir/weed.tmp" "$dir/weed"
    echo "$version" >"$dir/.version"
    rm -f "$log"
    echo "seaweedfs: built weed $version in $((SECONDS - start))s" >&2
  fi
fi
echo "$dir"
