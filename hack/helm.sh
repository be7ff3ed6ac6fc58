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

tool=helm
folder=helm-$version
building="helm $version from helm.sh/helm/v4 (a cold build takes a few minutes)"

# built says whether $dir/helm is there and says it is $version: the
# version is stamped at build time, as helm's own Makefile does.
built() {
  [[ -x $dir/helm && $("$dir/helm" version --template '{{.Version}}' 2>/dev/null) == "$version" ]]
}

build() {
  rm -rf .tmp
  GOBIN="$dir/.tmp" go install -trimpath \
    -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$version -X helm.sh/helm/v4/internal/version.metadata=" \
    "helm.sh/helm/v4/cmd/helm@$version"
  mv .tmp/helm helm
  rmdir .tmp
}

source "$(dirname "${BASH_SOURCE[0]}")/lib/cached-build.sh"
cached_build "$@"
