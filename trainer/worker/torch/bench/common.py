# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""What both sides of the step benchmark share: the prompts (protocol Prompts that
bench_test.go wrote, base64, with their demonstrated answers), their chat messages as
the worker makes them for a text model (espo_worker.prompt.render; trl_step.py checks
that TRL's token ids of them are the worker's), and the GUI-R1 reward of TRL's side.

The data file: {"prompts": [{"prompt": base64 Prompt, "answer": the demonstrated answer,
"wrong": another answer of the episode}], "steps": optimizer steps, "group": G,
"tokens": answer length}.
"""

import base64
import json
import re

from espo_worker import prompt as promptlib
from espo_worker import protocol as pb


def load(path):
    with open(path) as f:
        d = json.load(f)
    for it in d["prompts"]:
        it["message"] = pb.Prompt.FromString(base64.b64decode(it["prompt"]))
    return d


def messages(prompt):
    """The chat of a Prompt, as the worker's HFBackend builds it for a text model."""
    system, user = promptlib.render(prompt)
    return [{"role": "system", "content": system}, {"role": "user", "content": user}]


def pad_id(tok):
    """The one token the primed model pads an answer with up to the answer length:
    white space, which the trainer's parser (espo.ParseAnswer) trims."""
    ids = tok(" ", add_special_tokens=False)["input_ids"]
    if len(ids) != 1:
        raise ValueError("a space is %d tokens, want 1" % len(ids))
    return ids[0]


# A GUI-R1 answer with its keys in the order espo.FormatAnswer writes them (the
# trainer's espo.ParseAnswer takes any order; the primed model learns this one).
_ANSWER = re.compile(r"^\s*<think>.*?</think>\s*<answer>\s*\[\s*\{\s*'action'\s*:\s*'([^']*)'\s*,\s*"
                     r"'point'\s*:\s*\[\s*-?[0-9.]+\s*,\s*-?[0-9.]+\s*\]\s*,\s*'input_text'\s*:\s*'[^']*'\s*\}\s*,?\s*\]"
                     r"\s*</answer>\s*$", re.S)


def action_of(text):
    """The action type of a GUI-R1 answer, or None when the text is not one."""
    m = _ANSWER.match(text)
    return m.group(1) if m else None


def reward(completion, answer):
    """A GUI-R1 reward in the shape of the trainer's (espo.Rewarder): -0.5 for a text
    that is no answer; 0.5 for the format, plus 0.5 for the demonstrated action type
    (else -0.5), plus 0.5 more for the demonstrated answer exactly."""
    kind = action_of(completion)
    if kind is None:
        return -0.5
    r = 0.5 + (0.5 if kind == action_of(answer) else -0.5)
    if completion.strip() == answer.strip():
        r += 0.5
    return r
