# The platform operator. `make help` lists the targets.

SHELL := bash
.SHELLFLAGS := -euo pipefail -c
.DEFAULT_GOAL := help

# Where hack/kube-binaries.sh puts the control plane (outside the work tree).
KUBE_BIN_DIR = $(shell hack/kube-binaries.sh --dir)
# Where hack/helm.sh puts helm, which the chart's tests run.
HELM_BIN_DIR = $(shell hack/helm.sh --dir)
# Where hack/prometheus.sh puts promtool and prometheus: the alert rules' unit tests run
# promtool, the end-to-end test of the alerts a real Prometheus server.
PROMETHEUS_BIN_DIR = $(shell hack/prometheus.sh --dir)
# Where hack/seaweedfs.sh puts weed, the local cluster's object store.
SEAWEEDFS_BIN_DIR = $(shell hack/seaweedfs.sh --dir)
# Where PostgreSQL 15's programs are, once hack/postgres.sh has installed them.
POSTGRES_BIN_DIR = $(shell hack/postgres.sh --dir 2>/dev/null)
VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
LDFLAGS := -s -w -X example.com/platform-operator/internal/platform.Version=$(VERSION)
IMAGE ?= example.com/platform-operator:$(VERSION)
# The image repository make release pins install.yaml and the chart to (unset: deploy/'s).
IMAGE_REPOSITORY ?=
# Test timeout: the suite starts several local clusters.
TEST_TIMEOUT ?= 45m

.PHONY: help
help: ## List the targets.
	@awk 'BEGIN {FS = ":.*## "} /^[a-zA-Z_-]+:.*## / {printf "  %-16s %s\n", $$1, $$2}' $(MAKEFILE_LIST)

.PHONY: kube-binaries
kube-binaries: ## Build the local control plane (etcd, kube-apiserver, ..., kwok) once per version.
	@hack/kube-binaries.sh >/dev/null

.PHONY: helm
helm: ## Build helm (helm.sh/helm/v4) from the Go module proxy once per version: the chart's tests run it.
	@hack/helm.sh >/dev/null

.PHONY: prometheus
prometheus: ## Build prometheus and promtool (github.com/prometheus/prometheus) from the Go module proxy once per version: the alert rules' tests run them.
	@hack/prometheus.sh >/dev/null

.PHONY: seaweedfs
seaweedfs: ## Build SeaweedFS's weed (an S3-compatible store) from the Go module proxy once per version: the local cluster's object store.
	@hack/seaweedfs.sh >/dev/null

.PHONY: postgres
postgres: ## Install PostgreSQL 15 (apt-get) when missing: the instance manager's tests run it.
	@hack/postgres.sh >/dev/null

# Where generated files live; verify-generate compares them before and after.
GENERATED := api deploy docs charts

.PHONY: generate
generate: ## Regenerate deepcopy code, deploy/ (CRDs, RBAC, components, install.yaml), the Helm chart from it and docs/ (API references).
	go tool controller-gen object:headerFile=hack/boilerplate.go.txt paths=./api/...
	go run ./hack/gen-deploy
	go run ./hack/gen-chart
	go run ./hack/gen-apidoc -components deploy/components -out docs

.PHONY: verify-generate
verify-generate: ## Fail when generated code or manifests are stale (regenerating them).
	@before=$$(find $(GENERATED) -type f | sort | xargs sha256sum); \
	$(MAKE) --no-print-directory generate >/dev/null; \
	after=$$(find $(GENERATED) -type f | sort | xargs sha256sum); \
	if [ "$$before" != "$$after" ]; then \
		echo "Generated files were stale and have been regenerated; review and commit:"; \
		diff <(echo "$$before") <(echo "$$after") | grep '^>' | awk '{print "  " $$3}'; exit 1; \
	fi

.PHONY: fmt-check
fmt-check: ## Fail on unformatted Go code.
	@files=$$(gofmt -l $$(git ls-files '*.go')); if [ -n "$$files" ]; then echo "gofmt needed: $$files"; exit 1; fi

.PHONY: vet
vet: ## go vet every package.
	go vet ./...

