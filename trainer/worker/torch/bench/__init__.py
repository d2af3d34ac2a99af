# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The step benchmark's Python side (BenchmarkESPOStepBesideTRL in ../bench_test.go):
prime.py readies the model both sides train, trl_step.py times TRL's GRPOTrainer on it.
docs/worker-protocol.md, "Step time beside TRL", says how to run it and what it reports."""
