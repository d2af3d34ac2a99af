# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""TRL's side of the step benchmark: trl.GRPOTrainer on the benchmark's model and
prompts, one optimizer step per copy of the episode, run one step at a time when the
benchmark says so, so that its steps alternate with ESPO's. The settings are the ESPO
side's where TRL has them:

- G = num_generations candidates of up to max_completion_length tokens per prompt,
  temperature 1, top_p 1, top_k 0; every prompt of the episode in one optimizer
  step, in order (shuffle_dataset False);
- AdamW (torch) with the trainer's betas (0.9, 0.999), eps 1e-8 and weight decay 0.01,
  a constant learning rate, gradient clipping at 1;
- beta 0.01 with TRL's k3 KL against a reference copy, clipping epsilon 0.2 / 0.3,
  loss_type grpo (a mean over tokens, then over sequences: the trainer's
  seq-mean-token-mean), rewards scaled within each group, one iteration per batch;
- float32 on CPU, dropout off (disable_dropout), no gradient checkpointing, no
  evaluation, logging, saving or reporting.

--layout picks how the step's prompts x G candidates are batched:

- micro (as a user who knows TRL sets it up on a CPU): per_device_train_batch_size =
  G, gradient_accumulation_steps = prompts, steps_per_generation 1: each micro-batch
  is one prompt's G answers, generated with Hugging Face generate, scored by the
  reference and trained, so no prompt is padded to another's length;
- batch (the layout of the benchmark's first version): per_device_train_batch_size =
  prompts x G, gradient_accumulation_steps 1: one generate of every candidate, each
  prompt left-padded to the longest;
- vllm: TRL's own vLLM integration (use_vllm, vllm_mode colocate: vLLM in this
  process), per_device_train_batch_size = G, gradient_accumulation_steps = prompts and
  TRL's default steps_per_generation (= gradient_accumulation_steps): one vLLM call
  samples the whole step, the weights synced to vLLM first; the importance-sampling
  correction as the ESPO side's (token_truncate at 2). It needs vLLM and TRL in one
  environment (see docs/worker-protocol.md, "Step time beside TRL").

