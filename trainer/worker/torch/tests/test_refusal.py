# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The worker's permanent refusals (espo_worker.refusal): a model that is no folder
(a Hugging Face hub id where a folder belongs), LoRA targets the model does not have,
an attention implementation whose package is not installed, a model_type transformers
does not know. Each carries its reason and the facts the Go trainer writes its
message from; over the protocol they travel as a google.rpc.ErrorInfo in the
status's details. The Go side of the contract is tested in
trainer/worker/torch/refusal_test.go, against this worker's process."""

import importlib.util
import json
import os
import shutil

import grpc
import pytest

from espo_worker import backends, modelfiles, refusal
from espo_worker import protocol as pb
from tests.test_hf import hf_policy
from tests.test_modelfiles import COMPLETE_LM, write
from tests.test_server import TOKEN, Worker, bearer, code

HUB_ID = "Qwen/Qwen2.5-0.5B-Instruct"
# The modules LoRA can adapt in the tests' tiny Qwen3: its linear layers' last names.
QWEN3_LINEAR = ["down_proj", "gate_proj", "k_proj", "lm_head", "o_proj", "q_proj", "up_proj", "v_proj"]


def test_a_hub_id_on_the_claim_is_no_folder(tmp_path):
    """With spec.model.weights the trainer sends the id under the claim's mount: an
    absolute path, never looked up in the cache."""
    path = os.path.join(str(tmp_path), HUB_ID)
    with pytest.raises(modelfiles.ModelNotAFolderError) as e:
        modelfiles.resolve(path)
    assert e.value.reason == refusal.MODEL_NOT_A_FOLDER
    assert e.value.code == refusal.FAILED_PRECONDITION
    assert e.value.metadata == {"model": path, "folder": path}
    # what a trainer that does not read the reason reads: a ModelIncomplete refusal
    assert str(e.value).startswith(modelfiles.PREFIX + "no folder " + path), str(e.value)


def test_a_hub_id_not_in_the_cache_is_no_folder(tmp_path, monkeypatch):
    cache = str(tmp_path / "hub")
    os.makedirs(cache)
    monkeypatch.chdir(tmp_path)
    with pytest.raises(modelfiles.ModelNotAFolderError) as e:
        modelfiles.resolve(HUB_ID, cache_dir=cache)
    assert e.value.metadata == {"model": HUB_ID, "folder": os.path.join(str(tmp_path), HUB_ID), "cache": cache}
    assert "never downloads" in str(e.value)


def test_a_model_id_in_the_cache_is_its_snapshot(tmp_path):
    """A relative name that is no folder is a model id the worker reads offline from
    its Hugging Face cache, as spec.model.pretrained's documentation says."""
    cache = tmp_path / "hub"
    repo = cache / ("models--" + HUB_ID.replace("/", "--"))
    snapshot = repo / "snapshots" / ("0" * 40)
    os.makedirs(snapshot)
    os.makedirs(repo / "refs")
    (repo / "refs" / "main").write_text("0" * 40)
    write(str(snapshot), COMPLETE_LM)
    assert modelfiles.resolve(HUB_ID, cache_dir=str(cache)) == str(snapshot)


def test_a_folder_is_itself(tmp_path):
    write(str(tmp_path), COMPLETE_LM)
    assert modelfiles.resolve(str(tmp_path)) == str(tmp_path)


def test_the_refusal_travels_as_an_error_info(tmp_path):
    """Configure answers FAILED_PRECONDITION with modelfiles.PREFIX, as before, and
    the reason and its facts in the status's details (grpc-status-details-bin)."""
    path = os.path.join(str(tmp_path), HUB_ID)
    w = Worker()
    try:
        got = w.call("Configure", pb.ConfigureRequest(seed=1, options={"pretrained": path}), bearer(TOKEN))
    finally:
        w.close()
    assert code(got) == grpc.StatusCode.FAILED_PRECONDITION
    assert got.details().startswith(modelfiles.PREFIX), got.details()
    details = dict(got.trailing_metadata())[refusal.DETAILS_KEY]
    status = refusal.Status.FromString(details)
    assert status.code == grpc.StatusCode.FAILED_PRECONDITION.value[0] and status.message == got.details()
    info = refusal.error_info(details)
    assert info is not None and info.domain == refusal.DOMAIN and info.reason == refusal.MODEL_NOT_A_FOLDER
    assert dict(info.metadata) == {"model": path, "folder": path}


