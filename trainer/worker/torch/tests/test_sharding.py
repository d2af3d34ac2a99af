# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""Sharded workers (FSDP2 over gloo, on CPU) take the step one replicated worker takes:
two ranks, one with the whole batch and one with nothing (it runs idle passes), end
with the weights a single worker ends with after the same batch, for a causal LM and a
VLM, with LoRA and fully fine-tuned. Their Generate and LogProbs answer as the single
worker does, they export the folder the single worker exports, and a state saved by the
sharded pair loads into a single worker, and a single worker's into a sharded pair, with
the same weights and optimizer moments."""

import io
import os
import socket

import pytest
import torch
import torch.multiprocessing as mp
from safetensors.torch import load_file

from espo_worker import dist as distlib
from espo_worker import export as exportlib
from espo_worker import export_cli, wire
from espo_worker import policy as policylib
from espo_worker import protocol as pb
from espo_worker import state as statelib
from tests import ranks
from tests.conftest import ARCHS
from tests.test_hf import prompts, sft
from tests.test_policy import ANSWER

STEP = pb.StepRequest(learning_rate=0.01, max_grad_norm=0.3)


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def settings(model, sharding):
    return {"pretrained": model, "dtype": "float32", "max_new_tokens": 6, "sharding": sharding}


def observe(p, ps):
    """What a test compares: the greedy answers and the log-probs of ANSWER (current and
    reference) of ps, for the ranks that were given prompts."""
    greedy = wire.generate(p, pb.GenerateRequest(prompts=ps, samples=1, greedy=True))
    scored = wire.logprobs(p, pb.LogProbsRequest(items=[pb.Scored(prompt=q, answer=pb.Answer(text=ANSWER)) for q in ps],
                                                 reference=True))
    return [list(c.samples[0].answer.token_ids) for c in greedy.candidates], \
        [(list(s.current), list(s.reference)) for s in scored.items]


def _rank(rank, world, port, model, opts, ps, load, out, export=None, folder=None, steps=1, per_pod=0,
          mode="sharded", end_folder=None):
    torch.set_num_threads(1)
    group = distlib.Group(rank, world, "127.0.0.1", port, "gloo", timeout_s=60, per_pod=per_pod)
    p = policylib.Policy(settings(model, mode), dist=group)
    p.configure(1, opts)
    if isinstance(load, str):  # a sharded state folder: every rank reads its shards
        p.load(load)
    elif load is not None:
        p.load(io.BytesIO(load) if rank == 0 else None)
    mine = ps if rank == 0 else []  # the other ranks have no share: idle passes, empty calls
    for k in range(steps):
        if folder and k == steps - 1:  # the state before the last step
            p.save_shards(folder)
        wire.backward(p, sft(mine))
        norm, _ = wire.step(p, STEP)
    seen = observe(p, mine)
    if end_folder:
        p.save_shards(end_folder)
    buf = io.BytesIO()
    p.save(buf if rank == 0 else None)
    if export:
        p.export(export if rank == 0 else None, merge=bool(opts))
    if rank == 0:
        out["state"], out["norm"], out["seen"] = buf.getvalue(), norm, seen
        out["sharded"] = wire.describe(p).sharded


def run_sharded(model, opts, ps, load=None, export=None, world=2, folder=None, steps=1, per_pod=0, mode="sharded",
                end_folder=None):
    """world sharded ranks (2 by default) take steps steps on ps (all of it on rank 0);
    rank 0's saved state file, the last step's gradient norm, what it observed after
    and whether it said it is sharded. load: a state file's bytes or a sharded state
    folder's path to load first; export: a folder the ranks export their policy to
    (merged, with LoRA); folder: where the ranks save a sharded state folder before
    their last step, end_folder after it; per_pod and mode: workers a pod (0: one pod)
    and the sharding."""
    with mp.Manager() as mgr:
        out = mgr.dict()
        ranks.start(_rank, (world, _free_port(), model, opts, ps, load, out, export, folder, steps, per_pod, mode,
                            end_folder), world)
        return dict(out)


def single(model, opts, state=None):
    """One replicated worker that scores its backward passes in one pass per prompt, as
    sharded workers do (HFBackend.score_group), so that a comparison of the two sees
    the sharding alone: AdamW's first step, g / (|g| + eps), turns the rounding of two
    ways of scoring into visible differences where g is near 0."""
    p = policylib.Policy(settings(model, "replicated"))
    p.configure(1, opts)
    p.backend.sharded = True
    if state is not None:
        p.load(io.BytesIO(state))
    return p


def flat(tensors):
    return torch.cat([t.reshape(-1) for t in tensors])


def assert_states_close(a, b):
    """The weights of two states agree to 1% of a step (AdamW moves an element by at most
    the learning rate in its first step, by g / (|g| + eps) of it: where g is near 0 the
    rounding of a sum taken in another order shows), the references and the moments to
    float rounding, and the steps exactly. That the gradients are the same sum, not an
    average, the gradient norms say (the step is blind to a scale)."""
    sa, sb = statelib.parse_state(a, "a"), statelib.parse_state(b, "b")
    assert torch.allclose(flat(sa.params), flat(sb.params), rtol=0, atol=0.01 * STEP.learning_rate), "params"
    for name, x, y in [("reference", flat(sa.reference), flat(sb.reference)),
                       ("exp_avg", flat([s["exp_avg"] for s in sa.optimizer["state"].values()]),
                        flat([s["exp_avg"] for s in sb.optimizer["state"].values()]))]:
        assert torch.allclose(x, y, rtol=0, atol=1e-5 * float(y.abs().max())), name
    assert sa.steps == sb.steps


def assert_one_workers_step(got, model, opts, ps):
    """The sharded workers (run_sharded's got) said they are sharded and took the step
    one replicated worker takes on ps: the same gradient norm, the same state within
    float tolerance (assert_states_close). Returns that worker."""
    assert got["sharded"]
    one = single(model, opts)
    wire.backward(one, sft(ps))
    norm, _ = wire.step(one, STEP)
    assert abs(got["norm"] - norm) <= 1e-5 * norm
    want = io.BytesIO()
    one.save(want)
    assert_states_close(torch.load(io.BytesIO(got["state"]), weights_only=True),
                        torch.load(io.BytesIO(want.getvalue()), weights_only=True))
    return one


@pytest.mark.parametrize("lora", [True, False], ids=["lora", "full"])
@pytest.mark.parametrize("arch", ARCHS)
def test_a_sharded_step_is_the_replicated_step(models, screenshots, tmp_path, arch, lora):
    opts = {"lora_r": "4"} if lora else {}
    ps = prompts(arch, screenshots)
    got = run_sharded(models[arch], opts, ps, export=str(tmp_path / "sharded"))
    one = assert_one_workers_step(got, models[arch], opts, ps)
    answers, scores = got["seen"]
    one_answers, one_scores = observe(one, ps)
    assert answers == one_answers, "the sharded pair answers greedily as one worker"
    for (cur, ref), (cur1, ref1) in zip(scores, one_scores):
        assert max(abs(a - b) for a, b in zip(cur + ref, cur1 + ref1)) <= 1e-4
    m = one.export(str(tmp_path / "single"), merge=lora)
    sharded = exportlib.verify(str(tmp_path / "sharded"))
    assert sorted(sharded.files) == sorted(m.files) and (sharded.kind, sharded.merged, sharded.step) == (m.kind, m.merged, 1)
    weights = "adapter_model.safetensors" if lora else "model.safetensors"
    a, b = load_file(str(tmp_path / "sharded" / weights)), load_file(str(tmp_path / "single" / weights))
    assert a.keys() == b.keys() and all(torch.allclose(a[k], b[k], rtol=0, atol=0.01 * STEP.learning_rate) for k in a), \
        "the sharded pair exports the weights one worker exports"


def test_states_move_between_sharded_and_replicated(models, screenshots):
    """A single worker's state (one step taken) loads into a sharded pair, which takes
    the next step as the single worker does; the pair's state loads back into one."""
    model, opts = models["qwen3"], {"lora_r": "4"}
    ps = prompts("qwen3", screenshots)
    one = single(model, opts)
    wire.backward(one, sft(ps))
    wire.step(one, STEP)
    first = io.BytesIO()
    one.save(first)
    got = run_sharded(model, opts, ps, load=first.getvalue())
    wire.backward(one, sft(ps))
    wire.step(one, STEP)
    want = io.BytesIO()
    one.save(want)
    assert_states_close(torch.load(io.BytesIO(got["state"]), weights_only=True),
                        torch.load(io.BytesIO(want.getvalue()), weights_only=True))
    back = single(model, opts, got["state"])
    assert back.steps == 2


def states_equal(a, b):
    """Whether two state files hold the same tensors, bit for bit, and the same steps."""
    sa = statelib.parse_state(torch.load(io.BytesIO(a), weights_only=True), "a")
    sb = statelib.parse_state(torch.load(io.BytesIO(b), weights_only=True), "b")
    moments = [torch.equal(x[k], y[k]) for x, y in zip(sa.optimizer["state"].values(), sb.optimizer["state"].values())
               for k in ("exp_avg", "exp_avg_sq", "step")]
    return (sa.steps == sb.steps and len(moments) == 3 * len(sa.params) > 0 and all(moments)
            and all(torch.equal(x, y) for x, y in zip(sa.params + sa.reference, sb.params + sb.reference)))


def test_a_sharded_state_folder_resumes_anywhere(models, screenshots, tmp_path):
    """A sharded pair writes its state shard by shard (each rank its own file, with its
    half of each tensor's rows). Loaded by a new pair it resumes bit for bit (the next
    step equals the uninterrupted pair's); loaded by three sharded ranks and by one
    worker, whole, it holds the same state; espo export reads it offline."""
    model, opts = models["qwen3"], {"lora_r": "4"}
    ps = prompts("qwen3", screenshots)
    folder = str(tmp_path / "worker.state")
    straight = run_sharded(model, opts, ps, folder=folder, steps=2)
    files = sorted(os.listdir(folder))
    assert files == [".metadata", "__0_0.distcp", "__1_0.distcp", "meta.json"], files
    meta = statelib.read_meta(folder)
    assert (meta["steps"], meta["workers"]) == (1, 2)
    for key, md in statelib.safe_reader(folder).read_metadata().state_dict_metadata.items():
        rows = [c.sizes[0] for c in md.chunks]  # each rank wrote its rows (dim 0) of each tensor
        assert sum(rows) == md.size[0] and max(rows) <= (md.size[0] + 1) // 2, (key, rows)
    whole = statelib.read_whole(folder, meta)
    assert len(whole.params) == len(whole.reference) == len(whole.optimizer["state"]) > 0

    resumed = run_sharded(model, opts, ps, load=folder)
    assert states_equal(resumed["state"], straight["state"]), "the same pair resumes bit for bit"

    one = single(model, opts)
    one.load(folder)
    assert one.steps == 1 and one.sharded is False
    exported = export_cli.export_checkpoint(folder, str(tmp_path / "offline"))  # espo export's part
    assert (exported.kind, exported.step) == ("lora", 1)
    on_three = run_sharded(model, opts, ps, load=folder, world=3)
    wire.backward(one, sft(ps))
    wire.step(one, STEP)
    want = io.BytesIO()
    one.save(want)
    for got in (straight, on_three):  # one more step each: the same policy
        assert_states_close(torch.load(io.BytesIO(got["state"]), weights_only=True),
                            torch.load(io.BytesIO(want.getvalue()), weights_only=True))


def assert_split_in(folder, k):
    """Every tensor of the sharded state folder was written in k chunks of its rows."""
    for key, md in statelib.safe_reader(folder).read_metadata().state_dict_metadata.items():
        rows = [c.sizes[0] for c in md.chunks]
        assert len(rows) == k and sum(rows) == md.size[0] and max(rows) <= -(-md.size[0] // k), (key, rows)


def test_hybrid_shards_within_a_pod_and_replicates_across(models, screenshots, tmp_path):
    """Two pods of two workers, hybrid (HSDP): the step is the step one worker takes
    (the gradient norm counts each shard once, not once a pod), the workers say they
    are sharded, each tensor is split in the pod's two halves (not in four), and their
    sharded state folder loads into one worker whole, bit for bit."""
    model, opts = models["qwen3"], {}
    ps = prompts("qwen3", screenshots)
    folder = str(tmp_path / "worker.state")
    got = run_sharded(model, opts, ps, world=4, per_pod=2, mode="hybrid", end_folder=folder)
    assert_one_workers_step(got, model, opts, ps)
    assert_split_in(folder, 2)
    back = single(model, opts)
    back.load(folder)
    again = io.BytesIO()
    back.save(again)
    assert states_equal(again.getvalue(), got["state"])


def test_hybrids_pods_are_the_controllers_pods(monkeypatch):
    """A worker's group from the controller's environment knows its pod's size, the
    rows of hybrid's mesh: worker 1 of pod 1 of two pods of two is rank 3 of 4."""
    monkeypatch.setenv("ESPO_WORLD_SIZE", "2")
    monkeypatch.setenv("ESPO_RANK", "1")
    monkeypatch.setenv("MASTER_ADDR", "127.0.0.1")
    g = distlib.from_env(2, 1, "cpu")
    assert (g.rank, g.world, g.per_pod) == (3, 4, 2)
