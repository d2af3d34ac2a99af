# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The model folder check (espo_worker.modelfiles): a folder with every file a model
needs passes, and each missing file is named; over the protocol, Configure refuses an
incomplete folder with FAILED_PRECONDITION and modelfiles.PREFIX, before transformers
is imported (these tests run without it)."""

import json
import os
import tempfile
import unittest

import grpc

from espo_worker import modelfiles
from espo_worker import protocol as pb
from tests.test_server import TOKEN, Worker, bearer, code

# A causal LM as save_pretrained writes it: config, weights, a fast tokenizer whose
# config carries the chat template.
COMPLETE_LM = {
    "config.json": {"model_type": "qwen2"},
    "model.safetensors": "weights",
    "tokenizer.json": {"model": {}},
    "tokenizer_config.json": {"chat_template": "{{ messages }}"},
}


def write(d, files):
    for name, content in files.items():
        with open(os.path.join(d, name), "w") as f:
            f.write(content if isinstance(content, str) else json.dumps(content))


class MissingFilesTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.TemporaryDirectory()
        self.d = self.tmp.name

    def tearDown(self):
        self.tmp.cleanup()

    def folder(self, files, without=()):
        write(self.d, {k: v for k, v in files.items() if k not in without})
        return modelfiles.missing_files(self.d)

    def test_a_complete_causal_lm_passes(self):
        self.assertEqual(self.folder(COMPLETE_LM), [])
        modelfiles.check(self.d)

    def test_each_missing_file_is_named(self):
        got = self.folder(COMPLETE_LM, without=("config.json", "model.safetensors", "tokenizer.json",
                                                "tokenizer_config.json"))
        self.assertEqual(len(got), 4, got)
        self.assertEqual(got[0], "config.json")
        self.assertIn("model.safetensors", got[1])
        self.assertIn("tokenizer.json", got[2])
        self.assertIn("chat template", got[3])

    def test_slow_tokenizer_files_and_a_template_file_count(self):
        files = dict(COMPLETE_LM, **{"vocab.json": {}, "merges.txt": "", "chat_template.jinja": "{{ x }}"})
        self.assertEqual(self.folder(files, without=("tokenizer.json", "tokenizer_config.json")), [])

    def test_vocab_json_without_merges_is_no_tokenizer(self):
        files = dict(COMPLETE_LM, **{"vocab.json": {}})
        self.assertEqual(len(self.folder(files, without=("tokenizer.json",))), 1)

    def test_every_shard_of_an_index_must_be_there(self):
        index = {"weight_map": {"a": "model-00001-of-00002.safetensors", "b": "model-00002-of-00002.safetensors",
                                "c": "model-00001-of-00002.safetensors"}}
        files = dict(COMPLETE_LM, **{"model.safetensors.index.json": index, "model-00001-of-00002.safetensors": "w"})
        got = self.folder(files, without=("model.safetensors",))
        self.assertEqual(got, ["model-00002-of-00002.safetensors (a shard model.safetensors.index.json names)"])

    def test_a_vlm_needs_its_image_processor(self):
        files = dict(COMPLETE_LM, **{"config.json": {"model_type": "qwen2_vl", "vision_config": {}}})
        self.assertEqual(len(self.folder(files)), 1)
        self.assertIn("preprocessor_config.json", self.folder(files)[0])
        write(self.d, {"preprocessor_config.json": {}})
        self.assertEqual(modelfiles.missing_files(self.d), [])

    def test_the_error_names_the_path_and_the_files(self):
        self.folder(COMPLETE_LM, without=("config.json",))
        with self.assertRaises(modelfiles.ModelIncompleteError) as cm:
            modelfiles.check(self.d)
        msg = str(cm.exception)
        self.assertTrue(msg.startswith(modelfiles.PREFIX + "the model folder " + self.d + " lacks config.json"), msg)
        self.assertEqual(cm.exception.missing, ["config.json"])

    def test_an_absolute_path_that_is_no_folder_is_refused(self):
        absent = os.path.join(self.d, "absent")
        with self.assertRaises(modelfiles.ModelIncompleteError) as cm:
            modelfiles.resolve(absent)
        self.assertIsInstance(cm.exception, modelfiles.ModelNotAFolderError)
        self.assertTrue(str(cm.exception).startswith(modelfiles.PREFIX + "no folder " + absent), str(cm.exception))

    def test_a_relative_name_is_looked_up_in_the_cache(self):
        """tests/test_refusal.py finds one there; an empty cache holds none."""
        with self.assertRaises(modelfiles.ModelNotAFolderError) as cm:
            modelfiles.resolve("some-org/some-model-that-is-not-a-folder-here", cache_dir=self.d)
        self.assertEqual(cm.exception.metadata["cache"], self.d)


class ConfigureRefusesTest(unittest.TestCase):
    def test_configure_answers_failed_precondition_with_the_prefix(self):
        with tempfile.TemporaryDirectory() as d:
            write(d, {k: v for k, v in COMPLETE_LM.items() if k != "model.safetensors"})
            w = Worker()
            try:
                got = w.call("Configure", pb.ConfigureRequest(seed=1, options={"pretrained": d}), bearer(TOKEN))
            finally:
                w.close()
        self.assertEqual(code(got), grpc.StatusCode.FAILED_PRECONDITION)
        self.assertTrue(got.details().startswith(modelfiles.PREFIX + "the model folder " + d + " lacks the weights"),
                        got.details())
