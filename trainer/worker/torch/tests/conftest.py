# Copyright 2026 The espo-operator Authors. Licensed under the Apache License, Version 2.0.
"""The fixtures the Hugging Face tests share: tiny random models of real
architectures (tests.random_models) and two screenshots."""

import pytest
from PIL import Image

from tests import random_models

ARCHS = ("qwen3", "qwen2_5_vl")


@pytest.fixture(scope="session")
def models(tmp_path_factory):
    return random_models.build_each(tmp_path_factory.mktemp("models"), ARCHS)


@pytest.fixture(scope="session")
def screenshots(tmp_path_factory):
    """Two screenshots of one size that differ in what they show."""
    root = tmp_path_factory.mktemp("screens")
    paths = []
    for i, colour in enumerate([(230, 230, 230), (20, 90, 200)]):
        img = Image.new("RGB", (112, 168), colour)
        img.paste((200 - 150 * i, 40, 40), (10 + 40 * i, 20, 60 + 40 * i, 60))
        paths.append(str(root / ("screen-%d.png" % i)))
        img.save(paths[-1])
    return paths
