# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""model_type depth: any single-image depth .tflite, read per its settings.

The stand-in networks (models/make_test_models.py, written here at a test's size) compute
out = 2 + 0.5 x_r + 0.25 x_g + 0.125 x_b of their normalised input; each test writes that law
and the normalisation out itself. PyD-Net++ (a real trained network, ../shared/real-scenes)
goes through the same path on real NYU frames, checked against their measured depth.
"""

from pathlib import Path

import cv2
import numpy as np
import pytest

from dense_perception.core.model.depth_network import DepthOptions
from dense_perception.core.model.specs import ModelSignatureError
from dense_perception.core.model.detection import detect_model_spec
from dense_perception.core.pipeline import load_pipeline
from dense_perception.core.frame_data import Request
from dense_perception.core.settings.row import SettingError
from dense_perception.core.settings.table import Settings

REAL_SCENES = Path(__file__).resolve().parents[2] / "shared" / "real-scenes"
PYDNET = REAL_SCENES / "models" / "pydnet_pp_448x640.tflite"
NYU_K = (518.8579, 519.46961, 325.58245, 253.73617)  # fx, fy, cx, cy (real-scenes README)

H, W = 48, 64
WEIGHTS, BIAS = (0.5, 0.25, 0.125), 2.0
IMAGENET = ((0.485, 0.456, 0.406), (0.229, 0.224, 0.225))


def law(rgb: np.ndarray, mean=(0.0, 0.0, 0.0), std=(1.0, 1.0, 1.0)) -> np.ndarray:
    """The stand-in's output for an H x W x 3 uint8 RGB frame, normalised as given."""
    x = (rgb.astype(np.float64) / 255.0 - np.asarray(mean)) / np.asarray(std)
    return BIAS + x @ np.asarray(WEIGHTS)


def frame(seed: int = 0) -> np.ndarray:
    return np.random.default_rng(seed).integers(0, 256, (H, W, 3), dtype=np.uint8)


def quiet(_):
    pass


@pytest.mark.parametrize("layout", ["NHWC", "NCHW"])
@pytest.mark.parametrize("kind", ["depth", "inverse_depth"])
@pytest.mark.parametrize("normalization", ["unit", "imagenet", "custom"])
def test_layouts_kinds_and_normalisations_follow_the_law(maker, tmp_path, layout, kind,
                                                         normalization):
    path = maker.write_depth_model(tmp_path / "d.tflite", H, W, layout)
    custom = ((0.5, 0.4, 0.3), (0.25, 0.5, 0.75))
    settings = Settings(model_type="depth", backend="cpu", num_threads=1,
                        input_normalization=normalization, input_mean=custom[0],
                        input_std=custom[1], depth_output=-1, depth_output_kind=kind)
    pipe = load_pipeline(str(path), settings, log=quiet)
    assert pipe.spec.layout == layout and (pipe.spec.input_width, pipe.spec.input_height) == (W, H)
    assert not pipe.spec.metric_depth
    rgb = frame()
    products = pipe.process(cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR), "bgr8")
    mean, std = {"unit": ((0, 0, 0), (1, 1, 1)), "imagenet": IMAGENET, "custom": custom}[
        normalization]
    out = law(rgb, mean, std)
    want = 1.0 / out if kind == "inverse_depth" else out
    assert products.depth.shape == (H, W)
    np.testing.assert_allclose(products.depth, want, rtol=2e-5)


def test_mono_and_rgba_frames_feed_the_nhwc_input(maker, tmp_path):
    path = maker.write_depth_model(tmp_path / "d.tflite", H, W, "NHWC")
    pipe = load_pipeline(str(path), Settings(model_type="depth", backend="cpu", num_threads=1),
                         log=quiet)
    grey = frame()[:, :, 0]
    np.testing.assert_allclose(pipe.process(grey, "mono8").depth,
                               law(np.dstack([grey] * 3)), rtol=2e-5)
    rgb = frame(1)
    rgba = np.dstack([rgb, np.full((H, W), 7, np.uint8)])
    np.testing.assert_allclose(pipe.process(rgba, "rgba8").depth, law(rgb), rtol=2e-5)


