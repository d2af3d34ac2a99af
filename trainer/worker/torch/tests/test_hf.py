# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The Hugging Face backend on real architectures, on CPU: a Qwen3 causal LM and a
Qwen2.5-VL, tiny and random (tests.random_models), saved with save_pretrained and loaded
only through the worker's own from_pretrained(local_files_only=True) path."""

import hashlib
import os
import shutil

import pytest
import torch

from espo_worker import modelfiles, wire
from espo_worker import policy as policylib
from espo_worker import protocol as pb
from tests import random_models
from tests.conftest import ARCHS
from tests.test_policy import ANSWER, make_prompt


def hf_policy(path, seed=1, **opts):
    p = policylib.Policy({"pretrained": path, "dtype": "float32", "max_new_tokens": 10})
    p.configure(seed, {k: str(v) for k, v in opts.items()})
    return p


def prompts(arch, screenshots):
    ps = [make_prompt(1), make_prompt(2, stage=pb.STAGE_POOL)]
    if arch.endswith("_vl"):
        for p in ps:
            p.screenshot_path = screenshots[0]
    return ps


def sft(ps):
    return pb.BackwardRequest(items=[pb.Weighted(prompt=p, answer=pb.Answer(text=ANSWER), sequence_weight=0.5)
                                     for p in ps])


def train(p, ps, steps, lr=0.01):
    for _ in range(steps):
        wire.backward(p, sft(ps))
        wire.step(p, pb.StepRequest(learning_rate=lr))


def flat(tensors):
    return torch.cat([t.detach().reshape(-1).clone() for t in tensors])


@pytest.mark.parametrize("arch", ARCHS)
def test_generate_logprobs_equal_logprobs(models, screenshots, arch):
    p = hf_policy(models[arch])
    ps = prompts(arch, screenshots)
    gen = wire.generate(p, pb.GenerateRequest(prompts=ps, samples=3, seed=4, temperature=1.3))
    items = [(prompt, s) for prompt, c in zip(ps, gen.candidates) for s in c.samples]
    lp = wire.logprobs(p, pb.LogProbsRequest(reference=True, items=[pb.Scored(prompt=q, answer=s.answer) for q, s in items]))
    for (_, s), it in zip(items, lp.items):
        assert len(s.logprobs) == len(s.answer.token_ids) > 0
        assert list(it.token_ids) == list(s.answer.token_ids)
        assert list(it.current) == list(s.logprobs), "Generate's log-probs are LogProbs'"
        assert list(it.reference) == list(s.logprobs), "the reference is the starting model"
    train(p, ps, 1)
    moved = wire.logprobs(p, pb.LogProbsRequest(reference=True, items=[pb.Scored(prompt=q, answer=s.answer) for q, s in items]))
    assert [list(it.reference) for it in moved.items] == [list(s.logprobs) for _, s in items], "the reference stays frozen"
    assert list(moved.items[0].current) != list(items[0][1].logprobs), "a step moves the policy"


def test_the_screenshot_reaches_the_vision_tower(models, screenshots):
    p = hf_policy(models["qwen2_5_vl"])

    def scored(shot):
        q = make_prompt(1)
        q.screenshot_path = shot
        req = pb.LogProbsRequest(items=[pb.Scored(prompt=q, answer=pb.Answer(text=ANSWER))])
        return list(wire.logprobs(p, req).items[0].current)
    a, b = scored(screenshots[0]), scored(screenshots[1])
    assert a == scored(screenshots[0])
    assert max(abs(x - y) for x, y in zip(a, b)) > 1e-4, "another image, other log-probs"


def adapter_and_base(p):
    named = dict(p.backend.model.named_parameters())
    adapters = {n: t for n, t in named.items() if t.requires_grad}
    base = {n: t.detach().clone() for n, t in named.items() if not t.requires_grad}
    return adapters, base


@pytest.mark.parametrize("arch", ARCHS)
def test_lora_trains_only_the_adapters(models, screenshots, arch):
    p = hf_policy(models[arch], lora_r=4, lora_alpha=8)
    adapters, base = adapter_and_base(p)
    assert adapters and all("lora_" in n for n in adapters), sorted(adapters)[:4]
    assert sum(t.numel() for t in p.params) == sum(t.numel() for t in adapters.values())
    before = {n: t.detach().clone() for n, t in adapters.items()}
    train(p, prompts(arch, screenshots), 2)
    after_adapters, after_base = adapter_and_base(p)
    assert all(torch.equal(base[n], after_base[n]) for n in base), "a frozen base weight changed"
    assert any(not torch.equal(before[n], t) for n, t in after_adapters.items()), "no adapter changed"


