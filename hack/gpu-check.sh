#!/usr/bin/env bash
# The PyTorch worker on a GPU, in one go (issue 10, item 4). Run from the repository root
# on a machine with CUDA, PyTorch, transformers, peft, grpcio and Pillow, and with a
# prebuilt espo binary (no Go needed there): build it beforehand with
#   CGO_ENABLED=0 go build -trimpath -o bin/espo ./cmd/espo     (or: make build)
# and carry bin/espo along. Steps:
#   1. environment: CUDA, versions
#   2. a Qwen2-VL (ARCH=qwen2_5_vl: Qwen2.5-VL) from a small random config, no download
#      (trainer/worker/torch/tests/random_models.py)
#   3. the in-process probe, full fine-tuning and LoRA: chat template with a screenshot,
#      Generate vs LogProbs, Backward/Step, reference, Save/Load (gpu/probe.py)
#   4. the Go trainer drives the worker over gRPC: SFT + ESPO on synthetic SmartSpot
#      episodes to Completed, then the summary: step time, GPU memory, the share of step
#      time outside the worker (Go core + protocol), tokens per second
# Variables: ESPO (bin/espo), PYTHON (python3), OUT (/tmp/espo-gpu-check), ARCH
# (qwen2_vl), EPISODES (6), G (3), LORA_R (0 for the trainer run), MODEL (a folder to use
# instead of building one; "tiny" with DEVICE=cpu dry-runs steps 1 and 4 on a CPU).
set -euo pipefail
repo_root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$repo_root"
ESPO="${ESPO:-bin/espo}"
PYTHON="${PYTHON:-python3}"
OUT="${OUT:-/tmp/espo-gpu-check}"
ARCH="${ARCH:-qwen2_vl}"
EPISODES="${EPISODES:-10}"  # at least one episode for each of train, validation and test
G="${G:-3}"
LORA_R="${LORA_R:-0}"
DEVICE="${DEVICE:-cuda}"
PORT="${PORT:-50061}"
pkg=trainer/worker/torch
mkdir -p "$OUT"
export PYTHONPATH="$repo_root/$pkg${PYTHONPATH:+:$PYTHONPATH}" PYTHONDONTWRITEBYTECODE=1

echo "== 1. environment" >&2
[[ -x "$ESPO" ]] || { echo "gpu-check: $ESPO is missing: build it with CGO_ENABLED=0 go build -o bin/espo ./cmd/espo and carry it" >&2; exit 1; }
"$ESPO" version >&2 || true
"$PYTHON" - "$DEVICE" <<'PY' >&2
import sys, torch, grpc, google.protobuf
from google.protobuf.internal import api_implementation
print("torch", torch.__version__, "cuda", torch.version.cuda, "grpcio", grpc.__version__,
      "protobuf", google.protobuf.__version__, api_implementation.Type())
if sys.argv[1] == "cuda":
    import transformers, peft
    assert torch.cuda.is_available(), "no CUDA device"
    print("transformers", transformers.__version__, "peft", peft.__version__, "device", torch.cuda.get_device_name(0))
PY
command -v nvidia-smi >/dev/null && nvidia-smi --query-gpu=name,memory.total,memory.used --format=csv >&2 || true

MODEL="${MODEL:-}"
if [[ -z "$MODEL" ]]; then
  echo "== 2. random $ARCH" >&2
  MODEL="$(cd "$OUT" && pwd)/model-$ARCH"
  (cd "$pkg" && "$PYTHON" -m tests.random_models "$MODEL" --arch "$ARCH" >&2)
fi

if [[ "$MODEL" != tiny ]]; then
  echo "== 3. probe: full fine-tuning, then LoRA r=8" >&2
  "$PYTHON" "$pkg/gpu/probe.py" "$MODEL" >&2
  "$PYTHON" "$pkg/gpu/probe.py" "$MODEL" --lora-r 8 >&2
fi

