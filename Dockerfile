# syntax=docker/dockerfile:1
# The platform-operator image, for those who have Docker (BuildKit):
#
#   docker buildx build --platform linux/amd64,linux/arm64 \
#     --build-arg VERSION=$(git describe --tags --always --dirty) -t REGISTRY/platform-operator:TAG .
#
# Without Docker, `go run ./hack/image` builds an equivalent image.

# The builder runs on the build machine's platform and cross-compiles, which
# is much faster than compiling under emulation.
FROM --platform=$BUILDPLATFORM golang:1.26 AS builder
ARG TARGETOS TARGETARCH
ARG VERSION=dev
WORKDIR /src

# Dependencies first, so the layer stays cached while only sources change.
COPY go.mod go.sum ./
RUN --mount=type=cache,target=/go/pkg/mod go mod download

COPY . .
RUN --mount=type=cache,target=/go/pkg/mod \
    --mount=type=cache,target=/root/.cache/go-build \
    CGO_ENABLED=0 GOOS=$TARGETOS GOARCH=$TARGETARCH go build -trimpath \
      -ldflags "-s -w -X example.com/platform-operator/internal/platform.Version=${VERSION}" \
      -o /out/platform-operator ./cmd/platform-operator

# distroless/static: no shell or package manager, just CA certificates, tzdata
# and the nonroot user (65532).
FROM gcr.io/distroless/static:nonroot
COPY --from=builder /out/platform-operator /platform-operator
USER 65532:65532
ENTRYPOINT ["/platform-operator"]
