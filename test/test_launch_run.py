# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""launch/depth.launch.py run: without launch_ros (pip-only ROS) its OpaqueFunction runs against
small stand-ins for the launch classes it uses, so the parameters and remappings it builds are
checked all the same; with launch_ros (a sourced ROS 2 with this package built) it also runs
through a real LaunchService."""

from __future__ import annotations

import importlib.util
import sys
import types
from pathlib import Path

import pytest

from support.launch_source import LAUNCH_FILE, REPO, node_source_facts

from dense_perception.core.settings.table import PARAMS_BY_NAME

ARG_TO_PARAM = {"backend": "backend", "model": "model_path", "input_qos": "input_qos",
                "camera_info_qos": "camera_info_qos",
                "use_lifecycle": "use_lifecycle"}
HAVE_LAUNCH_ROS = importlib.util.find_spec("launch_ros") is not None


# ---- the launch file, run against stand-ins for launch/launch_ros -------------------------------
class _Recorder:
    """Any launch class: remembers its arguments."""

    def __init__(self, *args, **kwargs):
        self.args, self.kwargs = args, kwargs


class _LaunchConfiguration(_Recorder):
    def perform(self, context: dict[str, str]) -> str:
        return context[self.args[0]]


def _stub_modules() -> dict[str, types.ModuleType]:
    mods = {name: types.ModuleType(name) for name in (
        "launch", "launch.actions", "launch.substitutions", "launch_ros", "launch_ros.actions",
        "launch_ros.substitutions")}
    mods["launch"].LaunchDescription = type("LaunchDescription", (_Recorder,), {})
    for name in ("DeclareLaunchArgument", "OpaqueFunction"):
        setattr(mods["launch.actions"], name, type(name, (_Recorder,), {}))
    mods["launch.substitutions"].LaunchConfiguration = _LaunchConfiguration
    mods["launch.substitutions"].PathJoinSubstitution = type("PathJoinSubstitution",
                                                             (_Recorder,), {})
    mods["launch_ros.actions"].Node = type("Node", (_Recorder,), {})
    mods["launch_ros.substitutions"].FindPackageShare = type("FindPackageShare", (_Recorder,), {})
    return mods


@pytest.fixture
def stub_launch(monkeypatch):
    """generate_launch_description() of depth.launch.py, built with stand-in launch classes."""
    for name, module in _stub_modules().items():
        monkeypatch.setitem(sys.modules, name, module)
    spec = importlib.util.spec_from_file_location("_depth_launch_under_test", LAUNCH_FILE)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module.generate_launch_description()


def _run_opaque(description, **overrides) -> _Recorder:
    """The dense_perception Node the launch file's OpaqueFunction makes for these arguments."""
    nodes = _opaque_nodes(description, **overrides)
    assert [n.kwargs["package"] for n in nodes][:1] == ["dense_perception"]
    return nodes[0]


def _opaque_nodes(description, **overrides) -> list[_Recorder]:
    """Every Node the launch file's OpaqueFunction makes for these launch arguments."""
    entities = description.args[0]
    context = {e.args[0]: e.kwargs["default_value"] for e in entities
               if type(e).__name__ == "DeclareLaunchArgument"}
    context["config"] = str(REPO / "config" / "depth.yaml")  # a real FindPackageShare's result
    context.update(overrides)
    functions = [e for e in entities if type(e).__name__ == "OpaqueFunction"]
    assert len(functions) == 1
    actions = functions[0].kwargs["function"](context)
    return [a for a in actions if type(a).__name__ == "Node"]


def _parameters(node: _Recorder) -> tuple[list, dict]:
    params = node.kwargs["parameters"]
    files = [p for p in params if isinstance(p, (str, Path))]
    merged: dict = {}
    for p in params:
        if isinstance(p, dict):
            merged.update(p)
    return files, merged


def test_launch_defaults_use_the_config_model_and_backend(stub_launch):
    node = _run_opaque(stub_launch)
    files, overrides = _parameters(node)
    assert node.kwargs["parameters"][0] == str(REPO / "config" / "depth.yaml"), \
        "the config file must come first so that the launch arguments override it"
    assert files == [str(REPO / "config" / "depth.yaml")]
    assert overrides == {}, "model:='' and backend:='' must leave the config's values"
    assert node.kwargs["namespace"] == ""
    assert (node.kwargs["package"], node.kwargs["executable"], node.kwargs["name"]) == \
        ("dense_perception", "dense_perception_node", "dense_perception")