echo "== 4. the Go trainer drives the worker: SFT + ESPO, $EPISODES episodes, G=$G" >&2
rm -rf "$OUT/run" && mkdir -p "$OUT/run"
stats="$OUT/run/worker-stats.json"
token="$OUT/run/worker-token" # the job's worker token, as the controller's Secret holds it
(umask 077 && od -An -N32 -tx1 /dev/urandom | tr -d ' \n' >"$token")
ESPO_WORKER_STATS="$stats" "$PYTHON" -m espo_worker --listen "127.0.0.1:$PORT" --model "$MODEL" \
  --device "$DEVICE" --dtype bfloat16 --lora-r "$LORA_R" --max-new-tokens 64 --token-file "$token" \
  --allow-path "$OUT/run" 2>"$OUT/run/worker.log" &
worker=$!
trap 'kill $worker 2>/dev/null || true; wait $worker 2>/dev/null || true' EXIT
for _ in $(seq 1 120); do
  grep -q "serving on" "$OUT/run/worker.log" && break
  kill -0 $worker 2>/dev/null || { cat "$OUT/run/worker.log" >&2; exit 1; }
  sleep 1
done
cat > "$OUT/run/run.yaml" <<YAML
spec:
  datasets:
    sources:
    - name: synth
      synthetic: {channels: [food, hotel], episodes: $EPISODES, seed: 5}
  model: {worker: cuda, pretrained: "$MODEL"}
  algorithm: {name: espo, sftEpochs: 1, epochs: 1, groupSize: $G, episodesPerBatch: 1, learningRate: "1e-5", seed: 7}
workers: ["127.0.0.1:$PORT"]
outputDir: $OUT/run/out
YAML
start=$(date +%s.%N)
"$ESPO" trainer --config "$OUT/run/run.yaml" --report none --metrics-bind-address 0 --log-format json \
  --worker-token-file "$token" \
  >"$OUT/run/trainer.log" 2>&1 || { tail -20 "$OUT/run/trainer.log" >&2; tail -20 "$OUT/run/worker.log" >&2; exit 1; }
end=$(date +%s.%N)

"$PYTHON" - "$OUT/run" "$start" "$end" <<'PY'
import json, sys
run, start, end = sys.argv[1], float(sys.argv[2]), float(sys.argv[3])
rep = json.load(open(run + "/out/report.json"))
steps = []
for line in open(run + "/trainer.log"):
    try:
        d = json.loads(line)
    except ValueError:
        continue
    if d.get("msg") == "step":
        steps.append((d.get("stage"), d.get("stepSeconds", 0.0)))
st = json.load(open(run + "/worker-stats.json"))
busy = sum(c["seconds"] for k, c in st["calls"].items() if k in ("Generate", "LogProbs", "Backward", "Step"))
espo = [s for k, s in steps if k == "espo"]
sft = [s for k, s in steps if k == "sft"]
total = sum(s for _, s in steps)
print("outcome %s: %s; %d steps" % (rep["outcome"], rep["message"], rep["steps"]))
print("step seconds: sft mean %.3f, espo mean %.3f (n=%d)" % (sum(sft) / max(len(sft), 1), sum(espo) / max(len(espo), 1), len(espo)))
print("worker busy %.2fs of %.2fs of training steps: Go core + protocol share %.1f%% (evaluations excluded)" %
      (busy, total, 100 * max(total - busy, 0) / max(total, 1e-9)))
for k, c in sorted(st["calls"].items()):
    print("  %-18s %5d calls %8.2fs" % (k, c["count"], c["seconds"]))
gen_s = st["calls"].get("Generate", {}).get("seconds", 0)
print("tokens: generated %d (%.0f tokens/s in Generate), trained %d (%.0f tokens/s in Backward)" %
      (st["generated_tokens"], st["generated_tokens"] / max(gen_s, 1e-9), st["trained_tokens"],
       st["trained_tokens"] / max(st["calls"].get("Backward", {}).get("seconds", 0), 1e-9)))
print("GPU memory: peak allocated %.1f MiB, reserved %.1f MiB" % (st["max_memory_allocated"] / 2**20, st["max_memory_reserved"] / 2**20))
print("wall %.1fs" % (end - start))
if rep["outcome"] != "Completed":
    sys.exit("gpu-check: the run did not complete")
PY
echo "gpu-check: OK" >&2
