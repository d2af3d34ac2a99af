# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The vLLM rollout engine (option rollout_engine=vllm) beside the policy, on CPU: the
engine's environment is the one hack/setup-python.sh --engine builds ($ESPO_VLLM_PYTHON),
the models tiny random Qwen2 (tied embeddings) and Qwen2.5-VL (tests.random_models).

Every Generate returns both the training model's log-probs of the sampled answers
(logprobs) and the engine's (sampler_logprobs); after training steps they agree only
if the trained weights reached the engine, which each test also shows by leaving the
push out once (the control), where they must disagree."""

import os

import pytest

from espo_worker import policy as policylib
from espo_worker import protocol as pb
from espo_worker import rollout as rolloutlib
from espo_worker import wire
from tests import random_models, ranks
from tests.test_hf import ANSWER, make_prompt

# The largest |trainer - engine| per-token log-prob difference each model must meet:
# float32 on both sides, vLLM's kernels against transformers' (a LoRA adapter is
# applied unmerged by each); the VLM's vision tower runs other kernels still.
TOLERANCE = {"qwen2": 1e-4, "qwen2_5_vl": 1e-2}
# What a stale engine must differ by at least, for the comparison to tell the two apart.
STALE = 0.05

pytestmark = pytest.mark.skipif(not os.environ.get(rolloutlib.ENV_PYTHON),
                                reason="no engine environment ($ESPO_VLLM_PYTHON): hack/setup-python.sh --engine")


@pytest.fixture(scope="module")
def models(tmp_path_factory):
    return random_models.build_each(tmp_path_factory.mktemp("models"), TOLERANCE)


@pytest.fixture(scope="module")
def screenshot(tmp_path_factory):
    from PIL import Image
    path = str(tmp_path_factory.mktemp("screens") / "screen.png")
    img = Image.new("RGB", (112, 168), (230, 230, 230))
    img.paste((50, 40, 40), (10, 20, 60, 60))
    img.save(path)
    return path


def engine_policy(path, seed=1, **opts):
    p = policylib.Policy({"pretrained": path, "dtype": "float32", "max_new_tokens": 12})
    p.configure(seed, dict({"rollout_engine": "vllm", "vllm_cpu_kv_cache_gib": "1", "vllm_max_model_len": "1024",
                            "vllm_enforce_eager": "true"},
                           **{k: str(v) for k, v in opts.items()}))
    return p


def prompts(screenshot=None):
    ps = [make_prompt(1), make_prompt(2, stage=pb.STAGE_POOL), make_prompt(3, episode="ep-2")]
    for p in ps:
        if screenshot:
            p.screenshot_path = screenshot
    return ps


def train(p, ps, steps, lr=0.05):
    for _ in range(steps):
        wire.backward(p, pb.BackwardRequest(items=[pb.Weighted(prompt=q, answer=pb.Answer(text=ANSWER), sequence_weight=0.5)
                                             for q in ps]))
        wire.step(p, pb.StepRequest(learning_rate=lr))


def mismatch(resp):
    """The largest |logprobs - sampler_logprobs| of a GenerateResponse's samples."""
    worst = 0.0
    for c in resp.candidates:
        for s in c.samples:
            assert len(s.sampler_logprobs) == len(s.logprobs) == len(s.answer.token_ids) > 0
            worst = max(worst, max(abs(a - b) for a, b in zip(s.logprobs, s.sampler_logprobs)))
    return worst


def generate(p, ps, seed=7):
    return wire.generate(p, pb.GenerateRequest(prompts=ps, samples=4, seed=seed, temperature=1.0))


def stale_then_synced(p, ps):
    """Generate's mismatch with the push left out (the engine serves the weights of
    before), then with it."""
    push = p.sync_rollout
    p.sync_rollout = lambda: None
    try:
        stale = mismatch(generate(p, ps))
    finally:
        p.sync_rollout = push
    return stale, mismatch(generate(p, ps))


def long_prompts(n, elements):
    """n prompts of about 14 tokens an element of a tiny random model's tokenizer."""
    ps = []
    for i in range(n):
        q = make_prompt(i, episode="long-%d" % i)
        q.instruction = "%d %s" % (i, q.instruction)  # no prefix shared beyond the system turn
        for k in range(elements):
            q.elements.add(id="x%d" % k, role="button", text="Search %d hotel %d flight movie" % (k, i),
                           box=[0.1, 0.2, 0.3, 0.25])
        ps.append(q)
    return ps


