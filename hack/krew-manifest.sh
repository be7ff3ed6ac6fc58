#!/usr/bin/env bash
# Builds kubectl-platform for each platform of deploy/krew/platform.yaml
# into bin/krew/kubectl-platform_OS_ARCH.tar.gz and writes the filled-in
# manifest bin/krew/platform.yaml, for a release (URL: where the archives
# will be published) or a local `kubectl krew install --manifest ...
# --archive ...`.
#   VERSION=v0.1.0 URL=https://example.com/releases/v0.1.0 hack/krew-manifest.sh
set -euo pipefail
cd "$(dirname "$0")/.."
: "${VERSION:?set VERSION, such as v0.1.0 (krew wants a v-prefixed semantic version)}"
: "${URL:?set URL, where the archives are published}"
HOMEPAGE=${HOMEPAGE:-$URL}
out=bin/krew
mkdir -p "$out"
manifest=$(cat deploy/krew/platform.yaml)
for platform in linux/amd64 linux/arm64 darwin/amd64 darwin/arm64; do
  os=${platform%/*} arch=${platform#*/}
  dir=$(mktemp -d)
  CGO_ENABLED=0 GOOS=$os GOARCH=$arch go build -trimpath -ldflags "-s -w -X example.com/platform-operator/internal/platform.Version=$VERSION" -o "$dir/kubectl-platform" ./cmd/kubectl-platform
  archive=$out/kubectl-platform_${os}_${arch}.tar.gz
  # Reproducible archives: fixed owner, order and time.
  tar --owner=0 --group=0 --numeric-owner --mtime=@0 --sort=name -C "$dir" -czf "$archive" kubectl-platform
  rm -r "$dir"
  sum=$(sha256sum "$archive" | cut -d' ' -f1)
  manifest=${manifest//"\${SHA256_${os}_${arch}}"/$sum}
  echo "$archive $sum"
done
manifest=${manifest//'${VERSION}'/$VERSION}
manifest=${manifest//'${URL}'/$URL}
manifest=${manifest//'${HOMEPAGE}'/$HOMEPAGE}
printf '%s\n' "$manifest" > "$out/platform.yaml"
echo "$out/platform.yaml"
