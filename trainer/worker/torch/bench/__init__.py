# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The step benchmark's Python side (BenchmarkESPOStepBesideTRL in ../bench_test.go):
prime.py readies the model every side trains, worker.py is the torch worker with the
benchmark's counters, trl_step.py runs TRL's GRPOTrainer one step a turn, moved.py
says how far our runs moved the model. docs/worker-protocol.md, "Step time beside
TRL", says how to run it and what it reports."""
