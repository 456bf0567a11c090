# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""launch/depth.launch.py read statically (``ast``) against the package: its arguments, its
default config and its node action agree with setup.py, package.xml and the node."""

from __future__ import annotations

import ast
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest

from support.launch_source import (REPO, calls, console_scripts, declared_args, kwargs_of,
                                   launch_tree, node_source_facts)

from dense_perception.core.backends.runner import BACKENDS

pytestmark = pytest.mark.repository

LAUNCH_ARGS = {"model", "backend", "image", "camera_info", "config", "namespace",
               "reference_depth", "rviz", "fixed_frame", "input_qos", "use_lifecycle",
               "camera_info_qos", "cameras", "odometry"}


def test_package_facts_are_consistent():
    scripts = console_scripts()
    assert scripts == {"dense_perception_node": "dense_perception.ros.node:main",
                       "dense-perception": "dense_perception.offline.cli:main"}
    node_name, topics = node_source_facts()
    assert node_name == "dense_perception"
    assert topics == {"image", "image/compressed", "camera_info", "reference_depth", "odometry"}
    assert ET.parse(REPO / "package.xml").getroot().findtext("name") == "dense_perception"


def test_launch_declares_exactly_the_documented_arguments():
    declared = declared_args()
    assert set(declared) == LAUNCH_ARGS
    defaults = {name: kwargs_of(call).get("default_value") for name, call in declared.items()}
    plain = {n: d.value for n, d in defaults.items() if isinstance(d, ast.Constant)}
    assert plain == {"model": "", "backend": "", "image": "/camera/image_raw",
                     "camera_info": "/camera/camera_info", "namespace": "",
                     "reference_depth": "reference_depth", "rviz": "false",
                     "fixed_frame": "camera_optical_frame", "input_qos": "",
                     "use_lifecycle": "", "camera_info_qos": "", "cameras": "",
                     "odometry": "/odom"}
    for name, call in declared.items():
        description = kwargs_of(call).get("description")
        assert isinstance(description, ast.Constant) and description.value, \
            f"launch argument {name} has no description"
    choices = kwargs_of(declared["backend"]).get("choices")
    if choices is not None:
        assert [c.value for c in choices.elts] == [""] + list(BACKENDS)


def test_launch_default_config_is_the_packaged_depth_yaml():
    config_default = kwargs_of(declared_args()["config"])["default_value"]
    assert isinstance(config_default, ast.Call) \
        and config_default.func.id == "PathJoinSubstitution", ast.dump(config_default)
    parts = config_default.args[0].elts
    assert isinstance(parts[0], ast.Call) and parts[0].func.id == "FindPackageShare" \
        and parts[0].args[0].value == "dense_perception"
    relative = Path(*[p.value for p in parts[1:]])
    assert relative == Path("config/depth.yaml")
    assert (REPO / relative).is_file()


def test_launch_node_action_matches_setup_and_node():
    nodes = [n for n in calls(launch_tree(), "Node")
             if kwargs_of(n)["package"].value == "dense_perception"]
    assert len(nodes) == 1, "one dense_perception Node action expected"
    kw = {k: v.value for k, v in kwargs_of(nodes[0]).items() if isinstance(v, ast.Constant)}
    scripts = console_scripts()
    node_name, _ = node_source_facts()
    assert kw["package"] == ET.parse(REPO / "package.xml").getroot().findtext("name")
    assert kw["executable"] in scripts
    assert scripts[kw["executable"]] == "dense_perception.ros.node:main"
    assert kw["name"] == node_name

