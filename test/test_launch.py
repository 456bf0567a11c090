"""launch/depth.launch.py, config/*.yaml and config/dense_perception.rviz against the node.

With launch_ros installed (a sourced ROS 2 with this package built), the launch file is also run
through a real LaunchService. Without it (pip-only ROS), the launch file is read with ``ast`` and
its OpaqueFunction is run against small stand-ins for the launch classes it uses, so the
parameters and remappings it builds are checked all the same.
"""

from __future__ import annotations

import ast
import importlib.util
import re
import sys
import types
import xml.etree.ElementTree as ET
from pathlib import Path

import pytest
import yaml

from dense_perception.core.model.specs import MODEL_SPECS
from dense_perception.core.settings.table import PARAMS, PARAMS_BY_NAME
from dense_perception.core.backends.runner import BACKENDS

REPO = Path(__file__).resolve().parents[1]
LAUNCH_FILE = REPO / "launch" / "depth.launch.py"
CONFIGS = {"depth.yaml": "da3", "tipsv2.yaml": "tipsv2"}
RVIZ_FILE = REPO / "config" / "dense_perception.rviz"
NODE_KEY = "/**/dense_perception"  # matches the node in any namespace (launch's namespace:=...)
LAUNCH_ARGS = {"model", "backend", "image", "camera_info", "config", "namespace",
               "reference_depth", "rviz", "fixed_frame", "input_qos", "use_lifecycle",
               "camera_info_qos", "cameras"}
ARG_TO_PARAM = {"backend": "backend", "model": "model_path", "input_qos": "input_qos",
                "camera_info_qos": "camera_info_qos",
                "use_lifecycle": "use_lifecycle"}
HAVE_LAUNCH_ROS = importlib.util.find_spec("launch_ros") is not None


# ---- facts about the package, read from its sources ---------------------------------------------
def _module_constants(tree: ast.Module) -> dict[str, object]:
    return {t.id: node.value.value for node in tree.body if isinstance(node, ast.Assign)
            and isinstance(node.value, ast.Constant) for t in node.targets
            if isinstance(t, ast.Name)}


def _console_scripts() -> dict[str, str]:
    """setup.py's console_scripts as {script: 'module:function'} (f-strings resolved)."""
    tree = ast.parse((REPO / "setup.py").read_text())
    consts = _module_constants(tree)

    def text(node: ast.AST) -> str:
        if isinstance(node, ast.Constant):
            return str(node.value)
        if isinstance(node, ast.Name):
            return str(consts[node.id])
        if isinstance(node, ast.FormattedValue):
            return text(node.value)
        assert isinstance(node, ast.JoinedStr), ast.dump(node)
        return "".join(text(v) for v in node.values)

    scripts = {}
    for node in ast.walk(tree):
        if isinstance(node, ast.keyword) and node.arg == "entry_points":
            for key, value in zip(node.value.keys, node.value.values):
                if text(key) == "console_scripts":
                    for item in value.elts:
                        name, target = text(item).split("=")
                        scripts[name.strip()] = target.strip()
    return scripts


def _node_source_facts() -> tuple[str, set[str]]:
    """The node's NODE_NAME and the topics it subscribes to (the *_TOPIC constants of
    ros/camera_input.py; read with ast: no rclpy needed)."""
    ros = REPO / "dense_perception" / "ros"
    node_name = _module_constants(ast.parse((ros / "perception.py").read_text()))["NODE_NAME"]
    constants = _module_constants(ast.parse((ros / "camera_input.py").read_text()))
    topics = {value for name, value in constants.items() if name.endswith("_TOPIC")}
    return node_name, topics


def test_package_facts_are_consistent():
    scripts = _console_scripts()
    assert scripts == {"dense_perception_node": "dense_perception.ros.node:main",
                       "dense-perception": "dense_perception.offline.cli:main"}
    node_name, topics = _node_source_facts()
    assert node_name == "dense_perception"
    assert topics == {"image", "image/compressed", "camera_info", "reference_depth"}
    assert ET.parse(REPO / "package.xml").getroot().findtext("name") == "dense_perception"