def test_lora_targets_the_model_lacks_are_refused_naming_what_it_has(models):
    with pytest.raises(backends.LoRATargetsError) as e:
        hf_policy(models["qwen3"], lora_r=2, lora_targets="c_attn,wq")
    assert e.value.reason == refusal.LORA_TARGET_MODULES_NOT_FOUND
    assert e.value.code == refusal.INVALID_ARGUMENT
    assert e.value.metadata == {"missing": "c_attn,wq", "available": ",".join(QWEN3_LINEAR)}


def test_lora_targets_of_which_one_matches_still_train(models):
    """peft adapts the targets the model has and refuses only when none matches; the
    worker does not refuse more than peft does."""
    p = hf_policy(models["qwen3"], lora_r=2, lora_targets="q_proj,wq")
    assert p.backend.lora


def test_a_refusal_lists_at_most_max_listed_names():
    names = ["m%03d" % i for i in range(refusal.MAX_LISTED + 5)] * 2
    listed, omitted = refusal.listed(reversed(names))
    assert listed.split(",") == sorted(set(names))[:refusal.MAX_LISTED] and omitted == 5


@pytest.mark.skipif(importlib.util.find_spec("flash_attn") is not None, reason="flash_attn is installed here")
def test_flash_attention_without_its_package_is_refused(models):
    with pytest.raises(backends.AttnUnavailableError) as e:
        hf_policy(models["qwen3"], attn_implementation="flash_attention_2")
    assert e.value.reason == refusal.ATTN_IMPLEMENTATION_UNAVAILABLE
    assert e.value.code == refusal.INVALID_ARGUMENT
    assert e.value.metadata == {"implementation": "flash_attention_2", "package": "flash_attn", "available": "sdpa,eager"}


def test_an_attention_implementation_that_runs_is_no_refusal(models):
    assert hf_policy(models["qwen3"], attn_implementation="eager").backend is not None


def test_a_model_type_transformers_does_not_know_is_refused(models, tmp_path):
    d = str(tmp_path / "unknown")
    shutil.copytree(models["qwen3"], d)
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    cfg.update(model_type="espo_unknown", architectures=["EspoUnknownForCausalLM"])
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    with pytest.raises(modelfiles.ModelUnsupportedError) as e:
        hf_policy(d)
    assert e.value.reason == refusal.MODEL_UNSUPPORTED
    assert e.value.metadata["folder"] == d
    assert e.value.metadata["found"].startswith("EspoUnknownForCausalLM (model_type espo_unknown, which transformers ")
    assert "AutoModelForCausalLM" in e.value.metadata["supported"]


def test_an_unsupported_architecture_carries_its_reason(models, tmp_path):
    """The refusal of an architecture the worker cannot train (test_hf) has its reason too."""
    d = str(tmp_path / "classifier")
    shutil.copytree(models["qwen3"], d)
    with open(os.path.join(d, "config.json")) as f:
        cfg = json.load(f)
    cfg["architectures"] = ["Qwen3ForSequenceClassification"]
    with open(os.path.join(d, "config.json"), "w") as f:
        json.dump(cfg, f)
    with pytest.raises(modelfiles.ModelUnsupportedError) as e:
        hf_policy(d)
    assert e.value.reason == refusal.MODEL_UNSUPPORTED
    assert e.value.metadata["found"] == "Qwen3ForSequenceClassification (model_type qwen3)"
