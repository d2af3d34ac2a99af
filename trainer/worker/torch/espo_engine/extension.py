# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The vLLM worker extension (LLM(worker_extension_cls=...)) that loads pushed weights."""

from collections.abc import Iterable, Sequence


class WeightLoader:
    """Mixed into vLLM's worker class: self is the worker, self.model_runner its runner."""

    def espo_load(self, path: str, tied_cpu_head: bool) -> int:
        """Loads the full tensors of the safetensors file at path into the model in
        place (vLLM's reload_weights: checkpoint-format names, each fused layer
        re-assembled and re-processed from all of its parts) and returns their count.

        vLLM's CPU backend computes the output head from a prepacked copy of its
        weight; a head tied to the input embedding is not re-processed by the reload
        and would keep the old one, so it is packed again from the new weight."""
        from safetensors.torch import load_file
        tensors = load_file(path)
        self.reload_weights(weights_iterator=iter(tensors.items()), is_checkpoint_format=True)
        self._repack_tied_head(tied_cpu_head)
        return len(tensors)

    def espo_load_ipc(self, handles: Iterable[tuple[str, Sequence[object]]]) -> int:
        """espo_load of tensors that are CUDA IPC handles of the worker's (name, the
        rebuild arguments of torch's reduce_tensor), rebuilt on this worker's device
        (argument 6 is the device index, as vLLM's own IPC weight transfer sets it)."""
        from torch.multiprocessing.reductions import rebuild_cuda_tensor
        index = self.device.index if self.device.index is not None else 0
        tensors = []
        for name, args in handles:
            args = list(args)
            args[6] = index
            tensors.append((name, rebuild_cuda_tensor(*args)))
        self.reload_weights(weights_iterator=iter(tensors), is_checkpoint_format=True)
        return len(tensors)

    def _repack_tied_head(self, tied_cpu_head: bool) -> None:
        if tied_cpu_head:
            from vllm.model_executor.layers.utils import dispatch_cpu_unquantized_gemm
            head = getattr(self.model_runner.model, "lm_head", None)
            if head is None and hasattr(self.model_runner.model, "language_model"):
                head = getattr(self.model_runner.model.language_model, "lm_head", None)
            if head is not None:
                dispatch_cpu_unquantized_gemm(head, remove_weight=False)
