# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""Reads a run back through MLflow's own Python client, as a user of MLflow sees it.

Usage: readback.py TRACKING_URI RUN_ID [METRIC_KEY...]

Prints one JSON object: the run's status, end time, params and tags, and the
history of each METRIC_KEY (value as Python's repr, so that nan and inf survive
JSON; step; timestamp in milliseconds).
"""

import json
import sys

from mlflow.tracking import MlflowClient


def main() -> None:
    uri, run_id, *keys = sys.argv[1:]
    client = MlflowClient(tracking_uri=uri)
    run = client.get_run(run_id)
    history = {
        key: [
            {"value": repr(m.value), "step": m.step, "timestamp": m.timestamp} for m in client.get_metric_history(run_id, key)
        ]
        for key in keys
    }
    json.dump(
        {
            "status": run.info.status,
            "end_time": run.info.end_time,
            "params": run.data.params,
            "tags": run.data.tags,
            "history": history,
        },
        sys.stdout,
    )


if __name__ == "__main__":
    main()
