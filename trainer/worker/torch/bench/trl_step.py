# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""TRL's side of the step benchmark: trl.GRPOTrainer on the benchmark's model and
prompts, one optimizer step per copy of the episode, timed from on_step_begin to
on_step_end of a TrainerCallback. The settings are the ESPO side's where TRL has them:

- generation with Hugging Face generate (no vLLM), G = num_generations candidates of
  up to max_completion_length tokens per prompt, temperature 1, top_p 1, top_k 0;
- one optimizer step per generation batch (gradient_accumulation_steps 1, one
  iteration), per_device_train_batch_size = prompts x G: every prompt of the episode
  in one step, in order (shuffle_dataset False);
- AdamW (torch) with the trainer's betas (0.9, 0.999), eps 1e-8 and weight decay 0.01,
  a constant learning rate, gradient clipping at 1;
- beta 0.01 with TRL's k3 KL against a reference copy, clipping epsilon 0.2 / 0.3,
  loss_type grpo (a mean over tokens, then over sequences: the trainer's
  seq-mean-token-mean), rewards scaled within each group;
- float32 on CPU, no gradient checkpointing, no evaluation, logging, saving or
  reporting.

The reward is common.reward of each completion against the step's demonstrated
answer; its own time is measured inside it. Usage:

    python3 -m bench.trl_step --model DIR --data FILE --lr LR --threads T [--espo-state FILE]

