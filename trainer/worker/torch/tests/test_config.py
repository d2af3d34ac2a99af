# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
import argparse
import unittest

from espo_worker.config import HF_MAX_NEW_TOKENS, TINY_MAX_NEW_TOKENS, TINY_MAX_PROMPT_TOKENS, InvalidError, WorkerConfig


def parsed(argv, environ):
    ap = argparse.ArgumentParser()
    WorkerConfig.add_arguments(ap, environ)
    return WorkerConfig.from_args(ap.parse_args(argv))


class WorkerConfigTest(unittest.TestCase):
    def test_flags_win_over_the_environment_which_wins_over_the_defaults(self):
        self.assertEqual(parsed([], {}), WorkerConfig())
        env = {"ESPO_WORKER_LORA_R": "8", "ESPO_WORKER_MODEL": "/models/q", "ESPO_WORKER_GRADIENT_CHECKPOINTING": "true",
               "ESPO_WORKER_LORA_DROPOUT": "0.05"}
        c = parsed([], env)
        self.assertEqual((c.lora_r, c.pretrained, c.gradient_checkpointing, c.lora_dropout), (8, "/models/q", True, 0.05))
        c = parsed(["--lora-r", "16", "--model", "tiny", "--dtype", "float32"], env)
        self.assertEqual((c.lora_r, c.pretrained, c.dtype), (16, "tiny", "float32"))
        with self.assertRaises(SystemExit):
            parsed(["--dtype", "float8"], {})

    def test_configure_options_are_parsed_and_checked(self):
        base = WorkerConfig(pretrained="/models/q", lora_r=4)
        c = base.with_options({"lora_alpha": "32", "vllm_enforce_eager": "TRUE", "vllm_gpu_memory_utilization": "0.3",
                               "rollout_engine": "vllm"})
        self.assertEqual((c.pretrained, c.lora_r, c.lora_alpha, c.vllm_enforce_eager, c.vllm_gpu_memory_utilization),
                         ("/models/q", 4, 32, True, 0.3))
        self.assertTrue(c.vllm)
        for options, refused in [({"lora_r": "eight"}, "lora_r='eight': want an integer"),
                                 ({"lora_dropout": "some"}, "lora_dropout='some': want a number"),
                                 ({"hidden": "32"}, "unknown option 'hidden'"),
                                 ({"rollout_engine": "sglang"}, "rollout_engine='sglang'")]:
            with self.assertRaisesRegex(InvalidError, refused):
                base.with_options(options)
        with self.assertRaisesRegex(InvalidError, "no model"):
            WorkerConfig().with_options({})

    def test_zero_asks_for_the_models_default(self):
        self.assertEqual(WorkerConfig(pretrained="/models/q").answer_cap, HF_MAX_NEW_TOKENS)
        self.assertEqual(WorkerConfig(pretrained="/models/q").prompt_cap, 0)
        tiny = WorkerConfig(pretrained="tiny")
        self.assertEqual((tiny.answer_cap, tiny.prompt_cap), (TINY_MAX_NEW_TOKENS, TINY_MAX_PROMPT_TOKENS))
        self.assertEqual(WorkerConfig(pretrained="tiny", max_new_tokens=12).answer_cap, 12)

    def test_a_state_files_settings_round_trip(self):
        c = WorkerConfig(pretrained="tiny", max_new_tokens=8)
        self.assertEqual(WorkerConfig.from_mapping(c.options()), c)
        # A state written before a setting existed holds fewer: the others take their defaults.
        self.assertEqual(WorkerConfig.from_mapping({"pretrained": "tiny", "max_new_tokens": 8}), c)
        with self.assertRaisesRegex(InvalidError, "unknown option 'hidden'"):
            WorkerConfig.from_mapping({"hidden": 32})


if __name__ == "__main__":
    unittest.main()