# ---- the launch file, statically ----------------------------------------------------------------
def _launch_tree() -> ast.Module:
    return ast.parse(LAUNCH_FILE.read_text(), filename=str(LAUNCH_FILE))


def _calls(tree: ast.AST, name: str) -> list[ast.Call]:
    def called(call: ast.Call) -> str:
        f = call.func
        return f.id if isinstance(f, ast.Name) else f.attr if isinstance(f, ast.Attribute) else ""
    return [n for n in ast.walk(tree) if isinstance(n, ast.Call) and called(n) == name]


def _kwargs(call: ast.Call) -> dict[str, ast.AST]:
    return {k.arg: k.value for k in call.keywords}


def _declared_args() -> dict[str, ast.Call]:
    declared = {}
    for call in _calls(_launch_tree(), "DeclareLaunchArgument"):
        name = call.args[0].value if call.args else _kwargs(call)["name"].value
        assert name not in declared, f"launch argument {name} declared twice"
        declared[name] = call
    return declared


def test_launch_declares_exactly_the_documented_arguments():
    declared = _declared_args()
    assert set(declared) == LAUNCH_ARGS
    defaults = {name: _kwargs(call).get("default_value") for name, call in declared.items()}
    plain = {n: d.value for n, d in defaults.items() if isinstance(d, ast.Constant)}
    assert plain == {"model": "", "backend": "", "image": "/camera/image_raw",
                     "camera_info": "/camera/camera_info", "namespace": "",
                     "reference_depth": "reference_depth", "rviz": "false",
                     "fixed_frame": "camera_optical_frame", "input_qos": "",
                     "use_lifecycle": "", "camera_info_qos": "", "cameras": ""}
    for name, call in declared.items():
        description = _kwargs(call).get("description")
        assert isinstance(description, ast.Constant) and description.value, \
            f"launch argument {name} has no description"
    choices = _kwargs(declared["backend"]).get("choices")
    if choices is not None:
        assert [c.value for c in choices.elts] == [""] + list(BACKENDS)


def test_launch_default_config_is_the_packaged_depth_yaml():
    config_default = _kwargs(_declared_args()["config"])["default_value"]
    assert isinstance(config_default, ast.Call) \
        and config_default.func.id == "PathJoinSubstitution", ast.dump(config_default)
    parts = config_default.args[0].elts
    assert isinstance(parts[0], ast.Call) and parts[0].func.id == "FindPackageShare" \
        and parts[0].args[0].value == "dense_perception"
    relative = Path(*[p.value for p in parts[1:]])
    assert relative == Path("config/depth.yaml")
    assert (REPO / relative).is_file()


def test_launch_node_action_matches_setup_and_node():
    nodes = [n for n in _calls(_launch_tree(), "Node")
             if _kwargs(n)["package"].value == "dense_perception"]
    assert len(nodes) == 1, "one dense_perception Node action expected"
    kw = {k: v.value for k, v in _kwargs(nodes[0]).items() if isinstance(v, ast.Constant)}
    scripts = _console_scripts()
    node_name, _ = _node_source_facts()
    assert kw["package"] == ET.parse(REPO / "package.xml").getroot().findtext("name")
    assert kw["executable"] in scripts
    assert scripts[kw["executable"]] == "dense_perception.ros.node:main"
    assert kw["name"] == node_name


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
                       camera_info_qos="transient_local")
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
                      "camera_info": "/cam/info", "reference_depth": "/tof/depth"}
    assert set(remaps) == _node_source_facts()[1], "remap exactly the subscribed topics"
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
    fixed = _kwargs(_declared_args()["fixed_frame"])["default_value"].value
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
    fixed = _kwargs(_declared_args()["fixed_frame"])["default_value"].value
    assert cloud["followTf"] == fixed