def test_default_output_is_the_first_at_full_resolution(maker, tmp_path):
    path = maker.write_depth_model(tmp_path / "d.tflite", H, W, "NHWC", coarse_first=True)
    pipe = load_pipeline(str(path), Settings(model_type="depth", backend="cpu", num_threads=1),
                         log=quiet)
    assert pipe.spec.output_index("depth") == 1
    rgb = frame()
    np.testing.assert_allclose(pipe.process(rgb, "rgb8").depth, law(rgb), rtol=2e-5)
    # Asked for, the half-size head is used and brought back to the model's grid.
    coarse = load_pipeline(str(path),
                           Settings(model_type="depth", backend="cpu", num_threads=1,
                                    depth_output=0),
                           log=quiet)
    assert coarse.spec.output_index("depth") == 0
    depth = coarse.process(rgb, "rgb8").depth
    assert depth.shape == (H, W)
    half = cv2.resize(law(rgb), (W // 2, H // 2), interpolation=cv2.INTER_AREA)
    assert abs(np.nanmean(depth) - half.mean()) < 0.01


def test_relative_depth_goes_the_da3_way(maker, tmp_path):
    """Relative, as DA3: no points without a scale; fixed scale: metres and a cloud."""
    path = str(maker.write_depth_model(tmp_path / "d.tflite", H, W, "NCHW"))
    rgb = frame()
    request = Request(depth=True, points=True)
    none = load_pipeline(path, Settings(model_type="depth", backend="cpu", num_threads=1),
                         log=quiet).process(rgb, "rgb8", None, request)
    assert none.points is None and "withheld" in none.withheld and not none.depth_metric
    fixed = load_pipeline(path,
                          Settings(model_type="depth", backend="cpu", num_threads=1,
                                   depth_scale_source="fixed", relative_depth_scale=0.5,
                                   points_stride=1, points_min_confidence=0.0),
                          log=quiet).process(rgb, "rgb8", None, request)
    assert fixed.depth_metric
    np.testing.assert_allclose(fixed.depth, 0.5 * law(rgb), rtol=2e-5)
    assert len(fixed.points) == H * W
    np.testing.assert_allclose(np.sort(fixed.points["z"]), np.sort(0.5 * law(rgb).ravel()),
                               rtol=2e-5)


def test_auto_never_picks_depth_and_says_what_it_saw(maker, tmp_path):
    path = maker.write_depth_model(tmp_path / "d.tflite", H, W, "NHWC", coarse_first=True)
    with pytest.raises(ModelSignatureError) as err:
        load_pipeline(str(path), Settings(model_type="auto", backend="cpu", num_threads=1),
                      log=quiet)
    text = str(err.value)
    assert f"input [1,{H},{W},3] -> outputs [1,{H // 2},{W // 2},1], [1,{H},{W},1]" in text
    assert "looks like a single-image depth network: set model_type to 'depth'" in text
    assert "never auto" in text and "\n" not in text
    # A file that does not look like a depth network gets no such hint.
    with pytest.raises(ModelSignatureError) as err:
        detect_model_spec([(1, 8)], [(1, 2)])
    assert "input [1,8] -> outputs [1,2]" in str(err.value)
    assert "looks like a single-image depth network" not in str(err.value)


@pytest.mark.parametrize("ins,outs,options,words", [
    ([(1, 8)], [(1, 8, 8, 1)], DepthOptions(), "needs one RGB image input"),
    ([(1, 8, 8, 3)], [(1, 4, 4, 1)], DepthOptions(), "no output is one plane at the input's 8x8"),
    ([(1, 8, 8, 3)], [(1, 8, 8, 1)], DepthOptions(depth_output=1), "past its 1 output"),
    ([(1, 8, 8, 3)], [(1, 8, 8, 1), (1, 8, 8, 3)], DepthOptions(depth_output=1),
     "output 1 is not one plane"),
])
def test_unusable_depth_files_are_refused_in_one_line(ins, outs, options, words):
    with pytest.raises(ModelSignatureError) as err:
        detect_model_spec(ins, outs, "depth", source="model file 'x.tflite'", depth=options)
    text = str(err.value)
    assert words in text and "model file 'x.tflite' has input" in text and "\n" not in text


@pytest.mark.parametrize("options,words", [
    ({"input_std": (1.0, 0.0, 1.0)}, "input_std must be > 0"),
    ({"input_mean": (0.5, 0.5)}, "input_mean needs 3 finite numbers"),
    ({"input_normalization": "midas"}, "input_normalization 'midas' is not allowed"),
    ({"depth_output_kind": "disparity"}, "depth_output_kind 'disparity' is not allowed"),
])
def test_bad_options_are_refused(options, words):
    with pytest.raises(SettingError, match=words):
        Settings(model_type="depth", **options)


def spearman(a: np.ndarray, b: np.ndarray) -> float:
    """Spearman's rank correlation, written out (ranks, then Pearson)."""
    ra, rb = np.argsort(np.argsort(a)), np.argsort(np.argsort(b))
    return float(np.corrcoef(ra, rb)[0, 1])


@pytest.mark.skipif(not PYDNET.exists(), reason=f"{REAL_SCENES} (real scenes) is absent here")
@pytest.mark.parametrize("index", ["00000", "00050", "00100"])
def test_pydnet_on_real_nyu_frames_ranks_depth_like_the_measurement(index):
    """PyD-Net++ (a real trained net, NHWC, RGB/255, depth grows with distance) on NYU frames:
    the depth is on the camera's grid, finite, and ordered like the Kinect's (the README's
    Spearman 0.4-0.66)."""
    pipe = load_pipeline(str(PYDNET),
                         Settings(model_type="depth", backend="cpu", num_threads=1,
                                  output_resolution="input"),
                         log=quiet)
    bgr = cv2.imread(str(REAL_SCENES / "nyu" / f"rgb_{index}.jpg"))
    truth = cv2.imread(str(REAL_SCENES / "nyu" / f"sync_depth_{index}.png"),
                       cv2.IMREAD_UNCHANGED).astype(np.float64) / 1000.0
    products = pipe.process(bgr, "bgr8")
    assert products.depth.shape == bgr.shape[:2] == truth.shape
    # Crop fit: 640x480 -> the model's 640x448 takes the middle 448 rows; the rest is unseen.
    # (The net gives a few <= 0 values at the top edge: invalid, not clamped.)
    assert np.isfinite(products.depth[16:464]).mean() > 0.999
    assert np.isnan(products.depth[:16]).all() and np.isnan(products.depth[464:]).all()
    both = np.isfinite(products.depth) & (truth > 0)
    assert spearman(products.depth[both], truth[both]) > 0.4  # measured: 0.56, 0.79, 0.63


# ---- the offline command ------------------------------------------------------------------------
def test_process_with_model_type_depth_and_its_flags(maker, tmp_path, capsys):
    """--model-type depth with a custom normalisation, inverse depth and a fixed scale: the
    written depth and cloud are the law's, in metres."""
    from support.common import run_cli
    path = maker.write_depth_model(tmp_path / "d.tflite", H, W, "NCHW")
    rgb = frame(3)
    folder = tmp_path / "in"
    folder.mkdir()
    cv2.imwrite(str(folder / "a.png"), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    out = tmp_path / "out"
    code, stdout, stderr = run_cli(
        ["process", folder, "--model", path, "--model-type", "depth", "--backend", "cpu",
         "--input-normalization", "custom", "--input-mean", "0.5", "0.4", "0.3",
         "--input-std", "0.25", "0.5", "0.75", "--depth-output-kind", "inverse_depth",
         "--depth-scale-source", "fixed", "--relative-depth-scale", "0.5",
         "--outputs", "depth,points", "--out", out], capsys)
    assert code == 0, stderr
    want = 0.5 / law(rgb, (0.5, 0.4, 0.3), (0.25, 0.5, 0.75))
    np.testing.assert_allclose(np.load(out / "depth" / "a.npy"), want, rtol=2e-5)
    import json
    summary = json.loads((out / "summary.json").read_text())
    assert summary["model"]["kind"] == "depth" and summary["model"]["metric_depth"] is False
    assert (out / "points" / "a.ply").exists()


def test_process_refuses_bad_depth_flags_in_one_line(maker, tmp_path, capsys):
    from support.common import run_cli
    path = maker.write_depth_model(tmp_path / "d.tflite", H, W)
    image = tmp_path / "a.png"
    cv2.imwrite(str(image), frame())
    base = ["process", image, "--model", path, "--backend", "cpu", "--model-type", "depth"]
    for extra, words in ((["--input-std", "1", "0", "1"], "--input-std must be > 0"),
                         (["--depth-output", "3"], "depth_output 3 is past its 1 output")):
        code, _, stderr = run_cli(base + extra, capsys)
        lines = [line for line in stderr.splitlines() if line.strip()]
        assert code == 2 and len(lines) == 1 and words in lines[0], stderr


@pytest.mark.skipif(not PYDNET.exists(), reason=f"{REAL_SCENES} (real scenes) is absent here")
def test_auto_on_pydnet_names_what_it_saw_and_suggests_depth(tmp_path):
    import subprocess
    import sys
    from support.common import REPO
    image = tmp_path / "a.png"
    cv2.imwrite(str(image), frame())
    result = subprocess.run([sys.executable, "-m", "dense_perception", "process", str(image),
                             "--model", str(PYDNET), "--backend", "cpu"], cwd=REPO,
                            capture_output=True, text=True, timeout=120)
    lines = result.stderr.strip().splitlines()
    assert result.returncode == 2 and len(lines) == 1, result.stderr
    assert "input [1,448,640,3] -> outputs [1,448,640,1], [1,448,640,1], [1,448,640,1]" \
        in lines[0] and "set model_type to 'depth'" in lines[0]


# ---- the node -----------------------------------------------------------------------------------
@pytest.mark.ros
@pytest.mark.timeout(90)
def test_node_runs_a_depth_model(maker, tmp_path, harness_factory):
    """model_type depth in the node over DDS: depth/image is the law (custom mean and std as
    ROS double arrays, inverse depth, fixed scale), the cloud is published, diagnostics name
    the kind."""
    pytest.importorskip("rclpy")
    from support.ros_harness import camera_info
    from dense_perception.core.conversions import cloud_to_points, image_msg_to_array
    path = maker.write_depth_model(tmp_path / "d.tflite", H, W, "NHWC")
    h = harness_factory({"model_path": str(path), "model_type": "depth", "backend": "cpu",
                         "depth_output_kind": "inverse_depth", "input_normalization": "custom",
                         "input_mean": [0.5, 0.4, 0.3], "input_std": [0.25, 0.5, 0.75],
                         "depth_scale_source": "fixed", "relative_depth_scale": 2.0,
                         "points_stride": 1, "points_min_confidence": 0.0})
    h.wait_matched(("depth/image", "points"))
    rgb = frame(5)
    h.publish_frame(rgb, h.header(sec=3, nanosec=0), info=camera_info(W, H, fx=60.0))
    depth = image_msg_to_array(h.wait_for("depth/image")[0])
    want = 2.0 / law(rgb, (0.5, 0.4, 0.3), (0.25, 0.5, 0.75))
    np.testing.assert_allclose(depth, want, rtol=2e-5)
    cloud = cloud_to_points(h.wait_for("points")[0]).reshape(-1)
    np.testing.assert_allclose(np.sort(cloud["z"]), np.sort(want.ravel()), rtol=2e-5)
    _, _, values = h.diagnostics(lambda d: d[2].get("model kind") == "depth")
    assert values["model kind"] == "depth"


def test_info_reads_a_depth_model_when_told(maker, tmp_path, capsys):
    from support.common import run_cli
    path = maker.write_depth_model(tmp_path / "d.tflite", H, W, "NHWC", coarse_first=True)
    code, stdout, stderr = run_cli(["info", path, "--model-type", "depth", "--backends", "cpu",
                                    "--runs", "1"], capsys)
    assert code == 0, stderr
    assert f"[1,{H},{W},3] float32 NHWC RGB, x / 255" in stdout
    assert f"depth [1,{H},{W},1] float32: relative depth" in stdout
    assert f"coarse [1,{H // 2},{W // 2},1] float32: not used" in stdout
    code, _, stderr = run_cli(["info", path, "--backends", "cpu"], capsys)
    assert code == 2 and "set model_type to 'depth'" in stderr


@pytest.mark.ros
@pytest.mark.timeout(120)
@pytest.mark.parametrize("args,expected", [
    (["-p", "model_type:=depth", "-p", "input_normalization:=custom",
      "-p", "input_std:=[1.0, 0.0, 1.0]"], "input_std must be > 0 for each channel"),
    (["-p", "model_type:=depth", "-p", "depth_output:=2"],
     "depth_output 2 is past its 1 output(s)"),
    ([], "looks like a single-image depth network: set model_type to 'depth'"),
])
def test_node_startup_refuses_in_one_line(maker, tmp_path, args, expected):
    """The node as its own process: a depth file it cannot read fails fast, one FATAL line."""
    pytest.importorskip("rclpy")
    from support.node_startup import startup_refusal
    path = maker.write_depth_model(tmp_path / "d.tflite", H, W, "NHWC")
    code, lines = startup_refusal(["-p", "backend:=cpu", "-p", f"model_path:={path}", *args])
    assert code == 1 and len(lines) == 1 and "[FATAL]" in lines[0], lines
    assert expected in lines[0]
