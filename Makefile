# espo-operator: every install step the project needs is a target here; a fresh machine
# needs Go, gcc, Python 3.11 and kubectl only.

VERSION ?= $(shell git describe --tags --always --dirty 2>/dev/null || echo dev)
COMMIT  ?= $(shell git rev-parse --short HEAD 2>/dev/null || echo unknown)
LDFLAGS := -X main.version=$(VERSION) -X main.commit=$(COMMIT)
BIN     ?= bin/espo
# Build tags of espo. grpcnotrace leaves out gRPC's golang.org/x/net/trace, whose debug
# pages (never served) link text/template's reflective method calls, and those make the
# linker keep every exported method of the binary. The Dockerfile builds with
# TAGS=grpcnotrace,nolocal: the image has no local mode, which links virtual-kubelet and
# go-cmp, reflective too (docs/architecture.md, Scale).
TAGS    ?= grpcnotrace
CONTROLLER_GEN := go tool controller-gen
STATICCHECK    := go tool staticcheck
# Debian's protoc (hack/setup-debian.sh) with the Go plugins pinned as tools in go.mod.
PROTOC         ?= protoc
PROTO_GO_OPTS  := module=github.com/espo-dev/espo-operator

.PHONY: all
all: build

##@ Build

.PHONY: build
build: ## Build the espo binary into bin/.
	CGO_ENABLED=0 go build -trimpath -tags $(TAGS) -ldflags "$(LDFLAGS)" -o $(BIN) ./cmd/espo

##@ Code generation

# The PyTorch worker's protocol: the FileDescriptorSet of worker.proto, from which
# espo_worker/protocol.py builds its message classes at import time (no generated Python
# code, so the worker runs on every protobuf runtime from 3.21 on).
PY_PB_DIR := trainer/worker/torch/espo_worker

.PHONY: generate
generate: ## Generate deepcopy code, the worker and environment protocols' Go gRPC code and the worker's descriptor set for Python.
	$(CONTROLLER_GEN) object:headerFile=hack/boilerplate.go.txt paths=./api/...
	@command -v $(PROTOC) >/dev/null || { echo "generate: $(PROTOC) not found: apt-get install protobuf-compiler (or run hack/setup-debian.sh)" >&2; exit 1; }
	$(PROTOC) -I trainer/workerpb --plugin=protoc-gen-go="$$(go tool -n protoc-gen-go)" --plugin=protoc-gen-go-grpc="$$(go tool -n protoc-gen-go-grpc)" \
		--go_out=. --go_opt=$(PROTO_GO_OPTS) --go-grpc_out=. --go-grpc_opt=$(PROTO_GO_OPTS) trainer/workerpb/worker.proto
	$(PROTOC) -I trainer/workerpb --include_imports --descriptor_set_out=$(PY_PB_DIR)/worker.binpb trainer/workerpb/worker.proto
	$(PROTOC) -I trainer/environmentpb --plugin=protoc-gen-go="$$(go tool -n protoc-gen-go)" --plugin=protoc-gen-go-grpc="$$(go tool -n protoc-gen-go-grpc)" \
		--go_out=. --go_opt=$(PROTO_GO_OPTS) --go-grpc_out=. --go-grpc_opt=$(PROTO_GO_OPTS) trainer/environmentpb/environment.proto

# The RBAC markers live in controllers/ (the controller's ClusterRole) and, apart from
# them, in controllers/kueue (its Kueue integration's, which only a manager run with
# --kueue needs: config/kueue, the chart's kueue.enabled); markers elsewhere are not read.
.PHONY: manifests
manifests: ## Generate the CRD and RBAC manifests (and copy them into the Helm chart).
	$(CONTROLLER_GEN) crd paths=./api/... output:crd:artifacts:config=config/crd/bases
	$(CONTROLLER_GEN) rbac:roleName=espo-manager-role paths=./controllers output:rbac:artifacts:config=config/rbac
	$(CONTROLLER_GEN) rbac:roleName=espo-kueue-role paths=./controllers/kueue output:rbac:artifacts:config=config/kueue
	go run ./hack/crd-descriptions config/crd/bases/*.yaml
	rm -rf charts/espo-operator/crds && mkdir -p charts/espo-operator/crds charts/espo-operator/files
	cp config/crd/bases/*.yaml charts/espo-operator/crds/
	cp config/rbac/role.yaml charts/espo-operator/files/manager-role.yaml
	cp config/kueue/role.yaml charts/espo-operator/files/kueue-role.yaml
	cp config/policy/trainer_status_policy.yaml charts/espo-operator/files/trainer-status-policy.yaml

.PHONY: verify
verify: ## Fail when generated files are stale, or code is unformatted, fails vet or fails ruff (the PyTorch worker's Python).
	hack/verify-generated.sh
	@test -z "$$(gofmt -l $$(git ls-files '*.go'))" || { gofmt -l $$(git ls-files '*.go'); echo "gofmt: files above need formatting"; exit 1; }
	go vet ./...
	cd trainer/worker/torch && "$$($(CURDIR)/hack/setup-python.sh)" -m ruff check --no-cache .

.PHONY: lock-python
lock-python: ## Rewrite the PyTorch worker's locks (requirements*.txt) from its pyproject.toml.
	hack/lock-python.sh

.PHONY: lint
lint: ## Run staticcheck (built from the module proxy, pinned in go.mod).
	$(STATICCHECK) ./...

##@ Test

.PHONY: envtest
envtest: ## Build (once, cached) the test control plane and print its folder.
	@hack/setup-envtest.sh

.PHONY: test
test: ## Run every test, building the test control plane first if needed.
	hack/test.sh

.PHONY: run-local
run-local: build ## Run the sample job on a local cluster (etcd, kube-apiserver, a process node); "bin/espo local down" stops it.
	$(BIN) local up

.PHONY: run-local-vlm
run-local-vlm: build ## Train a tiny random Qwen2.5-VL with LoRA on the CPU through a local cluster, export it, load it with transformers and peft.
	hack/run-local-vlm.sh