@pytest.mark.parametrize("arch,lora", [("qwen2", 4), ("qwen2_5_vl", 0)])
def test_the_engine_serves_the_trained_weights(models, screenshot, arch, lora):
    """LoRA (the adapter under a new id) and a VLM with a screenshot (full fine-tuning:
    test_an_engine_through_a_run has the text model's). The LoRA engine is also given
    more prompt tokens in one call than vLLM's CPU backend schedules in one step (4,096),
    each prompt under the longest sequence, which it must sample whole and seeded."""
    p = engine_policy(models[arch], lora_r=lora, vllm_max_model_len=4096) if lora else engine_policy(models[arch])
    try:
        if lora:
            long = long_prompts(6, 30)
            resp = generate(p, long, seed=3)
            lengths = [len(c.samples[0].answer.token_ids) for c in resp.candidates]
            assert mismatch(resp) < TOLERANCE[arch] and all(n > 0 for n in lengths)
            assert sum(len(p.backend.prompt_inputs(q)["ids"]) for q in long) > 4096, "the prompts fit one step"
        ps = prompts(screenshot if arch.endswith("_vl") else None)
        assert mismatch(generate(p, ps)) < TOLERANCE[arch], "the engine starts from the model folder"
        train(p, ps, 3)
        stale, synced = stale_then_synced(p, ps)
        assert stale > STALE, "the control: without the push the engine samples from the untrained model"
        assert synced < TOLERANCE[arch], "after the push the engine's log-probs are the trained model's"
    finally:
        p.close_rollout()


def test_an_engine_through_a_run(models, tmp_path):
    """One engine beside a full fine-tuning of Qwen2 (every tensor pushed whole; its
    output head is tied to its embedding), through what a run asks of it: seeded
    sampling, the trained weights after each step, a checkpoint's weights after Load
    (another run's, then its own, whose answers it samples again), and an engine that
    dies."""
    p = engine_policy(models["qwen2"])
    try:
        ps = prompts()
        # The same seed gives the same answers (a resumed run samples what the
        # uninterrupted one did), whatever else is in the batch; another seed others.
        a, b = generate(p, ps, seed=11), generate(p, ps[:1], seed=11)
        answers = [[list(s.answer.token_ids) for s in c.samples] for c in a.candidates]
        assert answers[0] == [list(s.answer.token_ids) for s in b.candidates[0].samples]
        c = generate(p, ps, seed=12)
        assert answers != [[list(s.answer.token_ids) for s in c.samples] for c in c.candidates]
        greedy = wire.generate(p, pb.GenerateRequest(prompts=ps[:1], samples=3, greedy=True))
        assert len({tuple(s.answer.token_ids) for s in greedy.candidates[0].samples}) == 1
        assert mismatch(a) < TOLERANCE["qwen2"], "the engine starts from the model folder"

        train(p, ps, 3)
        stale, synced = stale_then_synced(p, ps)
        assert stale > STALE, "the control: without the push the engine samples from the untrained model"
        assert synced < TOLERANCE["qwen2"], "after the push the engine's log-probs are the trained model's"
        st = p.rollout_stats()
        assert st["pushes"] >= 1 and st["push_seconds"] > 0 and st["sample_seconds"] > 0 and st["score_seconds"] > 0, st
        mine = str(tmp_path / "mine.pt")
        with open(mine, "wb") as f:
            p.save(f)
        trained = generate(p, ps, seed=21)

        # A checkpoint of another run (another seed, other steps): after Load the
        # engine samples with its weights, as the worker that wrote it scores them.
        other = policylib.Policy({"pretrained": models["qwen2"], "dtype": "float32", "max_new_tokens": 12})
        other.configure(3, {})
        train(other, ps, 2, lr=0.1)
        state = str(tmp_path / "state.pt")
        with open(state, "wb") as f:
            other.save(f)
        assert p.load(state) == 2
        resp = generate(p, ps)
        assert mismatch(resp) < TOLERANCE["qwen2"], "the engine serves the loaded checkpoint"
        # Each answer says how long its call spent pushing weights: the first after a
        # load pushes them, the next has nothing new to push.
        assert resp.weight_sync_seconds > 0 and generate(p, ps).weight_sync_seconds == 0
        again = wire.logprobs(other, pb.LogProbsRequest(items=[pb.Scored(prompt=ps[0], answer=s.answer)
                                                          for s in resp.candidates[0].samples]))
        assert [list(it.current) for it in again.items] == [list(s.logprobs) for s in resp.candidates[0].samples]

        # Resumed from its own checkpoint, the engine samples what it sampled before
        # the checkpoint was written, token for token.
        assert p.load(mine) == 3
        assert generate(p, ps, seed=21).candidates == trained.candidates

        # An engine that dies mid-run fails the call, naming it and how it ended.
        p.rollout.proc.kill()
        with pytest.raises(rolloutlib.EngineDiedError, match=r"vLLM engine \(pid \d+\) exited with code -9"):
            generate(p, ps)
    finally:
        p.close_rollout()


def test_each_worker_of_a_pod_has_its_engine_on_its_own_gpu():
    assert rolloutlib.visible_device(None, "cuda:2") == "2"
    assert rolloutlib.visible_device("GPU-a,GPU-b", "cuda:1") == "GPU-b"
    assert rolloutlib.visible_device("3", "cuda") == "3"
    with pytest.raises(rolloutlib.EngineUnavailableError, match="cuda:2 is not among CUDA_VISIBLE_DEVICES=0,1"):
        rolloutlib.visible_device("0,1", "cuda:2")