@pytest.mark.parametrize("arch,lora", [(a, r) for a in ARCHS for r in (0, 4)])
def test_a_resumed_run_is_bit_exact(models, screenshots, tmp_path, arch, lora):
    """Save after two steps, go on one step; a new worker that loads the file and takes
    the same step ends with the same weights, bit for bit, and samples the same."""
    ps = prompts(arch, screenshots)
    a = hf_policy(models[arch], seed=5, lora_r=lora)
    train(a, ps, 2)
    state = str(tmp_path / "state.pt")
    with open(state, "wb") as f:
        a.save(f)
    train(a, ps, 1)
    b = policylib.Policy({"pretrained": "", "dtype": "float32", "max_new_tokens": 10})
    assert b.load(state) == 2
    train(b, ps, 1)
    assert torch.equal(flat(a.params), flat(b.params))
    assert torch.equal(flat(a.reference), flat(b.reference))
    req = pb.GenerateRequest(prompts=ps[:1], samples=2, seed=11)
    assert wire.generate(a, req) == wire.generate(b, req)


def test_bf16_and_gradient_checkpointing_run(models, screenshots):
    ps = prompts("qwen2_5_vl", screenshots)
    bf16 = hf_policy(models["qwen2_5_vl"], lora_r=4, dtype="bfloat16")
    assert any(t.dtype == torch.bfloat16 for t in bf16.backend.model.parameters()), "the frozen base in bfloat16"
    assert all(t.dtype == torch.float32 for t in bf16.params), "the adapters train in float32"
    train(bf16, ps, 1)
    assert torch.isfinite(flat(bf16.params)).all()
    plain, ckpt = (hf_policy(models["qwen3"], seed=2, gradient_checkpointing=g) for g in (False, True))
    assert ckpt.backend.model.is_activation_checkpointing
    for p in (plain, ckpt):
        wire.backward(p, sft(prompts("qwen3", screenshots)))
    assert torch.allclose(plain.flat_grad(), ckpt.flat_grad(), rtol=1e-4, atol=1e-6)


@pytest.mark.parametrize("arch", ARCHS)
def test_info_names_the_model_configs_digest(models, arch):
    """Info carries the SHA-256 of the model folder's config.json, which the trainer
    records in the run's provenance; the tiny model has none."""
    with open(os.path.join(models[arch], "config.json"), "rb") as f:
        want = hashlib.sha256(f.read()).hexdigest()
    assert wire.describe(hf_policy(models[arch])).model_config_sha256 == want
    tiny = policylib.Policy({"pretrained": "tiny", "dtype": "float32"})
    tiny.configure(1, {})
    assert wire.describe(tiny).model_config_sha256 == ""


def test_a_folder_missing_a_file_is_refused_naming_it(models, tmp_path):
    for name, want in (("tokenizer.json", "a tokenizer"), ("model.safetensors", "the weights")):
        d = str(tmp_path / name)
        shutil.copytree(models["qwen2_5_vl"], d)
        os.remove(os.path.join(d, name))
        with pytest.raises(modelfiles.ModelIncompleteError) as e:
            hf_policy(d)
        assert str(e.value).startswith(modelfiles.PREFIX) and want in str(e.value) and d in str(e.value)


def test_an_architecture_the_worker_cannot_train_is_refused(models, tmp_path):
    import transformers as tf
    d = str(tmp_path / "bert")
    tok = random_models.tokenizer(d)
    tf.BertForMaskedLM(tf.BertConfig(vocab_size=len(tok), hidden_size=32, num_hidden_layers=1, num_attention_heads=2,
                                     intermediate_size=64)).save_pretrained(d)
    tok.save_pretrained(d)
    with pytest.raises(modelfiles.ModelUnsupportedError) as e:
        hf_policy(d)
    msg = str(e.value)
    assert msg.startswith(modelfiles.PREFIX), msg
    assert "BertForMaskedLM (model_type bert)" in msg and "AutoModelForCausalLM" in msg and "Qwen2.5-VL" in msg, msg


def test_an_answer_may_not_hold_image_placeholders(models, screenshots):
    p = hf_policy(models["qwen2_5_vl"])
    banned = p.backend.banned_ids
    assert len(banned) >= 3, banned  # image, video, vision start and end
    q = prompts("qwen2_5_vl", screenshots)[0]
    with pytest.raises(policylib.InvalidError, match="placeholder"):
        wire.logprobs(p, pb.LogProbsRequest(items=[pb.Scored(prompt=q, answer=pb.Answer(token_ids=[banned[0], 10]))]))
    gen = wire.generate(p, pb.GenerateRequest(prompts=[q], samples=8, seed=2, temperature=3.0))
    assert not set(banned) & {t for s in gen.candidates[0].samples for t in s.answer.token_ids}


