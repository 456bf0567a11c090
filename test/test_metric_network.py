# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A generic network declared metric (``depth_output_unit: metres``): FastDepth, a real network
trained on NYU Depth v2 (../shared/real-scenes/models/fastdepth), publishes its own metres in
the node over DDS and through ``process``, checked against the measured depth of the shared
frames; with an estimated scale source its metres are one more estimate, fused by the errors
(the rule written out here) and withheld with the reason where the two are not sure enough."""

import json
import math

import cv2
import numpy as np
import pytest

from support.common import run_cli
from support.seven_scenes import measured, published
from tools.eval.real_scenes import FASTDEPTH, FRAMES, REAL_SCENES, depth_errors
from dense_perception.core.scale.estimators import Estimate
from dense_perception.core.scale.model_metres import with_model_metres

SEVEN = REAL_SCENES / "7scenes-redkitchen"
real = pytest.mark.skipif(not (FASTDEPTH.is_file() and SEVEN.is_dir()),
                          reason=f"{FASTDEPTH} is absent (see ../shared/real-scenes/README.md)")
FLAGS = ["--model", FASTDEPTH, "--model-type", "depth", "--depth-output-unit", "metres",
         "--fit", "stretch", "--output-resolution", "input", "--backend", "cpu"]
NYU = [f for f in FRAMES if f.name.startswith("nyu")]


@pytest.mark.parametrize("model_error,measured,sigma", [(0.1, 1.1, 0.05), (0.2, 0.8, 0.1),
                                                        (0.05, 1.02, 0.2)])
def test_the_networks_metres_and_a_measurement_are_fused_by_their_errors(
        model_error, measured, sigma):
    """The inverse-variance mean in log scale of the network's 1 and the measurement."""
    fused, disagree = with_model_metres(Estimate(measured, sigma=sigma), "motion", model_error)
    w_net, w_meas = 1 / model_error ** 2, 1 / sigma ** 2
    assert not disagree
    assert fused.scale == pytest.approx(math.exp(w_meas * math.log(measured) / (w_net + w_meas)))
    assert fused.sigma == pytest.approx((w_net + w_meas) ** -0.5)


def test_a_measurement_beyond_both_errors_corrects_the_networks_metres_and_says_so():
    fused, disagree = with_model_metres(Estimate(1.5, sigma=0.05), "motion", 0.1)
    # |log 1.5| = 0.405 > 3 * sqrt(0.1^2 + 0.05^2) = 0.335
    assert disagree and fused.scale == 1.5 and fused.sigma == 0.05
    assert "the network's metres are 0.67x what motion measures" in fused.reason
    assert "corrected by motion" in fused.reason


def test_without_a_measurement_the_networks_own_metres_stand_with_its_error():
    fused, disagree = with_model_metres(Estimate(None, reason="too little baseline"), "motion",
                                        0.1)
    assert fused.scale == 1.0 and fused.sigma == 0.1 and not disagree
    assert fused.reason == "too little baseline"


@real
@pytest.mark.ros
def test_the_node_publishes_the_networks_own_metres_on_its_training_rooms(harness_factory):
    """NYU frames (the rooms FastDepth was trained on) through the node over DDS, with no scale
    source: metres on depth/image within 12 % of the measured depth's scale, AbsRel < 0.15
    (its README: 0.07-0.12 at its own crop; here the whole frame, stretched)."""
    pytest.importorskip("rclpy")
    from support.real_info import frame_info
    from dense_perception.core.conversions import image_msg_to_array
    h = harness_factory({"model_path": str(FASTDEPTH), "model_type": "depth",
                         "depth_output_unit": "metres", "fit": "stretch",
                         "output_resolution": "input", "backend": "cpu"},
                        subscribe=("depth/image", "/diagnostics"))
    h.wait_matched(("depth/image",))
    for n, frame in enumerate(NYU):
        rgb, truth = frame.rgb(), frame.depth()
        header = h.header(sec=40 + n)
        h.publish_frame(rgb, header, "rgb8", info=frame_info(frame, rgb.shape[1], rgb.shape[0]))
        msg = h.wait_for("depth/image", where=lambda m: m.header.stamp == header.stamp,
                         timeout=30)[0]
        errors = depth_errors(truth, image_msg_to_array(msg))
        assert abs(errors["scale_error"]) < 0.12 and errors["absrel"] < 0.15, (frame.name,
                                                                                errors)
    _, _, values = h.diagnostics(lambda d: d[2].get("frames processed") == str(len(NYU)),
                                 timeout=20)
    assert values["depth units"] == "metres (metric model)"


