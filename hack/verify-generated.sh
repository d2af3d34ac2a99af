#!/usr/bin/env bash
# Fails when the committed generated files (deepcopy, CRDs, RBAC, gRPC stubs, the worker
# protocol's descriptor set) differ from what the generators produce now. It regenerates
# in a scratch copy of the tree, so the working tree is never touched.
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT

# The generated paths: keep in step with the generate and manifests targets.
generated=(api/v1alpha1/zz_generated.deepcopy.go config/crd/bases config/rbac/role.yaml config/kueue/role.yaml
  trainer/workerpb/worker.pb.go trainer/workerpb/worker_grpc.pb.go
  trainer/environmentpb/environment.pb.go trainer/environmentpb/environment_grpc.pb.go
  trainer/worker/torch/espo_worker/worker.binpb
  charts/espo-operator/crds charts/espo-operator/files/manager-role.yaml charts/espo-operator/files/kueue-role.yaml
  charts/espo-operator/files/trainer-status-policy.yaml)

tar -C "$repo_root" --exclude=./.git --exclude=./bin -cf - . | tar -C "$scratch" -xf -
make -s -C "$scratch" generate manifests >/dev/null

stale=0
for p in "${generated[@]}"; do
  [[ -e "$repo_root/$p" || -e "$scratch/$p" ]] || continue
  if ! diff -r "$repo_root/$p" "$scratch/$p" >/dev/null 2>&1; then
    echo "verify-generated: $p is stale; run 'make generate manifests' and commit the result" >&2
    diff -r "$repo_root/$p" "$scratch/$p" | head -40 >&2 || true
    stale=1
  fi
done
exit $stale
