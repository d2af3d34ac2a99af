# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""Unit tests of the torch worker on the tiny model (run by torch_test.go's
TestPythonUnitTests: python3 -m unittest discover -s tests -t .)."""

import collections
import io
import math
import os
import socket
import tempfile
import unittest

import grpc
import torch
import torch.multiprocessing as mp

from espo_worker import dist as distlib
from espo_worker import policy as policylib
from espo_worker import prompt as promptlib
from espo_worker import protocol as pb
from espo_worker import wire
from tests import ranks

# One thread, as the Go tests' workers have (torch_test.go's pyEnv): the tiny models'
# operations are too small to share, and on two busy cores a second thread spins at
# each barrier while the first waits for a core (test_hf, test_export and test_policy
# took 50.7 CPU-s with two, 18.5 with one). Set at import, it holds for the session.
torch.set_num_threads(1)


def make_prompt(step=2, stage=pb.STAGE_GUI, episode="ep-1"):
    p = pb.Prompt(episode_id=episode, step_index=step, stage=stage, instruction="any hotel in New York?")
    e = p.elements.add(id="e1", role="button", text="Search", box=[0.1, 0.2, 0.3, 0.25])
    e.attributes["group"] = "top"
    p.elements.add(id="e2", role="chip", text="4.5+", box=[0.5, 0.5, 0.6, 0.55])
    a = p.history.add(type="click", point=[0.2, 0.225], input_text="no input text", element_id="e1",
                      element_role="button", element_text="Search")
    a.element_attributes["group"] = "top"
    return p


ANSWER = "<think></think><answer>[{'action': 'click', 'point': [0.55, 0.52], 'input_text': 'no input text'}]</answer>"


def new_policy(seed=1, **opts):
    p = policylib.Policy({"pretrained": "tiny", "max_new_tokens": 12, "max_prompt_tokens": 64})
    p.configure(seed, {k: str(v) for k, v in opts.items()})
    return p


def sft_request(prompts, weight=None):
    return pb.BackwardRequest(items=[pb.Weighted(prompt=p, answer=pb.Answer(text=ANSWER),
                                                 sequence_weight=weight or 1.0 / len(prompts)) for p in prompts])


def params(p):
    return torch.cat([q.detach().reshape(-1).clone() for q in p.params])


class PromptTest(unittest.TestCase):
    def test_lines(self):
        p = make_prompt()
        self.assertEqual(promptlib.element_line(p.elements[0]), 'e1 button "Search" [0.1,0.2,0.3,0.25] group=top')
        self.assertEqual(promptlib.history_line(p.history[0]),
                         'click [0.2, 0.225] "no input text" on button "Search" group=top')
        system, user = promptlib.render(p)
        self.assertIn("GUI-agent".replace("-", " "), system)
        self.assertIn("click (point at the element)", system)
        self.assertIn("Instruction: any hotel in New York?", user)
        self.assertIn("1. click", user)
        rec = make_prompt(stage=pb.STAGE_RECOMMEND)
        rec.item.title = "Riverside Inn"
        self.assertIn("Candidate item: Riverside Inn", promptlib.render(rec)[1])
        self.assertTrue(promptlib.plain_template(p).startswith("gui|any hotel"))


class PolicyTest(unittest.TestCase):
    def test_options(self):
        p = policylib.Policy({})
        with self.assertRaises(policylib.InvalidError):
            p.configure(1, {})  # no model
        with self.assertRaises(policylib.InvalidError):
            p.configure(1, {"pretrained": "tiny", "hidden": "32"})
        with self.assertRaises(policylib.NotConfiguredError):
            wire.generate(p, pb.GenerateRequest(prompts=[make_prompt()]))
        p.configure(1, {"pretrained": "tiny", "tiny_hidden": "16"})
        self.assertIn("hidden=16", wire.describe(p).model)
        self.assertFalse(wire.describe(p).reduces_gradients)

    def test_generate_seeded_and_scored(self):
        p = new_policy()
        prompts = [make_prompt(1), make_prompt(2)]
        a = wire.generate(p, pb.GenerateRequest(prompts=prompts, samples=3, seed=9, temperature=2.0))
        b = wire.generate(p, pb.GenerateRequest(prompts=prompts[1:], samples=3, seed=9, temperature=2.0))
        self.assertEqual(a.candidates[1], b.candidates[0])
        c = wire.generate(p, pb.GenerateRequest(prompts=prompts, samples=3, seed=10, temperature=2.0))
        self.assertNotEqual(a.candidates[0], c.candidates[0])
        for cand in a.candidates:
            for s in cand.samples:
                self.assertEqual(len(s.logprobs), len(s.answer.token_ids))
                self.assertLessEqual(len(s.answer.token_ids), 12)
                self.assertTrue(all(v <= 0 for v in s.logprobs))
        capped = wire.generate(p, pb.GenerateRequest(prompts=prompts[:1], samples=2, seed=9, max_tokens=3))
        self.assertTrue(all(len(s.answer.token_ids) <= 3 for s in capped.candidates[0].samples))

    def test_backward_sft_is_cross_entropy(self):
        p = new_policy()
        prompts = [make_prompt(1), make_prompt(2, stage=pb.STAGE_POOL)]
        obj, tokens = wire.backward(p, sft_request(prompts, weight=0.25))
        got = p.gradients()
        for q in p.params:
            q.grad = None
        total = 0
        for pr in prompts:
            inputs = p.backend.prompt_inputs(pr)
            lp = p.backend.token_logprobs(inputs, p.backend.answer_ids(ANSWER))
            total = total + 0.25 * lp.sum()
        (-total).backward()
        self.assertAlmostEqual(obj, float(total.detach()), places=4)
        self.assertEqual(tokens, 2 * (len(ANSWER) + 1))
        want = p.flat_grad()
        # float32 rounding of one batched pass against two single ones: ~1e-7 of the scale
        self.assertTrue(torch.allclose(got, want, rtol=1e-5, atol=1e-6 * float(want.abs().max())))

    def test_batch_scores_each_answer_as_alone(self):
        """The tiny model's batched scoring (Backward's) gives each answer the log-probs
        token_logprobs gives it alone, whatever the lengths of the others."""
        p = new_policy()
        b = p.backend
        pairs = [(b.prompt_inputs(make_prompt(1)), b.answer_ids(ANSWER)),
                 (b.prompt_inputs(make_prompt(2, stage=pb.STAGE_POOL)), b.answer_ids("ok")),
                 (b.prompt_inputs(make_prompt(3)), b.answer_ids(ANSWER[:20]))]
        self.assertEqual(len({len(i["ids"]) + len(a) for i, a in pairs}), 3, "sequences of three lengths")
        with torch.no_grad():
            got = b.token_logprobs_batch(pairs)
            for (inputs, answer), lp in zip(pairs, got):
                self.assertTrue(torch.allclose(lp, b.token_logprobs(inputs, answer), rtol=0, atol=1e-5))

    def test_bad_weights_leave_the_accumulator(self):
        p = new_policy()
        req = pb.BackwardRequest(items=[pb.Weighted(prompt=make_prompt(), answer=pb.Answer(token_ids=[1, 2, 257]),
                                                    token_weights=[0.5, 0.5, 0.5]),
                                        pb.Weighted(prompt=make_prompt(), answer=pb.Answer(token_ids=[1, 2]),
                                                    token_weights=[1.0])])
        with self.assertRaises(policylib.InvalidError):
            wire.backward(p, req)
        self.assertEqual(float(p.gradients().abs().sum()), 0.0)
        with self.assertRaises(policylib.InvalidError):
            wire.logprobs(p, pb.LogProbsRequest(items=[pb.Scored(prompt=make_prompt(), answer=pb.Answer(token_ids=[999]))]))

    def test_step_is_the_protocols_adamw(self):
        p = new_policy()
        theta = params(p)
        m = torch.zeros_like(theta, dtype=torch.float64)
        v = torch.zeros_like(m)
        th = theta.double()
        lr, wd, b1, b2, eps, clip = 0.01, 0.1, 0.8, 0.95, 1e-6, 0.5
        for t in (1, 2):
            wire.backward(p, sft_request([make_prompt(t)]))
            g = p.gradients().double()
            norm, steps = wire.step(p, pb.StepRequest(learning_rate=lr, weight_decay=wd, beta1=b1, beta2=b2, epsilon=eps,
                                                max_grad_norm=clip))
            self.assertEqual(steps, t)
            self.assertAlmostEqual(norm, float(g.norm()), places=4)
            g = g * min(1.0, clip / (norm + 1e-6))
            m = b1 * m + (1 - b1) * g
            v = b2 * v + (1 - b2) * g * g
            th = th * (1 - lr * wd)
            th = th - lr * (m / (1 - b1 ** t)) / ((v / (1 - b2 ** t)).sqrt() + eps)
            self.assertTrue(torch.allclose(params(p).double(), th, atol=1e-6), "step %d" % t)
        self.assertEqual(float(p.gradients().abs().sum()), 0.0)

    def test_given_gradient_step_equals_accumulated(self):
        a, b = new_policy(3), new_policy(3)
        wire.backward(a, sft_request([make_prompt(1)]))
        g = a.gradients()
        wire.step(a, pb.StepRequest(learning_rate=0.01, max_grad_norm=1.0))
        wire.step(b, pb.StepRequest(learning_rate=0.01, max_grad_norm=1.0, gradient=g.tolist()))
        self.assertTrue(torch.equal(params(a), params(b)))
        with self.assertRaises(policylib.InvalidError):
            wire.step(b, pb.StepRequest(learning_rate=0.01, gradient=[1.0]))

    def test_reference_snapshot(self):
        p = new_policy()
        pr = make_prompt()
        item = pb.Scored(prompt=pr, answer=pb.Answer(text=ANSWER))
        before = wire.logprobs(p, pb.LogProbsRequest(items=[item], reference=True)).items[0]
        self.assertEqual(list(before.current), list(before.reference))
        wire.backward(p, sft_request([pr]))
        wire.step(p, pb.StepRequest(learning_rate=0.05))
        after = wire.logprobs(p, pb.LogProbsRequest(items=[item], reference=True)).items[0]
        self.assertEqual(list(after.reference), list(before.reference))
        self.assertGreater(sum(after.current), sum(before.current))  # SFT made the answer likelier
        p.snapshot_reference()
        snap = wire.logprobs(p, pb.LogProbsRequest(items=[item], reference=True)).items[0]
        self.assertEqual(list(snap.reference), list(after.current))

    def test_reference_only_skips_the_current_policy(self):
        p = new_policy(2)
        pr = make_prompt()
        wire.backward(p, sft_request([pr]))
        wire.step(p, pb.StepRequest(learning_rate=0.05))  # current and reference now differ
        sampled = wire.generate(p, pb.GenerateRequest(prompts=[pr], samples=2, seed=3)).candidates[0].samples
        items = [pb.Scored(prompt=pr, answer=pb.Answer(text=ANSWER))] + [pb.Scored(prompt=pr, answer=s.answer) for s in sampled]
        full = wire.logprobs(p, pb.LogProbsRequest(items=items, reference=True)).items
        only = wire.logprobs(p, pb.LogProbsRequest(items=items, reference=True, reference_only=True)).items
        self.assertNotEqual(list(full[0].current), list(full[0].reference))
        for f, o in zip(full, only):
            self.assertEqual(list(o.current), [])
            self.assertEqual(list(o.token_ids), list(f.token_ids))
            self.assertEqual(list(o.reference), list(f.reference))
            self.assertEqual(len(o.reference), len(o.token_ids))

    def test_save_load_restores_everything(self):
        p = new_policy(4)
        for t in (1, 2):
            wire.backward(p, sft_request([make_prompt(t)]))
            wire.step(p, pb.StepRequest(learning_rate=0.02))
        p.snapshot_reference()
        wire.backward(p, sft_request([make_prompt(3)]))
        wire.step(p, pb.StepRequest(learning_rate=0.02))
        with tempfile.TemporaryDirectory() as d:
            path = os.path.join(d, "state.pt")
            with open(path, "wb") as f:
                p.save(f)
            q = policylib.Policy({})
            self.assertEqual(q.load(path), 3)
            with self.assertRaises(FileNotFoundError):
                q.load(os.path.join(d, "missing"))
            with open(os.path.join(d, "bad"), "wb") as f:
                f.write(b"not a state")
            with self.assertRaises(IOError):
                q.load(os.path.join(d, "bad"))
        req = pb.GenerateRequest(prompts=[make_prompt()], samples=2, seed=5)
        self.assertEqual(wire.generate(p, req), wire.generate(q, req))
        item = pb.Scored(prompt=make_prompt(), answer=pb.Answer(text=ANSWER))
        self.assertEqual(wire.logprobs(p, pb.LogProbsRequest(items=[item], reference=True)),
                         wire.logprobs(q, pb.LogProbsRequest(items=[item], reference=True)))
        for x in (p, q):
            wire.backward(x, sft_request([make_prompt(4)]))
            wire.step(x, pb.StepRequest(learning_rate=0.02, weight_decay=0.01))
        self.assertTrue(torch.equal(params(p), params(q)))


class ActivityTest(unittest.TestCase):
    """The drain after SIGTERM: the worker serves until the trainer's Release, or, when
    no Release comes (a dead trainer), until no call of the worker protocol has come
    for the quiet period; health checks do not count."""

    @staticmethod
    def handler_for(activity, method, body):
        details = collections.namedtuple("Details", "method")(method)
        return activity.intercept_service(
            lambda _: grpc.unary_unary_rpc_method_handler(body), details).unary_unary

    def test_without_release_it_waits_for_quiet(self):
        from espo_worker import server
        now = [0.0]
        activity = server.Activity(clock=lambda: now[0])
        seen = []

        def step(request, context):
            now[0] += 10.0  # a long step
            seen.append(activity.quiet_left(2.0))
            return request
        self.handler_for(activity, "/espo.worker.v1.Worker/Backward", step)("req", None)
        self.assertEqual(seen, [2.0], "a call in flight keeps the worker")
        waits = []

        def wait(seconds):
            waits.append(seconds)
            now[0] += seconds
            if len(waits) == 1:  # a health check while draining
                self.handler_for(activity, "/grpc.health.v1.Health/Check", lambda r, c: r)("ping", None)
            return False
        activity.wait_released(2.0, wait)
        self.assertEqual(waits, [2.0], "quiet 2 s after the last call; the health check does not count")
        self.assertEqual(now[0], 12.0)

    def test_release_ends_the_wait_at_once(self):
        from espo_worker import server
        activity = server.Activity(clock=lambda: 0.0)
        self.handler_for(activity, "/espo.worker.v1.Worker/Release", lambda r, c: r)("req", None)
        calls = []
        activity.wait_released(60.0, lambda s: calls.append(s) or False)
        self.assertEqual(calls, [], "released: no wait")

    def test_servicer_answers_release(self):
        from espo_worker import server
        self.assertEqual(server.Servicer(None).Release(pb.ReleaseRequest(), None), pb.ReleaseResponse())


def _free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def _rank(rank, world, port, out):
    torch.set_num_threads(1)
    group = distlib.Group(rank, world, "127.0.0.1", port, "gloo", timeout_s=60)
    p = policylib.Policy({"pretrained": "tiny", "max_new_tokens": 8, "max_prompt_tokens": 48}, dist=group)
    p.configure(11 + rank, {})  # different seeds: Configure broadcasts rank 0's weights
    # rank r back-propagates its share of the batch; weights are normalised over all of it
    wire.backward(p, sft_request([make_prompt(1 + rank)], weight=0.5))
    norm, _ = wire.step(p, pb.StepRequest(learning_rate=0.01, max_grad_norm=0.3))
    buf = io.BytesIO()
    torch.save({"params": params(p), "norm": torch.tensor(norm, dtype=torch.float64),
                "reduces": wire.describe(p).reduces_gradients}, buf)
    out[rank] = buf.getvalue()


class DistributedTest(unittest.TestCase):
    def test_two_ranks_sum_gradients(self):
        """Two gloo ranks, each with half the batch, take the step one worker takes
        with the whole batch: Configure broadcasts rank 0's weights and Step
        all-reduces with SUM. To float32 rounding, 1e-5 of the largest weight: the
        single worker scores both prompts in one batch, each rank one."""
        port = _free_port()
        with mp.Manager() as mgr:
            out = mgr.dict()
            ranks.start(_rank, (2, port, out), 2)
            got = [torch.load(io.BytesIO(out[r]), weights_only=True) for r in range(2)]
        single = policylib.Policy({"pretrained": "tiny", "max_new_tokens": 8, "max_prompt_tokens": 48})
        single.configure(11, {})
        wire.backward(single, sft_request([make_prompt(1), make_prompt(2)], weight=0.5))
        norm, _ = wire.step(single, pb.StepRequest(learning_rate=0.01, max_grad_norm=0.3))
        for g in got:
            self.assertTrue(g["reduces"])
            self.assertTrue(math.isclose(g["norm"].item(), norm, rel_tol=1e-5))
            self.assertTrue(torch.allclose(g["params"], params(single), rtol=0, atol=1e-5 * float(params(single).abs().max())))
        self.assertTrue(torch.equal(got[0]["params"], got[1]["params"]))


if __name__ == "__main__":
    unittest.main()


def test_a_prompt_longer_than_the_engines_context_names_the_setting():
    """A prompt that with its answer cannot fit the rollout engine's context is refused
    before the engine sees it, naming spec.model.rollout.maxModelLen and the length it
    needs (INVALID_ARGUMENT: no restart helps); one that fits passes."""
    p = policylib.Policy({"pretrained": "tiny", "max_new_tokens": 8, "max_prompt_tokens": 48})
    p.configure(3, {})
    p.config = p.config.replace({"vllm_max_model_len": 64})
    p.check_engine_context([{"ids": [1] * 56}], 8)
    try:
        p.check_engine_context([{"ids": [1] * 10}, {"ids": [1] * 57}], 8)
    except policylib.InvalidError as e:
        assert "spec.model.rollout.maxModelLen" in str(e) and "at least 65" in str(e), e
    else:
        raise AssertionError("a prompt of 57 tokens and an answer of 8 passed a context of 64")
