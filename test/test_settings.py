# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""One settings table for the node and ``dense-perception process``: the same
defaults, ranges and configuration, and the same output for the same input."""

import inspect
from dataclasses import fields

import cv2
import numpy as np
import pytest

from support.common import DA3_TEST_MODEL, GRAPH_TIMEOUT, TIPS_TEST_MODEL, run_cli

from dense_perception.core.model.depth_network import DepthOptions
from dense_perception.core.scale.metric_scale import ScaleConfig
from dense_perception.core.settings.row import SettingError
from dense_perception.core.settings.table import PARAMS, PARAMS_BY_NAME, Settings
from dense_perception.core.pipeline import load_pipeline
from dense_perception.core.frame_data import PipelineConfig
from dense_perception.core.wiring.derived import (SCALE_FIELDS, backend_config, depth_options,
                                                  pipeline_config, scale_config)
from dense_perception.offline.cli import build_parser
from dense_perception.offline.options.settings_args import OFFLINE

pytestmark = pytest.mark.timeout(120)

# The node's parameters that the offline command has no flag for, and why: a recording has no
# topics to publish or QoS to match, and no lifecycle. Anything else that shapes the output
# must have a flag (a new parameter fails here until it has one or is listed with its reason).
NODE_ONLY = {"publish_depth", "publish_normals", "publish_segmentation", "publish_points",
             # --outputs chooses the products offline
             "diagnostics_period", "input_qos", "camera_info_qos",
             "use_lifecycle", "input_compressed",
             # offline, several cameras are several --topic values of one bag; each topic's
             # DA3 scale uses --camera-height
             "cameras", "camera_heights",
             # process reads a bag's odometry ahead of each image: nothing comes late
             "odometry_wait"}


def parse(*argv):
    return build_parser().parse_args(["process", "in.png", "--model", "m.tflite", *argv])


def test_every_output_affecting_node_parameter_is_an_offline_flag_with_its_default():
    from dense_perception.offline.options.settings_args import setting_values
    assert {p.name for p in PARAMS if p.offline is None} == NODE_ONLY
    values = setting_values(parse())
    for spec in PARAMS:
        if spec.offline is not None and spec.name != "model_path":
            assert values[spec.name] == spec.default, spec.name
    # a few flags away from their defaults, the renamed --depth-format among them
    args = parse("--cpu-precision", "fp16", "--gpu-precision", "fp32",
                 "--depth-scale-min-inliers", "0.5", "--no-points-rgb", "--depth-format", "png16")
    values = setting_values(args)
    assert (values["cpu_precision"], values["gpu_precision"]) == ("fp16", "fp32")
    assert values["depth_scale_min_inliers"] == 0.5 and values["points_rgb"] is False
    assert values["depth_encoding"] == "16UC1"


def test_every_offline_flag_parses_and_lands_in_the_settings_values():
    """Walks the table: each setting's offline flag, given another valid value, parses and
    gives that value to the settings (so no flag is accepted and ignored)."""
    from support.setting_values import flag_words, other_value

    from dense_perception.offline.options.settings_args import setting_values
    flagged = [spec for spec in PARAMS if spec.offline and spec.name != "model_path"]
    assert len(flagged) == len(PARAMS) - len(NODE_ONLY) - 1
    for spec in flagged:
        value = other_value(spec)
        assert value != spec.default
        assert setting_values(parse(*flag_words(spec, value)))[spec.name] == value, spec.offline
    assert setting_values(parse())["model_path"] == "m.tflite"


def test_library_defaults_are_the_tables():
    """PipelineConfig, ScaleConfig, DepthOptions and load_pipeline default to what the node
    does (they had drifted: points_stride 1 against 2, cpu_precision fp32 against auto)."""
    for f in fields(PipelineConfig):
        if f.name != "product_settings":  # the values of the settings added products read
            assert f.default == PARAMS_BY_NAME[f.name].default, f.name
    for f in fields(ScaleConfig):
        if f.name != "per_frame":
            assert f.default == PARAMS_BY_NAME[SCALE_FIELDS[f.name]].default, f.name
    for f in fields(DepthOptions):  # the table's lists are held as tuples
        default = list(f.default) if isinstance(f.default, tuple) else f.default
        assert default == PARAMS_BY_NAME[f.name].default, f.name
    assert inspect.signature(load_pipeline).parameters["settings"].default == Settings()
    assert Settings().values() == {spec.name: spec.default for spec in PARAMS}


def test_the_typed_settings_check_each_value_once_and_hold_lists_as_tuples():
    """Making a Settings (or changing one) checks each value against its row: a value out of
    range or not among the choices never reaches a configuration."""
    with pytest.raises(SettingError, match="points_stride must be >= 1, got 0"):
        Settings(points_stride=0)
    with pytest.raises(SettingError, match="fit 'letterbox' is not allowed"):
        Settings().changed({"fit": "letterbox"})
    with pytest.raises(SettingError, match="cameras: a name is listed twice"):
        Settings(cameras=["front", "front"])
    err = pytest.raises(SettingError, Settings, depth_scale_min_inliers=1.5).value
    assert err.in_syntax(OFFLINE) == "--depth-scale-min-inliers must be <= 1, got 1.5"
    settings = Settings.from_values({"input_mean": [0.5, 0.4, 0.3], "cameras": ["a", "b"],
                                     "points_stride": 3, "depth_encoding": "16UC1"})
    assert settings.input_mean == (0.5, 0.4, 0.3) and settings.cameras == ("a", "b")
    assert hash(settings) == hash(Settings.from_values(settings.values()))  # frozen, round trip
    # the parts' configurations are built from it with the same values
    assert pipeline_config(settings).points_stride == 3
    assert depth_options(settings).input_mean == (0.5, 0.4, 0.3)
    backend = backend_config(settings.changed({"backend": "cpu", "num_threads": 2}))
    assert (backend.backend, backend.num_threads, backend.cpu_precision) == ("cpu", 2, "auto")
    assert scale_config(settings, camera_height=0.7).camera_height == 0.7


def test_offline_refuses_out_of_range_values_naming_its_flag(tmp_path, capsys):
    frame = tmp_path / "a.png"
    cv2.imwrite(str(frame), np.zeros((8, 8, 3), np.uint8))
    for flags, why in [(["--points-stride", "0"], "--points-stride must be >= 1"),
                       (["--depth-scale-min-inliers", "1.5"],
                        "--depth-scale-min-inliers must be <= 1"),
                       (["--depth-scale-source", "ground_plane"],
                        "--camera-height: the optical centre's height above the floor in "
                        "metres (e.g. --camera-height 0.35)")]:
        code, _, err = run_cli(["process", frame, "--model", DA3_TEST_MODEL, "--out",
                                tmp_path / "o", *flags], capsys)
        assert code == 2 and why in err and ":=" not in err, err


CASES = {
    # TIPSv2: every product, cloud settings off their defaults
    "tipsv2": (TIPS_TEST_MODEL,
               {"points_stride": 3, "max_depth": 2.5, "points_min_confidence": 0.2,
                "fallback_hfov_deg": 70.0, "fit": "stretch"},
               ["--points-stride", "3", "--max-depth", "2.5", "--points-min-confidence", "0.2",
                "--fallback-hfov", "70", "--fit", "stretch"]),
    # DA3: a fixed metric scale, millimetre depth, the cloud without colour
    "da3": (DA3_TEST_MODEL,
            {"depth_scale_source": "fixed", "relative_depth_scale": 0.5, "max_depth": 1.8,
             "depth_encoding": "16UC1", "points_stride": 4, "points_rgb": False,
             "fit": "crop"},
            ["--depth-scale-source", "fixed", "--relative-depth-scale", "0.5", "--max-depth",
             "1.8", "--depth-format", "png16", "--points-stride", "4", "--no-points-rgb"]),
}


@pytest.mark.ros
@pytest.mark.timeout(180)
@pytest.mark.parametrize("case", sorted(CASES))
def test_node_over_dds_and_process_give_the_same_products(harness_factory, tmp_path, capsys,
                                                          case):
    """The same frame and the same non-default settings through the node (over DDS) and through
    ``dense-perception process``: the same depth, normals, labels and points."""
    pytest.importorskip("rclpy")
    from dense_perception.core.conversions import cloud_to_points, image_msg_to_array
    from dense_perception.offline.inputs.file_io import read_ply
    model, settings, flags = CASES[case]
    rng = np.random.default_rng(23)
    frame = cv2.GaussianBlur(rng.integers(0, 256, (360, 480, 3), np.uint8), (0, 0), 9)
    image = tmp_path / "frame.png"
    cv2.imwrite(str(image), cv2.cvtColor(frame, cv2.COLOR_RGB2BGR))
    code, _, err = run_cli(["process", image, "--model", model, "--out", tmp_path / "out",
                            "--backend", "cpu", *flags], capsys)
    assert code == 0, err
    out = tmp_path / "out"

    topics = ["depth/image", "points"]
    if case == "tipsv2":
        topics += ["normals/image", "segmentation/labels"]
    h = harness_factory({"model_path": model, "camera_info_slop": 0.0, **settings},
                        subscribe=tuple(topics))
    h.wait_matched(tuple(topics), timeout=GRAPH_TIMEOUT)
    h.publish_frame(frame, h.header(sec=1, nanosec=0))
    got = {t: h.wait_for(t, timeout=60.0)[0] for t in topics}

    depth_file = (cv2.imread(str(out / "depth" / "frame.png"), cv2.IMREAD_UNCHANGED)
                  if case == "da3" else np.load(out / "depth" / "frame.npy"))
    np.testing.assert_array_equal(image_msg_to_array(got["depth/image"]), depth_file)
    if case == "tipsv2":
        np.testing.assert_array_equal(image_msg_to_array(got["normals/image"]),
                                      np.load(out / "normals" / "frame.npy"))
        np.testing.assert_array_equal(image_msg_to_array(got["segmentation/labels"]),
                                      cv2.imread(str(out / "labels" / "frame.png"),
                                                 cv2.IMREAD_UNCHANGED))
    cloud = cloud_to_points(got["points"]).reshape(-1)
    ply = read_ply(out / "points" / "frame.ply")
    assert 0 < len(cloud) == len(ply)
    for axis in "xyz":
        np.testing.assert_array_equal(cloud[axis], ply[axis])
    assert ("rgb" in cloud.dtype.names) == ("red" in ply.dtype.names) == settings.get(
        "points_rgb", True)
    if "rgb" in cloud.dtype.names:  # PCL's packed float: 0x00RRGGBB
        packed = np.ascontiguousarray(cloud["rgb"]).view(np.uint32)
        for shift, channel in ((16, "red"), (8, "green"), (0, "blue")):
            np.testing.assert_array_equal((packed >> shift) & 0xFF, ply[channel])
