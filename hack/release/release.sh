#!/usr/bin/env bash
# Writes a release's files, pinned to VERSION, into OUT (default bin/release/):
#
#   install.yaml, install-namespaced.yaml   deploy/ and deploy/overlays/namespaced rendered with the
#                                           operator's image REPOSITORY:VERSION (OPERATOR_IMAGE too)
#   charts/platform-operator/               the Helm chart: Chart.yaml version VERSION without its v,
#                                           appVersion VERSION, values.yaml image.tag VERSION
#   platform-operator-X.Y.Z.tgz             the same chart as an archive, for helm install
#   platform-operator, kubectl-platform     the binaries (GOOS/GOARCH of the environment) printing VERSION
#   SHA256SUMS
#
# The committed deploy/ and charts/ are not touched: a copy of deploy/ is pinned and rendered by
# hack/gen-deploy -render and hack/gen-chart in a temporary folder, so make verify-generate stays clean.
#
# Usage: VERSION=v1.2.3 [IMAGE_REPOSITORY=registry.example.com/platform-operator] [OUT=DIR] hack/release/release.sh
# (make release VERSION=v1.2.3 runs it; release_test.go checks it).
set -euo pipefail

version=${VERSION:-}
if ! [[ $version =~ ^v(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z.-]+)?$ ]]; then
  echo "release: VERSION must be vMAJOR.MINOR.PATCH[-PRERELEASE], such as v0.2.0 (got '$version')" >&2
  exit 2
fi
out=${OUT:-bin/release}
cd "$(dirname "$0")/../.."

deployment=deploy/base/deployment.yaml
current=$(sed -n 's/^ *image: *\([^ ]*\) *$/\1/p' "$deployment")
if [[ $(wc -l <<<"$current") -ne 1 || -z $current ]]; then
  echo "release: $deployment should name one image, the operator's; it names: $current" >&2
  exit 1
fi
repository=${IMAGE_REPOSITORY:-${current%:*}}
image=$repository:$version
# The image is written twice: the container's, and OPERATOR_IMAGE.
if [[ $(grep -cF "$current" "$deployment") -ne 2 ]]; then
  echo "release: $deployment should name $current twice (image, OPERATOR_IMAGE)" >&2
  exit 1
fi

work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
cp -r deploy "$work/deploy"
sed -i "s|$current|$image|g" "$work/$deployment"
go run ./hack/gen-deploy -render -root "$work"
go run ./hack/gen-chart -root "$work"

# Replaced whole, so a folder that holds anything but an earlier release is refused.
if [[ -e $out && -n $(ls -A "$out") && ! -f $out/SHA256SUMS ]]; then
  echo "release: $out is not empty and holds no earlier release (no SHA256SUMS): refusing to replace it" >&2
  exit 1
fi
rm -rf "$out"
mkdir -p "$out/charts"
cp "$work/deploy/install.yaml" "$out/install.yaml"
cp "$work/deploy/overlays/namespaced/install.yaml" "$out/install-namespaced.yaml"
cp -r "$work/charts/platform-operator" "$out/charts/"
tar -C "$work/charts" --sort=name --owner=0 --group=0 --numeric-owner --mtime=@0 \
  -czf "$out/platform-operator-${version#v}.tgz" platform-operator

ldflags="-s -w -X example.com/platform-operator/internal/platform.Version=$version"
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/platform-operator" ./cmd/platform-operator
CGO_ENABLED=0 go build -trimpath -ldflags "$ldflags" -o "$out/kubectl-platform" ./cmd/kubectl-platform

(cd "$out" && find . -type f ! -name SHA256SUMS | sort | sed 's|^\./||' | xargs sha256sum > SHA256SUMS)
echo "release: $version, image $image, in $out/"
