# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""config/*.yaml, config/dense_perception.rviz and the Foxglove layout against the node: every
parameter with a valid value and a comment, the per-model values, the node key, the views."""

from __future__ import annotations

import re

import pytest
import yaml

from support.launch_source import REPO, declared_args, kwargs_of

from dense_perception.core.model.specs import MODEL_SPECS
from dense_perception.core.settings.table import PARAMS

CONFIGS = {"depth.yaml": "da3", "tipsv2.yaml": "tipsv2"}
RVIZ_FILE = REPO / "config" / "dense_perception.rviz"
NODE_KEY = "/**/dense_perception"  # matches the node in any namespace (launch's namespace:=...)


# ---- the parameter files ------------------------------------------------------------------------
def _load_config(name: str) -> dict:
    return yaml.safe_load((REPO / "config" / name).read_text())


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_config_lists_every_parameter_with_a_valid_value(name):
    data = _load_config(name)
    assert list(data) == [NODE_KEY]
    assert list(data[NODE_KEY]) == ["ros__parameters"]
    params = data[NODE_KEY]["ros__parameters"]
    expected = [p.name for p in PARAMS]
    assert not set(params) - set(expected), f"unknown keys: {set(params) - set(expected)}"
    assert not set(expected) - set(params), f"missing keys: {set(expected) - set(params)}"
    for spec in PARAMS:
        value = params[spec.name]
        # ROS 2 parameters are typed: 1 (int) is rejected for a double, "1.0" for an int, ...
        assert type(value) is type(spec.default), \
            f"{name}: {spec.name}={value!r} is {type(value).__name__}, " \
            f"should be {type(spec.default).__name__}"
        assert spec.problem(value) is None, f"{name}: {spec.problem(value)}"
    # depth.yaml names the recommended DA3 file (export-da3's default for a 16:9 camera: DA3's
    # own 504, fp16 weights); the other configs their model's published file
    assert params["model_path"] == {"depth.yaml": "da3_small_504x280_fp16.tflite"}.get(
        name, MODEL_SPECS[CONFIGS[name]].file_name)
    assert params["model_type"] in ("auto", CONFIGS[name])


def test_config_per_model_values():
    depth = _load_config("depth.yaml")[NODE_KEY]["ros__parameters"]
    tips = _load_config("tipsv2.yaml")[NODE_KEY]["ros__parameters"]
    assert not MODEL_SPECS["da3"].metric_depth and depth["max_depth"] == 0.0
    assert MODEL_SPECS["tipsv2"].metric_depth and tips["max_depth"] == 10.0


@pytest.mark.parametrize("name", sorted(CONFIGS))
def test_config_comments_every_parameter_and_the_qos_example_parses(name):
    lines = (REPO / "config" / name).read_text().splitlines()
    for spec in PARAMS:
        index = next(i for i, line in enumerate(lines)
                     if re.match(rf"\s+{spec.name}:", line))
        assert "#" in lines[index] or lines[index - 1].lstrip().startswith("#"), \
            f"{name}: {spec.name} has no comment"
    start = next(i for i, line in enumerate(lines) if line.strip() == "# qos_overrides:")
    block = "\n".join(line.replace("# ", "", 1) for line in lines[start:start + 4])
    assert yaml.safe_load(block) == {
        "qos_overrides": {"/points": {"publisher": {"reliability": "best_effort"}}}}


@pytest.mark.ros
def test_config_node_key_reaches_a_namespaced_node(tmp_path):
    """The launch file's namespace:=... must not make ROS ignore the parameters file."""
    rclpy = pytest.importorskip("rclpy")
    from rclpy.node import Node
    context = rclpy.Context()
    rclpy.init(context=context)
    try:
        for namespace in ("", "robot1"):
            node = Node("dense_perception", namespace=namespace, context=context,
                        cli_args=["--ros-args", "--params-file",
                                  str(REPO / "config" / "depth.yaml")],
                        automatically_declare_parameters_from_overrides=True)
            try:
                assert node.get_parameter("model_path").value == \
                    "da3_small_504x280_fp16.tflite", \
                    f"parameters file ignored with namespace '{namespace}'"
            finally:
                node.destroy_node()
    finally:
        rclpy.shutdown(context=context)


# ---- the RViz config ----------------------------------------------------------------------------
def test_rviz_config_shows_the_outputs():
    data = yaml.safe_load(RVIZ_FILE.read_text())
    manager = data["Visualization Manager"]
    displays = {d["Topic"]["Value"]: d for d in manager["Displays"] if "Topic" in d}
    # Relative names: RViz started in the node's namespace (namespace:=...) finds its outputs.
    # The views over image_transport's compressed topics (RViz 2 picks the transport from the
    # topic's last name, its image_transport hint): light enough for a Wi-Fi link.
    assert set(displays) == {"depth/colored/compressed", "normals/colored/compressed",
                             "segmentation/colored/compressed", "points"}
    for topic, display in displays.items():
        expected = "PointCloud2" if topic == "points" else "Image"
        assert display["Class"] == f"rviz_default_plugins/{expected}"
        assert display["Enabled"] is True
        assert display["Topic"]["Reliability Policy"] in ("Reliable", "Best Effort")
    assert displays["points"]["Color Transformer"] == "RGB8"
    # No frame called "camera": the launch file's fixed_frame default, an optical frame.
    fixed = kwargs_of(declared_args()["fixed_frame"])["default_value"].value
    assert manager["Global Options"]["Fixed Frame"] == fixed
    assert fixed.endswith("_optical_frame")


def test_foxglove_layout_opens_the_compressed_views_and_the_cloud():
    """config/dense_perception.foxglove.json: every panel in the layout tree has a config and
    every config a place; the images are the compressed views, the 3D panel the cloud."""
    import json
    from dense_perception.core.products import COMPRESSED, OUTPUTS
    layout = json.loads((REPO / "config" / "dense_perception.foxglove.json").read_text())

    def leaves(node):
        return [node] if isinstance(node, str) else leaves(node["first"]) + \
            leaves(node["second"])
    panels = leaves(layout["layout"])
    assert sorted(panels) == sorted(layout["configById"])
    images = {c["imageMode"]["imageTopic"] for k, c in layout["configById"].items()
              if k.startswith("Image!")}
    compressed_topics = {"/" + OUTPUTS[key][0] for key in COMPRESSED}
    assert images == {"/depth/colored/compressed", "/segmentation/colored/compressed",
                      "/normals/colored/compressed"} and images <= compressed_topics
    cloud = layout["configById"]["3D!cloud"]
    assert cloud["topics"]["/points"]["visible"] is True
    fixed = kwargs_of(declared_args()["fixed_frame"])["default_value"].value
    assert cloud["followTf"] == fixed

