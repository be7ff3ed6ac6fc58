#!/usr/bin/env bash
# Builds helm from the Go module proxy, once per pinned version, into a cache
# folder outside the work tree (next to the control plane of
# hack/kube-binaries.sh), so that fresh clones on the same machine reuse it:
#   ${PLATFORM_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/platform-operator}/helm-<version>
#
# helm is built with go install PACKAGE@VERSION, outside this module: its
# dependencies (k8s.io modules at other versions) never enter our go.mod.
#
# Usage:
#   hack/helm.sh          build it when missing, then print the folder
#   hack/helm.sh --dir    print the folder without building
set -euo pipefail

# The chart's tests run this helm; bump it here.
version=v4.3.2

cache=${PLATFORM_OPERATOR_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/platform-operator}
dir=$cache/helm-$version

if [[ ${1:-} == --dir ]]; then
  echo "$dir"
  exit 0
fi

die() {
  echo "helm: $*" >&2
  exit 1
}

# built says whether $dir/helm is there and says it is $version: the
# version is stamped at build time, as helm's own Makefile does.
built() {
  [[ -x $dir/helm && $("$dir/helm" version --template '{{.Version}}' 2>/dev/null) == "$version" ]]
}

if ! built; then
  command -v go >/dev/null || die "the go command is not on PATH: install Go (https://go.dev/dl/)"
  mkdir -p "$dir"
  # One builder at a time per cache: a second caller waits, then finds helm built.
  exec 9>"$dir/.lock"
  flock 9
  if ! built; then
    echo "helm: building helm $version from helm.sh/helm/v4 (a cold build takes a few minutes)" >&2
    start=$SECONDS
    log=$dir/.build.log
    # GOFLAGS cleared: the project's own flags (-mod=...) mean nothing outside it.
    if ! (cd "$dir" && GOFLAGS= GOBIN="$dir/.tmp" go install -trimpath \
      -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$version -X helm.sh/helm/v4/internal/version.metadata=" \
      "helm.sh/helm/v4/cmd/helm@$version") >"$log" 2>&1; then
      tail -n 20 "$log" >&2
      die "building helm $version failed; the whole log is $log"
    fi
    mv "$dir/.tmp/helm" "$dir/helm"
    rmdir "$dir/.tmp"
    rm -f "$log"
    echo "helm: built helm $version in $((SECONDS - start))s" >&2
  fi
fi
echo "$dir"