@real
def test_process_publishes_its_metres_and_motion_withholds_what_it_cannot_vouch_for(
        tmp_path, capsys):
    """7-Scenes frames 0-99 through ``process``: alone, each frame's metres against the
    measured depth (FastDepth is a median 3 % off here); with the motion scale and the true
    poses, every published frame within 10 % or withheld with the reason in summary.json."""
    common = [*FLAGS, "--camera-info-yaml", SEVEN / "camera.yaml", "--outputs", "depth"]
    alone = tmp_path / "alone"
    code, _, err = run_cli(["process", SEVEN, *common, "--out", alone], capsys)
    assert code == 0, err
    depth = published(alone)
    assert len(depth) == 100
    errors = [depth_errors(measured(i), depth[i])["scale_error"] for i in sorted(depth)]
    assert abs(float(np.median(errors))) < 0.05
    summary = json.loads((alone / "summary.json").read_text())
    assert summary["model"]["metric_depth"] is True
    checked = tmp_path / "checked"
    code, _, err = run_cli(["process", SEVEN, *common, "--out", checked, "--poses",
                            SEVEN / "trajectory.tum", "--depth-scale-source", "motion"], capsys)
    assert code == 0, err
    kept = published(checked)
    assert all(abs(depth_errors(measured(i), kept[i])["scale_error"]) <= 0.10 for i in kept)
    scale = json.loads((checked / "summary.json").read_text())["depth"]
    assert scale["frames_metric"] == len(kept)
    withheld = 100 - len(kept)
    assert withheld == 0 or any("max_scale_error" in kind for kind in scale["withheld_by_reason"])


@real
def test_the_models_readme_recipe_for_a_metric_network_runs_as_written(tmp_path, capsys):
    """models/README.md's FastDepth ``process`` line, run as a new user would on the NYU frames
    (the file and the folder named as the README names them): metres within 12 % of the
    measured depth's scale on each."""
    from support.common import REPO
    text = (REPO / "models" / "README.md").read_text()
    line = next(ln for ln in text.splitlines()
                if ln.startswith("dense-perception process") and "fastdepth" in ln)
    folder = tmp_path / "nyu"
    folder.mkdir()
    for frame in NYU:
        cv2.imwrite(str(folder / f"{frame.name}.png"), cv2.cvtColor(frame.rgb(), cv2.COLOR_RGB2BGR))
    (tmp_path / FASTDEPTH.name).symlink_to(FASTDEPTH)
    argv = line.split()[1:]
    assert argv[:2] == ["process", "nyu/"] and argv[3] == FASTDEPTH.name
    argv[1], argv[3] = folder, tmp_path / FASTDEPTH.name
    out = tmp_path / "out"
    code, _, err = run_cli([*argv, "--out", out, "--outputs", "depth", "--backend", "cpu"],
                           capsys)
    assert code == 0, err
    for frame in NYU:
        depth = np.load(out / "depth" / f"{frame.name}.npy")
        errors = depth_errors(frame.depth(), depth)
        assert abs(errors["scale_error"]) < 0.12, (frame.name, errors)


@pytest.mark.timeout(120)
@pytest.mark.parametrize("off", [1.0, 1.5])
def test_motion_corrects_a_metric_networks_metres_where_they_disagree_beyond_both_errors(off):
    """The painted moving world: a metric network whose metres are ``off`` times the scene's
    (a camera unlike its training) checked by the motion scale. Right, the scale stays 1 and
    nothing disagrees; 1.5x too far, motion's measurement wins, the scale goes to 1 / 1.5 and
    the report says the network was corrected."""
    from support.moving_scene import K, path, render
    from dense_perception.core.motion.motion_scale import MotionScale
    from dense_perception.core.scale.metric_scale import DepthScaler, ScaleConfig
    motion = MotionScale(min_baseline=0.1)
    scaler = DepthScaler(ScaleConfig("motion", max_scale_error=1.0, metric_error=0.1))
    reports = []
    for i, pose in enumerate(path(40)):
        grey, depth = render(pose)
        network = (depth * off).astype(np.float32)
        est = motion.estimate(i / 30, pose, network, K, grey)
        reports.append(scaler.update(i / 30, network, K, None, "input", estimate=est,
                                     metric_model=True))
    last = reports[-1]
    assert last.metric and last.scale == pytest.approx(1.0 / off, rel=0.05)
    assert last.units() == "metres (metric model, checked by motion)"
    corrected = [r for r in reports if "corrected by motion" in r.reason]
    assert bool(corrected) == (off != 1.0)
    assert all(r.disagrees for r in corrected)


def test_a_network_steadily_off_on_this_camera_claims_that_error_not_its_training_one():
    """Measurements that keep finding the network 15 % far (each with a 5 % error) widen its
    error from 10 % towards sqrt(0.1^2 + log(1.15)^2 - 0.05^2): the fused estimate leans to
    the measurements and claims an error that covers the gap."""
    from dense_perception.core.scale.model_metres import ModelMetres
    model = ModelMetres()
    gap = math.log(1.15)
    for _ in range(40):
        fused, _ = model.fuse(Estimate(1 / 1.15, sigma=0.05), "motion", 0.1)
    widened = math.sqrt(0.1 ** 2 + gap ** 2 - 0.05 ** 2)
    assert model.error(0.1) == pytest.approx(widened, rel=1e-6)
    w_net, w_meas = 1 / widened ** 2, 1 / 0.05 ** 2
    assert fused.scale == pytest.approx(math.exp(-gap * w_meas / (w_net + w_meas)))
    assert abs(math.log(fused.scale) + gap) <= 2 * fused.sigma + 0.01
