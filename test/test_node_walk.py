# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The node reaches core through a narrow entry: followed with tools/checks/node_walk.py (every
call of the package's functions that is handed the node's ``Settings``, from
``Perception.__init__``), the settings reach the node, the model's loading and the wiring only
(at most five modules, coming back to one at most once); the node's ROS parts (cameras,
odometry, parameters) are handed their records and never the settings
(``core.wiring.derived.node_setup`` derives them once for all of them)."""

import pytest

from support.common import DA3_TEST_MODEL
from tools.checks.node_walk import walk

pytestmark = [pytest.mark.ros, pytest.mark.timeout(120)]

MAX_ROOMS, MAX_RE_ENTRIES = 5, 1
PARTS = ("dense_perception.ros.camera_channel", "dense_perception.ros.odometry_input",
         "dense_perception.ros.outputs", "dense_perception.ros.parameters")


@pytest.mark.parametrize("values", [
    {},
    {"depth_scale_source": "reference_depth"},
], ids=["ground_plane", "reference_depth"])
def test_one_camera(values):
    result = walk({"model_path": DA3_TEST_MODEL, **values})
    assert result.visits[0] == "dense_perception.ros.perception"
    assert "dense_perception.core.pipeline" in result.visits  # the profile saw the model load
    assert result.rooms <= MAX_ROOMS, " > ".join(result.visits)
    assert result.re_entries <= MAX_RE_ENTRIES, " > ".join(result.visits)
    assert not set(PARTS) & set(result.visits), " > ".join(result.visits)


def test_the_cameras_take_their_setup_made_once():
    """Two cameras: each channel is handed its CameraSetup; only the wiring reads the settings
    for them, once for all cameras (one motion configuration, shared by the cameras)."""
    values = {"model_path": DA3_TEST_MODEL, "cameras": ["front", "back"],
              "camera_heights": [1.2, 0.8]}
    result = walk(values)
    derived = [c.function for c in result.calls
               if c.module == "dense_perception.core.wiring.derived"]
    assert derived.count("node_setup") == 1
    assert derived.count("motion_config") == 1
    assert not set(PARTS) & set(result.visits), " > ".join(result.visits)
    handed = walk(values, derived=True)  # the calls handed what the wiring made
    channel = [c.function for c in handed.calls
               if c.module == "dense_perception.ros.camera_channel"]
    # Python 3.10 has no code.co_qualname: the walk names the function bare there
    assert channel in (["CameraChannel.__init__"] * 2, ["__init__"] * 2), channel
    assert result.rooms <= MAX_ROOMS, " > ".join(result.visits)
