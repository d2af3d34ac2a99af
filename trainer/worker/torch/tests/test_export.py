# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The exported Hugging Face folder loads with transformers and peft alone
(local_files_only) and answers as the worker does at that step: the same greedy
answers and, for the adapter and the full model, the same log-probs; the merged model
within float tolerance of the adapter. A damaged or partial export is refused."""

import copy
import json
import os

import pytest
import torch

from espo_worker import export as exportlib
from espo_worker import protocol as pb
from espo_worker import wire
from espo_worker.policy import InvalidError, Policy
from tests.conftest import ARCHS
from tests.test_hf import hf_policy, prompts, train
from tests.test_policy import ANSWER


def load_model(folder, vlm):
    import transformers
    cls = transformers.AutoModelForImageTextToText if vlm else transformers.AutoModelForCausalLM
    return cls.from_pretrained(folder, local_files_only=True, dtype=torch.float32)


def load_adapter(base, folder, vlm):
    import peft
    return peft.PeftModel.from_pretrained(load_model(base, vlm), folder, local_files_only=True)


def scored_by(p, model, ps):
    """The log-probs of ANSWER after each prompt, and the greedy answer to it, from
    model: the worker's own plain forward pass and generate over another model object."""
    b = copy.copy(p.backend)
    b.model = model.eval()
    out = []
    with torch.no_grad():
        for q in ps:
            inputs = b.prompt_inputs(q)
            lp = b.token_logprobs(inputs, b.answer_ids(ANSWER)).double().tolist()
            greedy = b.sample(inputs, 1, 1.0, True, torch.Generator().manual_seed(0), 10)[0]
            out.append((lp, greedy))
    return out


def worker_scores(p, ps):
    scored = wire.logprobs(p, pb.LogProbsRequest(items=[pb.Scored(prompt=q, answer=pb.Answer(text=ANSWER)) for q in ps]))
    greedy = wire.generate(p, pb.GenerateRequest(prompts=ps, samples=1, greedy=True))
    return [(list(s.current), list(c.samples[0].answer.token_ids)) for s, c in zip(scored.items, greedy.candidates)]


def close(a, b, tol):
    return all(len(x[0]) == len(y[0]) and max(abs(u - v) for u, v in zip(x[0], y[0])) <= tol for x, y in zip(a, b))


@pytest.mark.parametrize("arch", ARCHS)
def test_a_lora_export_loads_with_peft_and_merges(models, screenshots, tmp_path, arch):
    vlm = arch.endswith("_vl")
    p = hf_policy(models[arch], lora_r=4)
    ps = prompts(arch, screenshots)
    train(p, ps, 2, lr=0.05)
    dest = str(tmp_path / "policy")
    m = p.export(dest, merge=True)
    assert (m.kind, m.merged, m.step, m.base) == ("lora", True, 2, models[arch])
    assert exportlib.verify(dest) == m
    for f in ("adapter_config.json", "adapter_model.safetensors", "tokenizer.json", "chat_template.jinja") + \
            (("processor_config.json",) if vlm else ()):
        assert os.path.exists(os.path.join(dest, f)), f
        assert os.path.exists(os.path.join(dest, exportlib.MERGED, f)) or f.startswith("adapter_"), f
    worker = worker_scores(p, ps)
    adapter = scored_by(p, load_adapter(models[arch], dest, vlm), ps)
    assert close(adapter, worker, 1e-5), (adapter, worker)
    assert [g for _, g in adapter] == [g for _, g in worker], "the adapter answers greedily as the worker"
    merged = scored_by(p, load_model(os.path.join(dest, exportlib.MERGED), vlm), ps)
    assert close(merged, adapter, 1e-4), "the merged model is the adapter's within float tolerance"
    base = scored_by(p, load_model(models[arch], vlm), ps)
    assert not close(base, adapter, 1e-4), "the test cannot tell the trained adapter from the base"


def test_a_full_export_is_sharded_and_loads_with_transformers(models, screenshots, tmp_path):
    p = hf_policy(models["qwen3"])
    ps = prompts("qwen3", screenshots)
    train(p, ps, 1)
    dest = str(tmp_path / "policy")
    m = p.export(dest, max_shard_size="200KB")
    assert (m.kind, m.merged, m.step) == ("full", False, 1)
    index = json.load(open(os.path.join(dest, "model.safetensors.index.json")))
    assert len(set(index["weight_map"].values())) > 1, "a small shard size shards the weights"
    for f in ("config.json", "generation_config.json", "tokenizer.json", "chat_template.jinja"):
        assert os.path.exists(os.path.join(dest, f)), f
    full = scored_by(p, load_model(dest, False), ps)
    worker = worker_scores(p, ps)
    assert close(full, worker, 1e-5) and [g for _, g in full] == [g for _, g in worker]


def test_a_damaged_or_partial_export_is_refused(models, screenshots, tmp_path):
    p = hf_policy(models["qwen3"], lora_r=4)
    dest = str(tmp_path / "policy")
    p.export(dest)
    p.export(dest)  # a second export replaces the first
    assert [n for n in os.listdir(tmp_path) if n != "policy"] == [], "no partial or old folder is left beside it"
    with open(os.path.join(dest, "adapter_model.safetensors"), "r+b") as f:
        f.seek(100)
        f.write(b"\0\0\0\0")
    with pytest.raises(exportlib.ExportError, match="adapter_model.safetensors"):
        exportlib.verify(dest)
    os.remove(os.path.join(dest, exportlib.MANIFEST))
    with pytest.raises(exportlib.ExportError, match="no complete export"):
        exportlib.verify(dest)
    blocked = tmp_path / "file"
    blocked.write_text("")
    with pytest.raises(exportlib.ExportError):
        p.export(str(blocked / "policy"))
    tiny = Policy({"pretrained": "tiny"})
    tiny.configure(1, {})
    with pytest.raises(InvalidError, match="tiny is no Hugging Face model"):
        tiny.export(str(tmp_path / "tiny"))



def test_a_checkpoint_exports_offline_as_the_live_policy(models, screenshots, tmp_path, capsys):
    """export_checkpoint (python -m espo_worker.export_cli, behind "espo export") turns
    a saved state into the folder the live policy exports, byte for byte, with the base
    model found where it is now (--base), not where the state was written."""
    import shutil

    from espo_worker import export_cli
    moved = str(tmp_path / "models-in-the-pod")
    shutil.copytree(models["qwen3"], moved)
    p = hf_policy(moved, lora_r=4)
    ps = prompts("qwen3", screenshots)
    train(p, ps, 2, lr=0.05)
    state = str(tmp_path / "worker.state")
    p.save(state)
    live = p.export(str(tmp_path / "live"), merge=True)
    here = str(tmp_path / "models-here")
    os.rename(moved, here)
    dest = str(tmp_path / "offline")
    assert export_cli.main([state, dest, "--merge"]) == 2, "the state's own model folder is gone"
    assert "models-in-the-pod" in capsys.readouterr().err
    assert export_cli.main([state, dest, "--merge", "--base", here]) == 0
    summary = json.loads(capsys.readouterr().out)
    assert summary == {"path": dest, "kind": "lora", "merged": True, "step": 2, "files": len(live.files)}
    offline = exportlib.verify(dest)
    assert offline.files["adapter_model.safetensors"] == live.files["adapter_model.safetensors"], \
        "the offline export's adapter is the live policy's, byte for byte"
    assert offline.base == here and offline.step == live.step
    assert export_cli.main([str(tmp_path / "no-such.state"), str(tmp_path / "x")]) == 2
