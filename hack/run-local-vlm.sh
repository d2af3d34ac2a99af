#!/usr/bin/env bash
# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
#
# The Hugging Face path of the operator, end to end, without a GPU: builds a tiny
# random Qwen2.5-VL on this machine, trains it with LoRA on the CPU through the
# operator on a local cluster (espo local: a real API server, the controller, a process
# node), its answers sampled by the vLLM rollout engine where the engine's environment
# is installed (hack/setup-python.sh --engine; make test builds it), exports the best
# checkpoint as a Hugging Face folder, and loads that folder with transformers and
# peft, as the README shows. "make run-local-vlm" runs it; a second run starts the job
# over. "bin/espo local down" stops the cluster. ESPO_LOCAL_VLM_ENGINE=huggingface
# leaves the engine out.
set -euo pipefail
cd "$(dirname "$0")/.."

python=$(hack/setup-python.sh | tail -n1)
cache=${XDG_CACHE_HOME:-$HOME/.cache}/espo-operator/local-vlm
state=${ESPO_LOCAL_STATE_DIR:-${XDG_STATE_HOME:-$HOME/.local/state}/espo-operator/local}
model=$cache/qwen2_5_vl-tiny
if [ ! -f "$model/config.json" ]; then
  (cd trainer/worker/torch && "$python" -m tests.random_models "$model" --arch qwen2_5_vl)
fi
# The worker's code (and its side of the rollout engine), outside the folders a pod mounts: the process node reads a path
# under /tmp as the pod's own /tmp, and a checkout may be there.
rm -rf "$cache/code" && mkdir -p "$cache/code" &&
  cp -R trainer/worker/torch/espo_worker trainer/worker/torch/espo_engine "$cache/code/"

bin/espo local up --state-dir "$state" --sample ""
kc=(kubectl --kubeconfig "$state/kubeconfig")
"${kc[@]}" apply -f hack/local-vlm/claims.yaml
"${kc[@]}" delete espojob local-vlm --ignore-not-found --wait
rm -rf "$state/node/pvc/default/local-vlm-checkpoints/local-vlm" # another run's checkpoints would be refused
# spec.model.rollout: the vLLM engine on the CPU (hack/local-vlm/rollout-vllm.yaml,
# which TestNewcomerVLMJob fills in too) where its environment is built
engine_python= rollout="{engine: huggingface}"
if [ "${ESPO_LOCAL_VLM_ENGINE:-vllm}" != vllm ]; then
  echo "sampling with the model's own generate (ESPO_LOCAL_VLM_ENGINE=${ESPO_LOCAL_VLM_ENGINE})"
elif engine_python=$(hack/setup-python.sh --engine --if-cached 2>/dev/null | tail -n1); then
  rollout=$(cat hack/local-vlm/rollout-vllm.yaml)
  echo "sampling with the vLLM engine ($engine_python)"
else
  engine_python=
  echo "sampling with the model's own generate (no engine environment: hack/setup-python.sh --engine builds it)"
fi
job=$cache/job.yaml
sed -e "s|\${MODEL}|$model|g" -e "s|\${PYTHON}|$python|g" -e "s|\${PYTHONPATH}|$cache/code|g" \
  -e "s|\${ROLLOUT}|$rollout|g" -e "s|\${ENGINE_PYTHON}|$engine_python|g" hack/local-vlm/job.yaml >"$job"
bin/espo local up --state-dir "$state" --sample "$job"

export_dir=$state/node/pvc/default/local-vlm-models/local-vlm
echo
"${kc[@]}" get espojob local-vlm -o jsonpath='sampled by: {.spec.model.rollout.engine} (samplerMismatch {.status.training.samplerMismatch}){"\n"}exported: {.status.training.export}{"\n"}'
ls "$export_dir"
cat <<PY
Load it elsewhere, with transformers and peft alone:

    from transformers import AutoModelForImageTextToText; from peft import PeftModel
    base = AutoModelForImageTextToText.from_pretrained("$model", local_files_only=True)
    model = PeftModel.from_pretrained(base, "$export_dir", local_files_only=True)
PY
"$python" - "$model" "$export_dir" <<'PY'
import sys
from transformers import AutoModelForImageTextToText; from peft import PeftModel
base = AutoModelForImageTextToText.from_pretrained(sys.argv[1], local_files_only=True)
model = PeftModel.from_pretrained(base, sys.argv[2], local_files_only=True)
print("loaded:", type(model.get_base_model()).__name__, "with the adapter of", sys.argv[2])
PY