prints one JSON object: per step its seconds, the reward function's seconds, the
seconds of sampling and of the reference's log-probs, the
completion tokens (every token up to and with the stop token), the loss, the mean
reward and |dθ|/|θ| of the step; the thread count, the parameter count, prompts,
candidates and prompt tokens per step (and as TRL's batch holds them, each candidate's
prompt left-padded to the longest), whether TRL's prompt token ids are the worker's,
and |θ_end - θ_0|/|θ_0| of TRL's run and, from the worker's saved state, of ESPO's.
"""

import argparse
import json
import os
import tempfile
import time

import torch


def flat(params):
    return torch.cat([p.detach().reshape(-1).double().cpu() for p in params])


def main():
    ap = argparse.ArgumentParser(prog="python3 -m bench.trl_step")
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--espo-state", default="", help="the worker's state after the ESPO run (Save)")
    a = ap.parse_args()
    torch.set_num_threads(a.threads)

    import datasets
    import transformers
    import trl

    from espo_worker import models

    from . import common
    d = common.load(a.data)
    G, length, steps = d["group"], d["tokens"], d["steps"]
    tok = transformers.AutoTokenizer.from_pretrained(a.model, local_files_only=True)
    rows = [{"prompt": common.messages(it["message"]), "answer": it["answer"]} for it in d["prompts"]]
    n = len(rows)

    counters = {"reward_seconds": 0.0, "tokens": 0, "rewards": [], "generate_seconds": 0.0, "reference_seconds": 0.0}

    def gui_reward(completions, answer, completion_ids, **_):
        start = time.perf_counter()
        out = [common.reward(c if isinstance(c, str) else c[-1]["content"], x) for c, x in zip(completions, answer)]
        counters["reward_seconds"] += time.perf_counter() - start
        counters["tokens"] += sum(len(ids) for ids in completion_ids)
        counters["rewards"].extend(out)
        return out

    with tempfile.TemporaryDirectory() as out:
        cfg = trl.GRPOConfig(
            output_dir=out, use_cpu=True, bf16=False, fp16=False, gradient_checkpointing=False,
            model_init_kwargs={"dtype": torch.float32},
            per_device_train_batch_size=n * G, gradient_accumulation_steps=1, num_generations=G, num_iterations=1,
            max_completion_length=length, temperature=1.0, top_p=1.0, top_k=0, use_vllm=False,
            learning_rate=a.lr, lr_scheduler_type="constant", warmup_steps=0, optim="adamw_torch",
            adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8, weight_decay=0.01, max_grad_norm=1.0,
            beta=0.01, epsilon=0.2, epsilon_high=0.3, loss_type="grpo", scale_rewards="group",
            max_steps=steps, shuffle_dataset=False, seed=7, dataloader_num_workers=0,
            report_to="none", logging_strategy="no", save_strategy="no", eval_strategy="no", disable_tqdm=True,
            log_completions=False)
        trainer = trl.GRPOTrainer(model=a.model, reward_funcs=gui_reward, args=cfg,
                                  train_dataset=datasets.Dataset.from_list(rows * steps), processing_class=tok)
        model = trainer.model
        theta0 = flat(model.parameters())

        # Where the step's time goes: sampling (_generate: tokenizing and generate) and
        # the reference's log-probs (_get_per_token_logps_and_entropies without
        # gradient; with one iteration per batch TRL computes no old log-probs).
        def timed(fn, key):
            def call(*args, **kw):
                start = time.perf_counter()
                try:
                    return fn(*args, **kw)
                finally:
                    if key is not None or not torch.is_grad_enabled():
                        counters[key or "reference_seconds"] += time.perf_counter() - start
            return call
        trainer._generate = timed(trainer._generate, "generate_seconds")
        trainer._get_per_token_logps_and_entropies = timed(trainer._get_per_token_logps_and_entropies, None)

        backend = models.HFBackend(a.model, "cpu", dtype="float32")  # the worker's prompt token ids
        ours = [backend.prompt_inputs(it["message"])["ids"] for it in d["prompts"]]
        del backend
        theirs = trainer._tokenize_prompts([r["prompt"] for r in rows])[0]
        match = [list(x) for x in theirs] == ours

        records = []

        class Timer(transformers.TrainerCallback):
            def on_step_begin(self, args, state, control, **kw):
                counters.update(reward_seconds=0.0, tokens=0, rewards=[], generate_seconds=0.0, reference_seconds=0.0)
                self.loss0 = float(getattr(trainer, "_tr_loss", torch.tensor(float("nan"))))
                self.before = flat(model.parameters())
                self.start = time.perf_counter()

            def on_step_end(self, args, state, control, **kw):
                seconds = time.perf_counter() - self.start
                after = flat(model.parameters())
                rewards = counters["rewards"]
                records.append({
                    "seconds": seconds, "reward_seconds": counters["reward_seconds"],
                    "generate_seconds": counters["generate_seconds"], "reference_seconds": counters["reference_seconds"],
                    "completion_tokens": counters["tokens"],
                    "loss": float(getattr(trainer, "_tr_loss", torch.tensor(float("nan")))) - self.loss0,
                    "mean_reward": sum(rewards) / max(len(rewards), 1),
                    "param_change": float((after - self.before).norm() / self.before.norm()),
                })

        trainer.add_callback(Timer())
        trainer.train()
        theta = flat(model.parameters())

    result = {
        "steps": records, "threads": torch.get_num_threads(), "omp_num_threads": os.environ.get("OMP_NUM_THREADS", ""),
        "parameters": theta0.numel(), "prompts": n, "candidates": n * G,
        "prompt_tokens": sum(len(p) for p in ours), "prompt_ids_match": match,
        "padded_prompt_tokens": n * G * max(len(p) for p in ours),
        "trl_param_change": float((theta - theta0).norm() / theta0.norm()),
        "espo_param_change": 0.0, "trl": trl.__version__, "transformers": transformers.__version__,
    }
    if a.espo_state:
        st = torch.load(a.espo_state, map_location="cpu", weights_only=True)
        base = transformers.AutoModelForCausalLM.from_pretrained(a.model, local_files_only=True, dtype=torch.float32)
        init = flat(p for p in base.parameters() if p.requires_grad)
        result["espo_param_change"] = float((flat(st["params"]) - init).norm() / init.norm())
    print(json.dumps(result))


if __name__ == "__main__":
    main()
