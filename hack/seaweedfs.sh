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

tool=seaweedfs
folder=seaweedfs-$version
building="weed $version from github.com/seaweedfs/seaweedfs (a cold build takes many minutes)"

built() {
  [[ -x $dir/weed && -f $dir/.version && $(cat "$dir/.version") == "$version" ]]
}

build() {
  # build runs in a subshell of its own: its EXIT trap fires when it ends.
  work=$(mktemp -d)
  trap 'rm -rf "$work"' EXIT
  printf 'module example.com/seaweedfs-build\n\ngo 1.26\n\nreplace %s\n' "$replace" >"$work/go.mod"
  (cd "$work" && go get "github.com/seaweedfs/seaweedfs/weed@$version" &&
    go build -trimpath -ldflags "-s -w" -o "$dir/weed.tmp" github.com/seaweedfs/seaweedfs/weed)
  mv weed.tmp weed
  echo "$version" >.version
}

source "$(dirname "${BASH_SOURCE[0]}")/lib/cached-build.sh"
cached_build "$@"