def test_launch_arguments_become_parameters_and_remappings(stub_launch):
    node = _run_opaque(stub_launch, model="/m/tipsv2.tflite", backend="cpu", image="/cam/img",
                       camera_info="/cam/info", config="/c/tipsv2.yaml", namespace="robot1",
                       reference_depth="/tof/depth", input_qos="reliable", use_lifecycle="true",
                       camera_info_qos="transient_local", odometry="/wheel/odom")
    files, overrides = _parameters(node)
    assert files == ["/c/tipsv2.yaml"]
    assert overrides == {"backend": "cpu", "model_path": "/m/tipsv2.tflite",
                         "input_qos": "reliable", "use_lifecycle": True,
                         "camera_info_qos": "transient_local"}
    assert set(overrides) == set(ARG_TO_PARAM.values())
    for name in overrides:
        assert name in PARAMS_BY_NAME, f"{name} is not a node parameter"
    remaps = dict(node.kwargs["remappings"])
    assert len(remaps) == len(node.kwargs["remappings"]), "a topic is remapped twice"
    assert remaps == {"image": "/cam/img", "image/compressed": "/cam/img/compressed",
                      "camera_info": "/cam/info", "reference_depth": "/tof/depth",
                      "odometry": "/wheel/odom"}
    assert set(remaps) == node_source_facts()[1], "remap exactly the subscribed topics"
    assert node.kwargs["namespace"] == "robot1"


def test_launch_cameras_become_the_parameter_and_per_camera_remappings(stub_launch):
    """cameras:=[front,rear]: the node's cameras parameter, and each camera's topics from
    /<camera>/image_raw and /<camera>/camera_info (the single camera's defaults, renamed)."""
    for text in ("[front,rear]", "front, rear", "['front', 'rear']"):
        node = _run_opaque(stub_launch, cameras=text)
        _, overrides = _parameters(node)
        assert overrides == {"cameras": ["front", "rear"]}
        assert PARAMS_BY_NAME["cameras"].problem(overrides["cameras"]) is None
        remaps = dict(node.kwargs["remappings"])
        assert len(remaps) == len(node.kwargs["remappings"]), "a topic is remapped twice"
        for camera in ("front", "rear"):
            assert remaps[f"{camera}/image"] == f"/{camera}/image_raw"
            assert remaps[f"{camera}/camera_info"] == f"/{camera}/camera_info"
            assert remaps[f"{camera}/image/compressed"] == f"/{camera}/image_raw/compressed"


def test_launch_rviz_follows_the_namespace_and_fixed_frame(stub_launch):
    assert len(_opaque_nodes(stub_launch)) == 1, "RViz only when asked for"
    node, rviz = _opaque_nodes(stub_launch, rviz="true", namespace="robot1",
                               fixed_frame="cam_color_optical_frame")
    assert (rviz.kwargs["package"], rviz.kwargs["executable"]) == ("rviz2", "rviz2")
    # Same namespace as the node: RViz's relative topics then name the node's outputs.
    assert rviz.kwargs["namespace"] == node.kwargs["namespace"] == "robot1"
    args = rviz.kwargs["arguments"]
    assert args[args.index("--fixed-frame") + 1] == "cam_color_optical_frame"
    config = args[args.index("-d") + 1]
    assert [getattr(p, "value", p) for p in config.args[0][1:]] == ["config",
                                                                     "dense_perception.rviz"]


# ---- the launch file, for real ------------------------------------------------------------------
@pytest.mark.skipif(not HAVE_LAUNCH_ROS, reason="launch_ros is not installed (pip-only ROS 2)")
def test_launch_service_runs_the_node():
    import launch
    from launch.actions import IncludeLaunchDescription, RegisterEventHandler, TimerAction
    from launch.event_handlers import OnProcessExit
    from launch.launch_description_sources import PythonLaunchDescriptionSource
    try:
        from ament_index_python.packages import get_package_share_directory
        get_package_share_directory("dense_perception")
    except Exception:  # noqa: BLE001
        pytest.skip("dense_perception is not built and sourced (colcon build; source install)")
    exits = []
    service = launch.LaunchService()
    service.include_launch_description(launch.LaunchDescription([
        RegisterEventHandler(OnProcessExit(
            on_exit=lambda event, _: exits.append(event.returncode))),
        IncludeLaunchDescription(
            PythonLaunchDescriptionSource(str(LAUNCH_FILE)),
            launch_arguments={"model": str(REPO / "models" / "test_da3_small.tflite"),
                              "backend": "cpu",
                              "config": str(REPO / "config" / "depth.yaml")}.items()),
        TimerAction(period=8.0, actions=[launch.actions.Shutdown(reason="test done")]),
    ]))
    assert service.run() == 0
    assert exits == [0], "the node stopped early or uncleanly (see its log above)"

