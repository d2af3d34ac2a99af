# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""Checks the torch worker's Policy on a real Hugging Face VLM, in process, on CUDA:
a prompt with a screenshot goes through the processor's chat template; Generate's
log-probs match LogProbs (to bf16 autocast precision); Backward/Step move the
weights; the reference is the snapshot; Save/Load restore it; with LoRA only the
adapters train and the reference before a snapshot is the base model.

    python3 probe.py MODEL_DIR [--lora-r 8]
"""

import argparse
import os
import sys
import tempfile
import time

import torch

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), ".."))
from espo_worker import policy as policylib  # noqa: E402
from espo_worker import protocol as pb  # noqa: E402
from espo_worker import wire


def main() -> None:
    ap = argparse.ArgumentParser()
    ap.add_argument("model")
    ap.add_argument("--lora-r", type=int, default=0)
    a = ap.parse_args()
    from PIL import Image
    d = tempfile.mkdtemp()
    shot = os.path.join(d, "screen.png")
    Image.new("RGB", (200, 360), (40, 120, 200)).save(shot)
    p = policylib.Policy({"pretrained": a.model, "dtype": "bfloat16", "lora_r": a.lora_r, "max_new_tokens": 32},
                         device="cuda")
    t = time.time()
    p.configure(1, {})
    info = wire.describe(p)
    print("probe: configured %s, %d trainable parameters, %.1fs" % (info.model, info.parameters, time.time() - t))
    pr = pb.Prompt(episode_id="e", step_index=0, stage=pb.STAGE_GUI, instruction="any hotel in New York?",
                   screenshot_path=shot)
    pr.elements.add(id="e1", role="button", text="Search", box=[0.1, 0.2, 0.3, 0.25])
    g = wire.generate(p, pb.GenerateRequest(prompts=[pr], samples=3, seed=4, temperature=1.0))
    worst = 0.0
    for s in g.candidates[0].samples:
        lp = wire.logprobs(p, pb.LogProbsRequest(items=[pb.Scored(prompt=pr, answer=s.answer)], reference=True)).items[0]
        assert list(lp.token_ids) == list(s.answer.token_ids)
        worst = max([worst] + [abs(x - y) for x, y in zip(lp.current, s.logprobs)])
        assert list(lp.current) == list(lp.reference), "reference differs before any step"
    print("probe: generate vs logprobs max |diff| %.3g over %d candidates" % (worst, len(g.candidates[0].samples)))
    assert worst < 1e-3, "Generate and LogProbs differ"
    ans = pb.Answer(text="<answer>[{'action': 'click', 'point': [0.2, 0.22], 'input_text': 'no input text'}]</answer>")
    before = wire.logprobs(p, pb.LogProbsRequest(items=[pb.Scored(prompt=pr, answer=ans)])).items[0]
    for _ in range(3):
        wire.backward(p, pb.BackwardRequest(items=[pb.Weighted(prompt=pr, answer=ans, sequence_weight=1.0)]))
        norm, steps = wire.step(p, pb.StepRequest(learning_rate=1e-3, max_grad_norm=1.0))
    after = wire.logprobs(p, pb.LogProbsRequest(items=[pb.Scored(prompt=pr, answer=ans)], reference=True)).items[0]
    print("probe: SFT x3: sum logp %.3f -> %.3f (grad norm %.3g)" % (sum(before.current), sum(after.current), norm))
    assert sum(after.current) > sum(before.current)
    assert list(after.reference) == list(before.current), "the reference moved"
    p.snapshot_reference()
    path = os.path.join(d, "state.pt")
    with open(path, "wb") as f:
        p.save(f)
    q = policylib.Policy({}, device="cuda")
    assert q.load(path) == 3
    again = wire.logprobs(q, pb.LogProbsRequest(items=[pb.Scored(prompt=pr, answer=ans)], reference=True)).items[0]
    assert list(again.current) == list(after.current) and list(again.reference) == list(after.current)
    print("probe: save (%d bytes) and load restore the state; peak CUDA memory %.1f MiB" %
          (os.path.getsize(path), torch.cuda.max_memory_allocated() / 2 ** 20))
    print("probe: OK")


if __name__ == "__main__":
    main()