def test_an_engine_that_cannot_start_is_a_permanent_error(models, tmp_path, monkeypatch):
    with pytest.raises(policylib.InvalidError, match="rollout_engine=vllm: the test model tiny"):
        policylib.Policy({"pretrained": "tiny"}).configure(1, {"rollout_engine": "vllm"})
    with pytest.raises(policylib.InvalidError, match="rollout_engine='sglang'"):
        policylib.Policy({"pretrained": "tiny"}).configure(1, {"rollout_engine": "sglang"})
    not_a_model = tmp_path / "not-a-model"
    not_a_model.mkdir()
    (not_a_model / "config.json").write_text('{"model_type": "no-such-architecture"}')
    with pytest.raises(rolloutlib.EngineUnavailableError, match="could not start on %s" % not_a_model):
        rolloutlib.VLLMEngine(str(not_a_model), dtype="float32", seed=1, cpu_kv_cache_gib=1)
    monkeypatch.setenv(rolloutlib.ENV_PYTHON, str(tmp_path / "no-python"))
    with pytest.raises(policylib.InvalidError, match="ESPO_VLLM_PYTHON=.*no-python is not an executable python"):
        engine_policy(models["qwen2"])


def test_the_engine_serves_an_exported_model(models, tmp_path):
    """A fully fine-tuned model, exported, is a folder the engine serves (its sampled
    answers' log-probs match the worker's own scoring of that folder), and the worker
    goes on training from it. The LoRA adapter an export holds is what the engine is
    sent at every push (export.save_adapter), which test_the_engine_serves_the_trained_weights
    serves."""
    trained = policylib.Policy({"pretrained": models["qwen2"], "dtype": "float32", "max_new_tokens": 12})
    trained.configure(1, {})
    ps = prompts()
    train(trained, ps, 2)
    dest = str(tmp_path / "policy")
    trained.export(dest)
    p = engine_policy(dest)
    try:
        resp = generate(p, ps)
        assert mismatch(resp) < TOLERANCE["qwen2"]
        served = [list(s.logprobs) for c in resp.candidates for s in c.samples]
        again = wire.logprobs(trained, pb.LogProbsRequest(items=[pb.Scored(prompt=q, answer=s.answer)
                                                             for q, c in zip(ps, resp.candidates) for s in c.samples]))
        assert max(abs(a - b) for x, it in zip(served, again.items) for a, b in zip(x, it.current)) < 1e-5, \
            "the exported folder scores as the worker that wrote it"
    finally:
        p.close_rollout()



def _sharded_engine_rank(rank, world, port, model, lora, out):
    import torch
    torch.set_num_threads(1)
    from espo_worker import dist as distlib
    group = distlib.Group(rank, world, "127.0.0.1", port, "gloo", timeout_s=120)
    p = policylib.Policy({"pretrained": model, "dtype": "float32", "max_new_tokens": 12, "sharding": "sharded"},
                         dist=group)
    p.configure(1, {"rollout_engine": "vllm", "vllm_cpu_kv_cache_gib": "1", "vllm_max_model_len": "1024",
                    "vllm_enforce_eager": "true", "lora_r": str(lora)})
    def gathered(model):
        raise AssertionError("a sharded worker gathered the whole model beside its engine")
    p.sharding.gathered = gathered
    try:
        mine = prompts() if rank == 0 else []  # rank 1 makes the empty calls a short worker makes
        train(p, mine, 3)
        stale, synced = stale_then_synced(p, mine)  # the push left out on every worker, then made
        if rank == 0:
            out["stale"], out["synced"], out["pushes"] = stale, synced, p.rollout_stats()["pushes"]
    finally:
        p.close_rollout()


@pytest.mark.parametrize("lora", [0, 4], ids=["full", "lora"])
def test_sharded_workers_push_whole_weights_to_their_engines(models, lora):
    """Two workers hold a Qwen2 sharded (FSDP2 over gloo), each with an engine of its
    own: after training steps the first's engine samples with the trained weights, whole
    (the engine's log-probs are the training model's), and without the push it does not
    (the control); the second, with no prompts, takes part in every gather. Neither
    ever gathers the whole model: the push and the scoring gather a unit at a time."""
    import socket

    import torch.multiprocessing as mp
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
    with mp.Manager() as mgr:
        out = mgr.dict()
        ranks.start(_sharded_engine_rank, (2, port, models["qwen2"], lora, out), 2)
        got = dict(out)
    assert got["stale"] > STALE, "the control: without the push the engine samples from the untrained model"
    assert got["synced"] < TOLERANCE["qwen2"], "after the push the engine's log-probs are the trained model's"
    assert got["pushes"] >= 1
