# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""Reads runs back through MLflow's own Python client, as a user of MLflow sees them.

Usage:
    readback.py TRACKING_URI run RUN_ID [METRIC_KEY...]
    readback.py TRACKING_URI find EXPERIMENT TAG VALUE [METRIC_KEY...]

Prints a JSON list of runs: the run RUN_ID; or each active run of the experiment
named EXPERIMENT whose tag TAG is VALUE (none where there is no such experiment).
Each run is an object: its id, status, end time, params and tags, and the history
of each METRIC_KEY (value as Python's repr, so that nan and inf survive JSON; step;
timestamp in milliseconds).
"""

import json
import sys

from mlflow.entities import Run
from mlflow.tracking import MlflowClient


def read(client: MlflowClient, run: Run, keys: list[str]) -> dict[str, object]:
    run_id = run.info.run_id
    history = {
        key: [
            {"value": repr(m.value), "step": m.step, "timestamp": m.timestamp} for m in client.get_metric_history(run_id, key)
        ]
        for key in keys
    }
    return {
        "id": run_id,
        "status": run.info.status,
        "end_time": run.info.end_time,
        "params": run.data.params,
        "tags": run.data.tags,
        "history": history,
    }


def main() -> None:
    uri, mode, *args = sys.argv[1:]
    client = MlflowClient(tracking_uri=uri)
    if mode == "run":
        run_id, *keys = args
        runs = [client.get_run(run_id)]
    elif mode == "find":
        name, tag, value, *keys = args
        if "`" in tag or "'" in value:
            sys.exit(f"cannot search for tag {tag!r} = {value!r}: it holds a quote")
        experiment = client.get_experiment_by_name(name)
        runs = [] if experiment is None else list(client.search_runs([experiment.experiment_id], f"tags.`{tag}` = '{value}'"))
    else:
        sys.exit(f"unknown mode {mode!r}: want run or find")
    json.dump([read(client, run, keys) for run in runs], sys.stdout)


if __name__ == "__main__":
    main()