@pytest.mark.parametrize("scorer", ["score_shared_prefix", "score_padded"])
@pytest.mark.parametrize("arch", ARCHS)
def test_a_batch_scores_each_answer_as_alone(models, screenshots, arch, scorer):
    """Both ways score_group scores a prompt's answers together (the prompt encoded
    once, or every row in one padded pass) give each answer the log-probs, and the
    gradient, of a plain forward pass over prompt + answer alone, to float rounding,
    whatever the lengths of the others; for a VLM, also for a prompt without a
    screenshot scored right after one with (no position offset carries over)."""
    p = hf_policy(models[arch], seed=3)
    b = p.backend
    ps = prompts(arch, screenshots)
    if arch.endswith("_vl"):
        ps[1].screenshot_path = ""
    answers = [b.answer_ids(ANSWER), b.answer_ids("<answer>[]</answer>"), b.answer_ids("ok")]
    assert len({len(a) for a in answers}) == 3
    for q in ps:
        inputs = b.prompt_inputs(q)
        with torch.no_grad():
            together = getattr(b, scorer)(inputs, answers)
            alone = [b.token_logprobs(inputs, a) for a in answers]
        for t, a in zip(together, alone):
            assert t.shape == a.shape
            assert torch.allclose(t, a, rtol=0, atol=1e-5), (t - a).abs().max()
        grads = []
        for together in (True, False):
            for t in p.params:
                t.grad = None
            lps = getattr(b, scorer)(inputs, answers) if together else [b.token_logprobs(inputs, a) for a in answers]
            torch.stack([lp.sum() * (k + 1) for k, lp in enumerate(lps)]).sum().backward()
            grads.append(p.flat_grad())
        scale = float(grads[1].abs().max())
        assert scale > 0 and torch.allclose(grads[0], grads[1], rtol=1e-4, atol=1e-5 * scale)


@pytest.mark.parametrize("arch", ARCHS)
def test_sampling_from_the_prompts_cache_is_plain_generate(models, screenshots, arch):
    """sample generates from the prompt's cache, encoded once for all rows: greedy and
    sampled (the same seed, hot enough that every token is drawn), it gives the tokens
    of the model's plain generate from the whole prompt, for a VLM also for a prompt
    without a screenshot sampled right after one with."""
    b = hf_policy(models[arch], seed=4).backend
    ps = prompts(arch, screenshots)
    if arch.endswith("_vl"):
        ps[1].screenshot_path = ""
    for q in ps:
        inputs = b.prompt_inputs(q)
        ids = torch.tensor([inputs["ids"]])
        # A random model's tokens barely depend on positions: its logits do. First for
        # each prompt, so that a VLM's prompt without a screenshot follows a pass over one.
        with torch.no_grad():
            kw = dict(do_sample=False, max_new_tokens=6, output_logits=True, return_dict_in_generate=True,
                      pad_token_id=b.pad_id, attention_mask=torch.ones_like(ids))
            cached = b.model.generate(input_ids=ids, past_key_values=b.encode_prefix(inputs, 1), **kw)
            plain = b.model.generate(input_ids=ids, **inputs["extra"], **kw)
        for c, w in zip(cached.logits, plain.logits, strict=True):
            assert torch.allclose(c, w, rtol=0, atol=1e-4), (c - w).abs().max()
        for greedy in (True, False):
            got = b.sample(inputs, 3, 2.0, greedy, torch.Generator().manual_seed(5), 12)
            torch.manual_seed(int(torch.randint(0, 2 ** 62, (1,), generator=torch.Generator().manual_seed(5))))
            kw = dict(do_sample=False) if greedy else dict(do_sample=True, temperature=2.0, top_p=1.0, top_k=0,
                                                            num_return_sequences=3)
            with torch.no_grad():
                plain = b.model.generate(input_ids=ids, attention_mask=torch.ones_like(ids), **inputs["extra"],
                                         max_new_tokens=12, suppress_tokens=list(b.banned_ids) or None,
                                         pad_token_id=b.pad_id, eos_token_id=list(b.eos_ids), **kw)
            want = [b.strip_answer(row[ids.shape[1]:].tolist(), 12) for row in plain]
            assert got == (want * 3 if greedy else want) and len(want[0]) > 1, (greedy, got, want)
