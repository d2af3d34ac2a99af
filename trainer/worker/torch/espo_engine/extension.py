# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The vLLM worker extension (LLM(worker_extension_cls=...)) that loads pushed weights."""


class WeightLoader:
    """Mixed into vLLM's worker class: self is the worker, self.model_runner its runner."""

    def espo_load(self, path, tied_cpu_head):
        """Loads the full tensors of the safetensors file at path into the model in
        place (vLLM's reload_weights: checkpoint-format names, each fused layer
        re-assembled and re-processed from all of its parts) and returns their count.

        vLLM's CPU backend computes the output head from a prepacked copy of its
        weight; a head tied to the input embedding is not re-processed by the reload
        and would keep the old one, so it is packed again from the new weight."""
        from safetensors.torch import load_file
        tensors = load_file(path)
        self.reload_weights(weights_iterator=iter(tensors.items()), is_checkpoint_format=True)
        if tied_cpu_head:
            from vllm.model_executor.layers.utils import dispatch_cpu_unquantized_gemm
            head = getattr(self.model_runner.model, "lm_head", None)
            if head is None and hasattr(self.model_runner.model, "language_model"):
                head = getattr(self.model_runner.model.language_model, "lm_head", None)
            if head is not None:
                dispatch_cpu_unquantized_gemm(head, remove_weight=False)
        return len(tensors)
