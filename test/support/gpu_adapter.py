# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""What the GPU tests share: the Vulkan adapter LiteRT selects (or a skip saying why there is
none), and a log sink that keeps their output quiet."""

import os

import pytest

from support.common import gpu_probe


@pytest.fixture(scope="module", name="adapter")
def gpu_adapter():
    """The adapter LiteRT selects here; skips the module when there is none (a test module
    imports it to use it as its ``adapter``)."""
    found, why_not = gpu_probe()
    assert found is not None or why_not, "the GPU works but LiteRT did not log its adapter"
    if found is None:
        if os.environ.get("DENSE_PERCEPTION_REQUIRE_GPU") == "1":  # make test-gpu after setup
            pytest.fail(f"a Vulkan adapter was set up but LiteRT's GPU backend fails: {why_not}")
        pytest.skip(f"no Vulkan GPU adapter here ({why_not}); make test-gpu sets up lavapipe")
    return found


def quiet(_):
    """A log sink that drops the message."""
    pass