The protocol with the benchmark (bench_test.go): this process prints lines that start
with "BENCH " and a JSON object on its standard output: {"ready": {...}} once the
trainer is built, {"step": {...}} at the end of each optimizer step, {"result": {...}}
at the end; between steps, and before the first, it waits for a line on its standard
input ("go" for the next step, "done" after the last). The reward is common.reward of
each completion against the step's demonstrated answer; its own time is measured
inside it. A step record holds its seconds (from "go" to the step's end), the
seconds of sampling (_generate: tokenizing, the weight sync with vLLM, generation),
of the weight sync alone, of the reference's log-probs, of the policy's log-probs of
the samples without gradient (vllm only: the importance-sampling correction), of the
reward function, the completion tokens (every token up to and with the stop token),
the token positions the policy and the reference computed (every forward pass's rows
times columns, padding included, counted by forward pre-hooks; vLLM's own passes are
not), the loss, the mean reward and |dθ|/|θ| of the step. Usage:

    python3 -m bench.trl_step --model DIR --data FILE --lr LR --threads T --layout micro|batch|vllm
"""

import argparse
import json
import os
import sys
import tempfile
import time

import torch


def flat(params):
    return torch.cat([p.detach().reshape(-1).double().cpu() for p in params])


def emit(kind, value):
    sys.stdout.write("BENCH " + json.dumps({kind: value}) + "\n")
    sys.stdout.flush()


def wait():
    """Blocks until the benchmark's next line; returns it ("" when stdin closed)."""
    return sys.stdin.readline().strip()


def config(trl, a, out, n, G, length, steps, max_prompt):
    common = dict(
        output_dir=out, use_cpu=True, bf16=False, fp16=False, gradient_checkpointing=False,
        model_init_kwargs={"dtype": torch.float32}, disable_dropout=True,
        num_generations=G, num_iterations=1,
        max_completion_length=length, temperature=1.0, top_p=1.0, top_k=0,
        learning_rate=a.lr, lr_scheduler_type="constant", warmup_steps=0, optim="adamw_torch",
        adam_beta1=0.9, adam_beta2=0.999, adam_epsilon=1e-8, weight_decay=0.01, max_grad_norm=1.0,
        beta=0.01, epsilon=0.2, epsilon_high=0.3, loss_type="grpo", scale_rewards="group",
        max_steps=steps, shuffle_dataset=False, seed=7, dataloader_num_workers=0,
        report_to="none", logging_strategy="no", save_strategy="no", eval_strategy="no", disable_tqdm=True,
        log_completions=False)
    if a.layout == "micro":
        return trl.GRPOConfig(per_device_train_batch_size=G, gradient_accumulation_steps=n, steps_per_generation=1,
                              use_vllm=False, **common)
    if a.layout == "batch":
        return trl.GRPOConfig(per_device_train_batch_size=n * G, gradient_accumulation_steps=1, use_vllm=False,
                              **common)
    return trl.GRPOConfig(per_device_train_batch_size=G, gradient_accumulation_steps=n, use_vllm=True,
                          vllm_mode="colocate", vllm_max_model_length=max_prompt + length,
                          vllm_importance_sampling_correction=True, vllm_importance_sampling_mode="token_truncate",
                          vllm_importance_sampling_clip_max=2.0, **common)


def main():
    ap = argparse.ArgumentParser(prog="python3 -m bench.trl_step")
    ap.add_argument("--model", required=True)
    ap.add_argument("--data", required=True)
    ap.add_argument("--lr", type=float, required=True)
    ap.add_argument("--threads", type=int, required=True)
    ap.add_argument("--layout", choices=("micro", "batch", "vllm"), required=True)
    a = ap.parse_args()
    torch.set_num_threads(a.threads)

    import datasets
    import transformers
    import trl

    from espo_worker import backends

    from . import common
    d = common.load(a.data)
    G, length, steps = d["group"], d["tokens"], d["steps"]
    tok = transformers.AutoTokenizer.from_pretrained(a.model, local_files_only=True)
    rows = [{"prompt": common.messages(it["message"]), "answer": it["answer"]} for it in d["prompts"]]
    n = len(rows)

    backend = backends.HFBackend(a.model, "cpu", dtype="float32")  # the worker's prompt token ids
    ours = [backend.prompt_inputs(it["message"])["ids"] for it in d["prompts"]]
    del backend

    zero = {"reward_seconds": 0.0, "tokens": 0, "rewards": [], "generate_seconds": 0.0, "sync_seconds": 0.0,
            "reference_seconds": 0.0, "scoring_seconds": 0.0, "encoded": {}}
    counters = dict(zero)

    def gui_reward(completions, answer, completion_ids, **_):
        start = time.perf_counter()
        out = [common.reward(c if isinstance(c, str) else c[-1]["content"], x) for c, x in zip(completions, answer)]
        counters["reward_seconds"] += time.perf_counter() - start
        counters["tokens"] += sum(len(ids) for ids in completion_ids)
        counters["rewards"].extend(out)
        return out

    # A Dataset with a fingerprint of its own: datasets hashes the rows otherwise, which
    # fails (pickling pyarrow's MonthDayNano) with the numpy of vLLM's environment.
    table = datasets.table.InMemoryTable.from_pylist(rows * steps)
    train = datasets.Dataset(table, fingerprint="espo-bench-%d-%d" % (n, steps))

    with tempfile.TemporaryDirectory() as out:
        cfg = config(trl, a, out, n, G, length, steps, max(len(p) for p in ours))
        built = time.perf_counter()
        trainer = trl.GRPOTrainer(model=a.model, reward_funcs=gui_reward, args=cfg, train_dataset=train,
                                  processing_class=tok)
        built = time.perf_counter() - built
        model, ref = trainer.model, trainer.ref_model
        theta0 = flat(model.parameters())

        # Where the step's time goes: sampling (_generate: tokenizing, syncing vLLM's
        # weights, generating), the weight sync alone, the reference's log-probs and
        # the policy's without gradient (_get_per_token_logps_and_entropies; with one
        # iteration per batch TRL computes the latter only for vLLM's correction).
        phase = ["loss"]

        def timed(fn, key):
            def call(*args, **kw):
                start, before = time.perf_counter(), phase[0]
                phase[0] = key
                try:
                    return fn(*args, **kw)
                finally:
                    phase[0] = before
                    counters[key + "_seconds"] += time.perf_counter() - start
            return call

        def logps(fn):
            def call(m, *args, **kw):
                if torch.is_grad_enabled():
                    return fn(m, *args, **kw)
                return timed(fn, "reference" if m is ref else "scoring")(m, *args, **kw)
            return call

        trainer._generate = timed(trainer._generate, "generate")
        trainer._get_per_token_logps_and_entropies = logps(trainer._get_per_token_logps_and_entropies)
        if a.layout == "vllm":
            trainer.vllm_generation.sync_weights = timed(trainer.vllm_generation.sync_weights, "sync")

        def count(module, args, kwargs):
            x = kwargs.get("input_ids")
            if x is None and args:
                x = args[0]
            if torch.is_tensor(x) and x.dim() >= 2:
                enc = counters["encoded"]
                enc[phase[0]] = enc.get(phase[0], 0) + int(x.shape[0] * x.shape[1])

        for m in (model, ref):
            if m is not None:
                m.register_forward_pre_hook(count, with_kwargs=True)

        theirs = trainer._tokenize_prompts([r["prompt"] for r in rows])[0]
        match = [list(x) for x in theirs] == ours

        class Stepper(transformers.TrainerCallback):
            def go(self):
                if wait() not in ("go", "done"):
                    raise SystemExit("bench.trl_step: the benchmark went away")
                counters.update({k: (type(v)() if isinstance(v, (list, dict)) else v) for k, v in zero.items()})
                self.loss0 = float(getattr(trainer, "_tr_loss", torch.tensor(float("nan"))))
                self.before = flat(model.parameters())
                self.start = time.perf_counter()

            def on_train_begin(self, args, state, control, **kw):
                self.go()

            def on_step_end(self, args, state, control, **kw):
                seconds = time.perf_counter() - self.start
                after = flat(model.parameters())
                rewards = counters["rewards"]
                emit("step", {
                    "seconds": seconds, "reward_seconds": counters["reward_seconds"],
                    "generate_seconds": counters["generate_seconds"], "sync_seconds": counters["sync_seconds"],
                    "reference_seconds": counters["reference_seconds"], "scoring_seconds": counters["scoring_seconds"],
                    "completion_tokens": counters["tokens"], "candidates": len(rewards), "encoded": counters["encoded"],
                    "loss": float(getattr(trainer, "_tr_loss", torch.tensor(float("nan")))) - self.loss0,
                    "mean_reward": sum(rewards) / max(len(rewards), 1),
                    "param_change": float((after - self.before).norm() / self.before.norm()),
                })
                self.go()

        trainer.add_callback(Stepper())
        emit("ready", {"threads": torch.get_num_threads(), "omp_num_threads": os.environ.get("OMP_NUM_THREADS", ""),
                       "parameters": theta0.numel(), "prompts": n, "candidates": n * G,
                       "prompt_tokens": sum(len(p) for p in ours), "prompt_ids_match": match,
                       "padded_prompt_tokens": n * G * max(len(p) for p in ours),
                       "build_seconds": built, "trl": trl.__version__, "transformers": transformers.__version__,
                       "torch": torch.__version__, "layout": a.layout,
                       "batch": [cfg.per_device_train_batch_size, cfg.gradient_accumulation_steps,
                                 cfg.steps_per_generation, cfg.generation_batch_size]})
        trainer.train()
        theta = flat(model.parameters())

    emit("result", {"trl_param_change": float((theta - theta0).norm() / theta0.norm())})


if __name__ == "__main__":
    main()
