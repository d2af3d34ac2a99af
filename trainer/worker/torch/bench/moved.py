# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""How far each ESPO run of the step benchmark moved the model: |θ_end - θ_0| / |θ_0|
over the trainable tensors, θ_0 the model folder's weights and θ_end those of a torch
worker state (Save) written after the run. Usage:

    python3 -m bench.moved MODEL STATE...

prints a JSON list, one figure per state, in order.
"""

import json
import sys

import torch
import transformers

from .trl_step import flat


def main():
    model, states = sys.argv[1], sys.argv[2:]
    base = transformers.AutoModelForCausalLM.from_pretrained(model, local_files_only=True, dtype=torch.float32)
    init = flat(p for p in base.parameters() if p.requires_grad)
    out = []
    for path in states:
        st = torch.load(path, map_location="cpu", weights_only=True)
        out.append(float((flat(st["params"]) - init).norm() / init.norm()))
    print(json.dumps(out))


if __name__ == "__main__":
    main()