.PHONY: build
build: ## Build bin/platform-operator and the kubectl plugin bin/kubectl-platform.
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/platform-operator ./cmd/platform-operator
	CGO_ENABLED=0 go build -trimpath -ldflags '$(LDFLAGS)' -o bin/kubectl-platform ./cmd/kubectl-platform

.PHONY: krew
krew: ## Build kubectl-platform's archives and krew manifest into bin/krew/ (VERSION=v… URL=… of the release).
	hack/krew-manifest.sh

.PHONY: release
release: ## Write install.yaml, the Helm chart and the binaries pinned to VERSION=vX.Y.Z (image IMAGE_REPOSITORY:VERSION) into bin/release/; committed files untouched.
	VERSION=$(VERSION) IMAGE_REPOSITORY=$(IMAGE_REPOSITORY) hack/release/release.sh

.PHONY: tools
tools: ## Build or install what the tests run (control plane, helm, Prometheus, object store, PostgreSQL), side by side.
	@$(MAKE) --no-print-directory -j4 kube-binaries helm prometheus seaweedfs postgres

.PHONY: test
test: tools fmt-check vet verify-generate ## Run the whole test suite: unit, envtest, PostgreSQL, Helm chart, local cluster, end-to-end, reliability.
	KUBE_BIN_DIR=$(KUBE_BIN_DIR) KUBEBUILDER_ASSETS=$(KUBE_BIN_DIR) POSTGRES_BIN_DIR=$(POSTGRES_BIN_DIR) HELM_BIN_DIR=$(HELM_BIN_DIR) \
		PROMETHEUS_BIN_DIR=$(PROMETHEUS_BIN_DIR) SEAWEEDFS_BIN_DIR=$(SEAWEEDFS_BIN_DIR) go test -timeout $(TEST_TIMEOUT) -count=1 $$(go list ./... | grep -v /test/reliability)
	@# The reliability scenarios time failovers and outages against lease
	@# deadlines: they get the machine to themselves, not two cores shared
	@# with the end-to-end tests.
	KUBE_BIN_DIR=$(KUBE_BIN_DIR) go test -timeout $(TEST_TIMEOUT) -count=1 ./test/reliability/

.PHONY: test-reliability
test-reliability: kube-binaries ## Run only the reliability scenarios (make test runs them too).
	KUBE_BIN_DIR=$(KUBE_BIN_DIR) go test -timeout 30m -count=1 -v ./test/reliability/

.PHONY: test-unit
test-unit: ## Run only the tests that need no API server.
	go test -count=1 -short ./...

.PHONY: cluster
cluster: kube-binaries seaweedfs bin/localcluster ## Run the local cluster until Ctrl-C; prints how to point kubectl at it.
	KUBE_BIN_DIR=$(KUBE_BIN_DIR) SEAWEEDFS_BIN_DIR=$(SEAWEEDFS_BIN_DIR) bin/localcluster

.PHONY: run
run: bin/localcluster ## Run the operator on the local cluster with its own ServiceAccount, apply examples/, until Ctrl-C.
	@$(MAKE) --no-print-directory -j3 kube-binaries seaweedfs build
	KUBE_BIN_DIR=$(KUBE_BIN_DIR) SEAWEEDFS_BIN_DIR=$(SEAWEEDFS_BIN_DIR) bin/localcluster -operator bin/platform-operator -apply examples

# Run as a binary, not with go run, so that it is make's own child and stops
# when make does.
.PHONY: bin/localcluster
bin/localcluster:
	go build -o bin/localcluster ./cmd/localcluster

.PHONY: image
image: ## Build a multi-arch (amd64, arm64) OCI image without Docker into bin/image/.
	go run ./hack/image -version $(VERSION) -ldflags '$(LDFLAGS)' -out bin/image -tag $(IMAGE)

# PEER_KOPF=DIR adds the tutorial's kopf operator doing the same work, from the
# kopf installation DIR (docs/performance.md says how to set one up).
# BENCH_FLAGS: -large adds N=5000, -heap-profile the operator's heap after
# each burst, -scenarios and -operator-args choose what runs (see test/bench).
.PHONY: bench
bench: kube-binaries build ## Run the benchmarks (N = 100, 1000) on the local cluster against the raw-client ceiling; writes test/bench/results/.
	KUBE_BIN_DIR=$(KUBE_BIN_DIR) go run ./test/bench -operator bin/platform-operator -out test/bench/results $(if $(PEER_KOPF),-peer-kopf $(PEER_KOPF)) $(BENCH_FLAGS)

