# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The security contract of the server: every call of the Worker service needs the
job's token, Save and Load stay in the allowed folders, and state files are read with
torch.load(weights_only=True). The Go tests run the same checks against the worker
process (torch_test.go, through trainer/worker/workertest)."""

import contextlib
import io
import json
import os
import tempfile
import unittest

import grpc
import torch

from espo_worker import auth, server, wire
from espo_worker import folders as folderslib
from espo_worker import policy as policylib
from espo_worker import protocol as pb
from espo_worker import state as statelib

TOKEN = "3f" * 32
OTHER_TOKEN = "a7" * 32
TINY = {"pretrained": "tiny", "max_new_tokens": "8", "max_prompt_tokens": "48"}
SERVICE = pb.DESCRIPTOR.services_by_name["Worker"]


def bearer(token):
    return (("authorization", "Bearer " + token),)


# The callers the worker must refuse: no token, another job's, and the token in a
# form other than one "Bearer <token>".
STRANGERS = {
    "no token": (),
    "another job's token": bearer(OTHER_TOKEN),
    "the token, not Bearer": (("authorization", TOKEN),),
    "an empty Bearer": (("authorization", "Bearer "),),
    "two tokens": (("authorization", "Bearer " + OTHER_TOKEN), ("authorization", "Bearer " + TOKEN)),
    "a prefix of the token": bearer(TOKEN[:-1]),
}


class Worker:
    """A worker server of a fresh tiny policy on a free loopback port, and a channel
    to it; allowed are its folders, stderr what it printed."""

    def __init__(self, allowed=(), activity=None, token=TOKEN):
        self.stderr = io.StringIO()
        with contextlib.redirect_stderr(self.stderr):
            self.server, port = server.new_server(policylib.Policy({}), "127.0.0.1:0", threads=4, activity=activity,
                                                  token=token, insecure_no_auth=token is None, allowed=allowed)
        self.channel = grpc.insecure_channel("127.0.0.1:%d" % port)

    def close(self):
        self.channel.close()
        self.server.stop(None).wait()

    def call(self, method, request=None, metadata=()):
        """Calls method of the Worker service; returns the response, or the RpcError."""
        m = SERVICE.methods_by_name[method]
        if request is None:
            request = getattr(pb, m.input_type.name)()
        fn = self.channel.unary_unary("/%s/%s" % (SERVICE.full_name, method),
                                      request_serializer=lambda r: r.SerializeToString(),
                                      response_deserializer=getattr(pb, m.output_type.name).FromString)
        try:
            with contextlib.redirect_stderr(self.stderr):
                return fn(request, metadata=metadata, timeout=60)
        except grpc.RpcError as e:
            return e


def code(result):
    return result.code() if isinstance(result, grpc.RpcError) else grpc.StatusCode.OK


class TokenTest(unittest.TestCase):
    def setUp(self):
        self.dir = tempfile.TemporaryDirectory()
        self.w = Worker(allowed=[self.dir.name])
        self.written = os.path.join(self.dir.name, "written-by-a-stranger")
        self.requests = {"Configure": pb.ConfigureRequest(seed=1, options=TINY),
                         "Save": pb.SaveRequest(path=self.written),
                         "Load": pb.LoadRequest(path=os.path.join(self.dir.name, "missing")),
                         "Step": pb.StepRequest(learning_rate=1)}

    def tearDown(self):
        self.w.close()
        self.dir.cleanup()

    def test_every_method_refuses_strangers(self):
        """Every method of the service descriptor refuses each stranger with
        UNAUTHENTICATED, quoting no token, and does nothing it was asked."""
        self.assertGreaterEqual(len(SERVICE.methods), 12)
        for name, md in STRANGERS.items():
            for m in SERVICE.methods:
                got = self.w.call(m.name, self.requests.get(m.name), md)
                self.assertEqual(code(got), grpc.StatusCode.UNAUTHENTICATED, "%s: %s" % (name, m.name))
                self.assertNotIn(TOKEN, got.details())
                self.assertNotIn(OTHER_TOKEN, got.details())
        self.assertFalse(os.path.exists(self.written), "a stranger's Save wrote its file")
        self.assertEqual(code(self.w.call("Generate", metadata=bearer(TOKEN))), grpc.StatusCode.FAILED_PRECONDITION,
                         "a stranger's Configure configured the worker")

    def test_the_token_is_served_and_never_printed(self):
        for m in SERVICE.methods:
            got = self.w.call(m.name, self.requests.get(m.name), bearer(TOKEN))
            self.assertNotEqual(code(got), grpc.StatusCode.UNAUTHENTICATED, m.name)
        self.assertTrue(os.path.exists(self.written), "Save with the token wrote nothing")
        self.assertNotIn(TOKEN, self.w.stderr.getvalue())
        self.assertNotIn(OTHER_TOKEN, self.w.stderr.getvalue())

    def test_health_is_open(self):
        check = self.w.channel.unary_unary("/grpc.health.v1.Health/Check")
        self.assertEqual(check(b"", timeout=60), b"\x08\x01")

    def test_refused_calls_are_no_activity(self):
        now = [0.0]
        activity = server.Activity(clock=lambda: now[0])
        w = Worker(activity=activity)
        try:
            now[0] = 60.0
            self.assertEqual(code(w.call("Info", metadata=bearer(OTHER_TOKEN))), grpc.StatusCode.UNAUTHENTICATED)
            self.assertEqual(activity.quiet_left(60.0), 0.0, "a refused call counted as the trainer's")
            self.assertEqual(code(w.call("Release", metadata=bearer(OTHER_TOKEN))), grpc.StatusCode.UNAUTHENTICATED)
            self.assertFalse(activity.stop_now.is_set(), "a stranger's Release released the worker")
            self.assertEqual(code(w.call("Info", metadata=bearer(TOKEN))), grpc.StatusCode.OK)
            self.assertEqual(activity.quiet_left(60.0), 60.0)
        finally:
            w.close()


class TokenFileTest(unittest.TestCase):
    def test_token_files(self):
        with tempfile.TemporaryDirectory() as d:
            def write(name, content):
                p = os.path.join(d, name)
                with open(p, "w") as f:
                    f.write(content)
                return p
            self.assertEqual(auth.read_token_file(write("good", TOKEN + "\n")), TOKEN)
            for name, content in {"empty": "", "blank": " \n", "short": TOKEN[:32], "long": TOKEN + "ab",
                                  "not hex": "zz" * 32, "two lines": TOKEN[:32] + "\n" + TOKEN[32:]}.items():
                p = write(name, content)
                with self.assertRaises(auth.TokenError, msg=name) as cm:
                    auth.read_token_file(p)
                self.assertIn(p, str(cm.exception))
                if content.strip():
                    self.assertNotIn(content.strip(), str(cm.exception))
            with self.assertRaises(auth.TokenError):
                auth.read_token_file(os.path.join(d, "missing"))

    def test_no_token_needs_insecure_no_auth(self):
        with self.assertRaisesRegex(auth.TokenError, "--token-file.*--insecure-no-auth"):
            auth.token_from("", False)
        self.assertIsNone(auth.token_from("", True))
        with self.assertRaisesRegex(auth.TokenError, "drop one"):
            auth.token_from("/some/file", True)
        with self.assertRaises(ValueError):
            server.new_server(policylib.Policy({}), "127.0.0.1:0")


class Layout:
    """An allowed folder and one outside it with a state file; inside the allowed
    folder, a link to the outside folder, one to the outside state and a dangling one."""

    def __init__(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.allowed = os.path.join(self.tmp.name, "allowed")
        self.outside = os.path.join(self.tmp.name, "outside")
        os.mkdir(self.allowed)
        os.mkdir(self.outside)
        with open(os.path.join(self.outside, "state"), "wb") as f:
            f.write(b"a state outside")
        os.symlink(self.outside, os.path.join(self.allowed, "out"))
        os.symlink(os.path.join(self.outside, "state"), os.path.join(self.allowed, "state-link"))
        os.symlink(os.path.join(self.outside, "later"), os.path.join(self.allowed, "dangling"))

    def escapes(self):
        a = self.allowed
        return {"../ out of the folder": a + "/../escaped", "../ to the outside folder": a + "/../outside/state",
                "an absolute path elsewhere": os.path.join(self.outside, "state"), "the root": "/",
                "the allowed folder itself": a, "a linked folder out of it": os.path.join(a, "out", "state"),
                "a linked file out of it": os.path.join(a, "state-link"),
                "a dangling link out of it": os.path.join(a, "dangling"),
                "under a dangling link": os.path.join(a, "dangling", "state"), "a prefix of the folder's name": a + "x/state",
                "a file of the system": "/etc/passwd"}

    def untouched(self):
        with open(os.path.join(self.outside, "state"), "rb") as f:
            return sorted(os.listdir(self.outside)) == ["state"] and f.read() == b"a state outside" and \
                sorted(os.listdir(self.tmp.name)) == ["allowed", "outside"]


class FoldersTest(unittest.TestCase):
    def setUp(self):
        self.l = Layout()

    def tearDown(self):
        self.l.tmp.cleanup()

    def test_escapes_are_refused(self):
        f = folderslib.Folders([self.l.allowed])
        for name, p in self.l.escapes().items():
            for op in ("save", "load"):
                with self.assertRaises(folderslib.PathNotAllowedError, msg="%s of %s" % (op, name)) as cm:
                    f.confine(op, p)
                self.assertIn(p, str(cm.exception))
                self.assertIn("allowed folder", str(cm.exception))
        self.assertEqual(f.confine("save", self.l.allowed + "/sub/../state"), os.path.join(self.l.allowed, "state"))

    def test_a_linked_folder_admits_its_files(self):
        link = os.path.join(self.l.tmp.name, "link")
        os.symlink(self.l.allowed, link)
        self.assertEqual(folderslib.Folders([link]).confine("load", os.path.join(self.l.allowed, "x")),
                         os.path.join(self.l.allowed, "x"))

    def test_no_folder_refuses_everything(self):
        with self.assertRaisesRegex(folderslib.PathNotAllowedError, "no allowed folders.*ESPO_WORKER_PATHS"):
            folderslib.Folders([]).confine("save", os.path.join(self.l.allowed, "state"))

    def test_split(self):
        self.assertEqual(folderslib.split("/checkpoints::/initial-checkpoint:"), ["/checkpoints", "/initial-checkpoint"])

    def test_server_refuses_escapes(self):
        """Save, Load, Export and Configure with a load path answer PERMISSION_DENIED
        for every escape and touch nothing outside; inside the folder they work (and
        Export refuses the tiny model, which is no Hugging Face model)."""
        w = Worker(allowed=[self.l.allowed])
        try:
            md = bearer(TOKEN)
            self.assertEqual(code(w.call("Configure", pb.ConfigureRequest(seed=1, options=TINY), md)), grpc.StatusCode.OK)
            for name, p in self.l.escapes().items():
                for method, req in (("Save", pb.SaveRequest(path=p)), ("Load", pb.LoadRequest(path=p)),
                                    ("Export", pb.ExportRequest(path=p)),
                                    ("Configure", pb.ConfigureRequest(seed=1, options=TINY, load_path=p))):
                    got = w.call(method, req, md)
                    self.assertEqual(code(got), grpc.StatusCode.PERMISSION_DENIED, "%s of %s" % (method, name))
                    self.assertIn(p, got.details())
            self.assertTrue(self.l.untouched(), "a refused call wrote outside the allowed folder")
            self.assertEqual(code(w.call("Configure", pb.ConfigureRequest(seed=1, options=TINY), md)), grpc.StatusCode.OK)
            inside = self.l.allowed + "/sub/../state"
            self.assertEqual(code(w.call("Save", pb.SaveRequest(path=inside), md)), grpc.StatusCode.OK)
            self.assertEqual(code(w.call("Load", pb.LoadRequest(path=os.path.join(self.l.allowed, "state")), md)),
                             grpc.StatusCode.OK)
            tiny = w.call("Export", pb.ExportRequest(path=os.path.join(self.l.allowed, "policy")), md)
            self.assertEqual(code(tiny), grpc.StatusCode.INVALID_ARGUMENT)
            self.assertIn("no Hugging Face model", tiny.details())
        finally:
            w.close()


class Planted:
    """Unpickling it creates the file at path: what a planted state file could do to
    a worker that unpickled it."""

    def __init__(self, path):
        self.path = path

    def __reduce__(self):
        return (open, (self.path, "w"))


class WeightsOnlyTest(unittest.TestCase):
    def assert_load_refused(self, d, path, marker):
        """A worker allowed d refuses to Load path with DATA_LOSS, and the object planted
        there never ran (marker was not created); returns the answer."""
        w = Worker(allowed=[d])
        try:
            got = w.call("Load", pb.LoadRequest(path=path), bearer(TOKEN))
        finally:
            w.close()
        self.assertEqual(code(got), grpc.StatusCode.DATA_LOSS)
        self.assertFalse(os.path.exists(marker), "Load unpickled an arbitrary object")
        return got

    def test_a_planted_object_is_not_unpickled(self):
        with tempfile.TemporaryDirectory() as d:
            state, marker = os.path.join(d, "state"), os.path.join(d, "pwned")
            torch.save({"format": statelib.STATE_FORMAT, "meta": Planted(marker)}, state)
            self.assert_load_refused(d, state, marker)

    def test_a_planted_object_in_a_sharded_folder_is_not_unpickled(self):
        """DCP unpickles a sharded state folder's .metadata; the worker's reader admits
        only DCP's own metadata classes."""
        import pickle
        with tempfile.TemporaryDirectory() as d:
            folder, marker = os.path.join(d, "worker.state"), os.path.join(d, "pwned")
            os.makedirs(folder)
            p = policylib.Policy({"pretrained": "tiny", "max_new_tokens": 8, "max_prompt_tokens": 48})
            p.configure(3, {})
            meta = statelib.folder_meta(p.options, 0, {"state": {}, "param_groups": []}, 2)
            with open(os.path.join(folder, statelib.META_FILE), "w") as f:
                json.dump(meta, f)
            with open(os.path.join(folder, ".metadata"), "wb") as f:
                pickle.dump(Planted(marker), f)
            got = self.assert_load_refused(d, folder, marker)
            self.assertIn("not part of a checkpoint's metadata", got.details())

    def test_a_v1_state_still_loads(self):
        """A state of the format before v2 (Python floats inside) is restored where the
        torch's safe unpickler reads it."""
        p = policylib.Policy({"pretrained": "tiny", "max_new_tokens": 8, "max_prompt_tokens": 48})
        p.configure(3, {})
        wire.step(p, pb.StepRequest(learning_rate=0.01, gradient=[0.1] * sum(t.numel() for t in p.params)))
        v1 = {"format": statelib.STATE_FORMAT_V1, "options": p.options, "params": [t.detach().clone() for t in p.params],
              "reference": [t.detach().clone() for t in p.reference], "optimizer": p.optimizer.state_dict(), "steps": p.steps}
        read, statelib.read_state = statelib.read_state, lambda path: v1
        try:
            q = policylib.Policy({})
            self.assertEqual(q.load("v1-state"), 1)
        finally:
            statelib.read_state = read
        req = pb.GenerateRequest(prompts=[pb.Prompt(episode_id="e", instruction="hotel")], samples=2, seed=5)
        self.assertEqual(wire.generate(p, req), wire.generate(q, req))


if __name__ == "__main__":
    unittest.main()