# BENCH_FLAGS here: -pg-tries the PostgresCluster's tries, -scale-n and
# -scale-large the Ns of the scale scenarios, -scale-window their schedule
# window, -rounds and -idle the Tenants' rounds and idle window, -scenarios
# one of them (see test/bench).
.PHONY: bench-scale
bench-scale: kube-binaries postgres build ## Run the PostgresCluster (issue 29) and platform-scale (Tenants, BackupJobs; issue 31) benchmarks; writes test/bench/results/{postgres,scale}/.
	KUBE_BIN_DIR=$(KUBE_BIN_DIR) POSTGRES_BIN_DIR=$(POSTGRES_BIN_DIR) go run ./test/bench -operator bin/platform-operator -out test/bench/results -scenarios postgres,scale $(BENCH_FLAGS)

# Database throughput (issue 54): pgbench on a PostgresCluster next to a
# primary and two standbys set up by hand in the same run. BENCH_FLAGS here:
# -pgbench-duration, -pgbench-scale, -pgbench-rounds (see test/bench).
.PHONY: bench-pgbench
bench-pgbench: kube-binaries postgres build ## Run the pgbench benchmark, ours next to PostgreSQL set up by hand (issue 54); writes test/bench/results/pgbench/.
	KUBE_BIN_DIR=$(KUBE_BIN_DIR) POSTGRES_BIN_DIR=$(POSTGRES_BIN_DIR) go run ./test/bench -operator bin/platform-operator -out test/bench/results -scenarios pgbench $(BENCH_FLAGS)

# WAL archiving to an object store (issue 51), on this machine without a
# cluster: weed and one PostgreSQL in a temporary folder, archive
# throughput under pgbench next to plain uploads, restore time next to
# pg_basebackup. BENCH_FLAGS here: -scale, -duration, -insert-mib,
# -clients, -jobs, -keep (see test/bench/archive).
.PHONY: bench-archive
bench-archive: seaweedfs postgres build ## Run the WAL archive benchmark (issue 51); writes test/bench/results/archive/.
	SEAWEEDFS_BIN_DIR=$(SEAWEEDFS_BIN_DIR) POSTGRES_BIN_DIR=$(POSTGRES_BIN_DIR) go run ./test/bench/archive -operator bin/platform-operator -out test/bench/results/archive $(BENCH_FLAGS)

# The long fault-injection run (issue 49; make test runs a short one):
# FAULTS faults of FAULT_KINDS (default: every kind, test/e2e/faults)
# drawn from SEED (default: drawn and printed), none injected after
# FAULTS_BUDGET. docs/fault-injection.md says what it checks.
FAULTS ?= 300
FAULTS_BUDGET ?= 4h
.PHONY: faults
faults: kube-binaries postgres ## Run the long fault-injection run (FAULTS=300 SEED=... FAULT_KINDS=...); writes test/bench/results/faults/.
	KUBE_BIN_DIR=$(KUBE_BIN_DIR) POSTGRES_BIN_DIR=$(POSTGRES_BIN_DIR) \
		go test -timeout 5h -count=1 -v -run '^TestPostgresFaultInjection$$' ./test/e2e/ \
		-faults.count=$(FAULTS) -faults.seed=$(or $(SEED),0) -faults.kinds=$(or $(FAULT_KINDS),all) \
		-faults.budget=$(FAULTS_BUDGET) -faults.out=$(CURDIR)/test/bench/results/faults/$(if $(SEED),seed-$(SEED),latest)-n$(FAULTS).json

.PHONY: fuzz
fuzz: ## Fuzz the child builders and the BackupJob templates' checks for FUZZTIME each (default 2m).
	go test ./internal/controller/website -run '^$$' -fuzz FuzzChildren -fuzztime $${FUZZTIME:-2m}
	go test ./internal/controller/backupjob -run '^$$' -fuzz FuzzJobTemplate -fuzztime $${FUZZTIME:-2m}
