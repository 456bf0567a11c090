# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Metric depth from DA3 in the offline ``process`` command: ground plane, a bag's reference depth
topic, and relative depth never written as metres (files, bags, summary.json)."""

import json
import math

import cv2
import numpy as np
import pytest

from support.common import DA3_TEST_MODEL

pytest.importorskip("rosbags")

from rosbags.rosbag2 import StoragePlugin, Writer  # noqa: E402

from tools.common.metric_scene import HEIGHT, WIDTH, paint  # noqa: E402
from support.bag_maker import read_bag  # noqa: E402
from support.reference_bags import write_reference_bag  # noqa: E402
from support.common import run_cli as run  # noqa: E402
from tools.common.metric_scene import FORWARD, PITCHED_WITH_BOX, Scene  # noqa: E402
from dense_perception.core.geometry.intrinsics import Intrinsics  # noqa: E402
from dense_perception.offline.inputs import bag_io  # noqa: E402
from dense_perception.offline.inputs.file_io import read_ply  # noqa: E402

TS = bag_io.TYPESTORE
T = TS.types
# The pinhole guess (--fallback-hfov) that gives the scenes' own focal length.
HFOV = math.degrees(2 * math.atan((WIDTH / 2) / FORWARD.fx))


def write_scene_image(path, scene, s):
    z, _ = scene.depth_and_surface()
    cv2.imwrite(str(path), cv2.cvtColor(paint(z / s), cv2.COLOR_RGB2BGR))  # PNG: lossless
    return z


def test_relative_depth_is_written_unitless_and_never_as_metres(tmp_path, capsys):
    image = tmp_path / "scene.png"
    z = write_scene_image(image, FORWARD, 0.75)
    out = tmp_path / "out"
    code, stdout, stderr = run(["process", image, "--model", DA3_TEST_MODEL, "--backend", "cpu",
                                "--out", out, "--outputs", "depth,points"], capsys)
    assert code == 0, stderr
    depth = np.load(out / "depth" / "scene.npy")
    assert np.abs(depth - z / 0.75).max() < 0.003  # relative units, as the model gave them
    assert not list((out / "points").iterdir())   # no PLY: its coordinates would be metres
    summary = json.loads((out / "summary.json").read_text())
    assert summary["depth"]["units"] == "relative (unitless; depth_scale_source: none)"
    assert summary["depth"]["frames_relative"] == 1 and summary["files"]["points"] == 0
    for extra, why in [(["--depth-format", "png16"], "--depth-format png16 means millimetres"),
                       (["--max-depth", "4"], "--max-depth is in metres")]:
        code, _, stderr = run(["process", image, "--model", DA3_TEST_MODEL, "--out",
                               tmp_path / f"refused{len(extra[0])}", *extra], capsys)
        assert code == 2 and why in stderr and "set --depth-scale-source to fixed" in stderr
    code, _, stderr = run(["process", image, "--model", DA3_TEST_MODEL, "--out", tmp_path / "r",
                           "--depth-scale-source", "ground_plane"], capsys)
    assert code == 2 and "needs --camera-height" in stderr


@pytest.mark.parametrize("scene,s", [(FORWARD, 0.75), (PITCHED_WITH_BOX, 0.35)])
def test_ground_plane_from_camera_height(tmp_path, capsys, scene, s):
    image = tmp_path / "scene.png"
    z = write_scene_image(image, scene, s)
    out = tmp_path / "out"
    code, stdout, stderr = run(["process", image, "--model", DA3_TEST_MODEL, "--backend", "cpu",
                                "--out", out, "--outputs", "depth,points", "--fallback-hfov",
                                HFOV, "--depth-scale-source", "ground_plane", "--camera-height",
                                scene.height, "--depth-format", "png16", "--points-stride", "1",
                                "--max-depth", "50"], capsys)
    assert code == 0, stderr
    mm = cv2.imread(str(out / "depth" / "scene.png"), cv2.IMREAD_UNCHANGED)
    assert mm.dtype == np.uint16 and np.abs(mm / 1000.0 / z - 1).max() < 0.03
    points = read_ply(out / "points" / "scene.ply")
    xyz = np.stack([points["x"], points["y"], points["z"]], axis=-1).astype(np.float64)
    _, surface = scene.depth_and_surface()
    floor = xyz[surface.ravel() == 0]
    assert np.abs(floor @ scene.down() / scene.height - 1).max() < 0.03
    summary = json.loads((out / "summary.json").read_text())
    assert summary["depth"]["units"] == "metres (scale from ground_plane)"
    assert summary["depth"]["frames"][0]["scale"] == pytest.approx(s, rel=0.03)


def test_bag_reference_depth_topic(tmp_path, capsys):
    src = tmp_path / "in"
    z, s = write_reference_bag(src, 3, np.random.default_rng(3))
    out = tmp_path / "out"
    code, stdout, stderr = run(["process", src, "--model", DA3_TEST_MODEL, "--backend", "cpu",
                                "--out", out, "--outputs", "depth,points", "--copy", "none",
                                "--topic", "/cam/image_raw",
                                "--depth-scale-source", "reference_depth",
                                "--reference-depth-topic", "/tof/depth"], capsys)
    assert code == 0, stderr
    messages, types = read_bag(out)
    depths = [conversions_array(m) for _, m in messages["/cam/depth/image"]]
    assert len(depths) == 3 and len(messages["/cam/points"]) == 3
    for depth in depths:
        assert np.abs(depth / z - 1).max() < 0.02
    summary = json.loads((out / "summary.json").read_text())
    assert summary["depth"]["units"] == "metres (scale from reference_depth)"
    assert summary["depth"]["frames_metric"] == 3
    code, _, stderr = run(["process", src, "--model", DA3_TEST_MODEL, "--out", tmp_path / "x",
                           "--topic", "/cam/image_raw",
                           "--depth-scale-source", "reference_depth",
                           "--reference-depth-topic", "/lidar"], capsys)
    assert code == 2 and "'/lidar' is not in the bag" in stderr and "/tof/depth" in stderr


def test_bag_without_reference_withholds_depth_and_points(tmp_path, capsys):
    """Estimated scale never found (each reference is stamped 0.5 s after its image, beyond the
    0.05 s slop): nothing metric is written, the colour view is, and the summary says why."""
    src = tmp_path / "in"
    write_reference_bag(src, 2, np.random.default_rng(4), reference_offset_ns=500_000_000)
    out = tmp_path / "out"
    code, _, stderr = run(["process", src, "--model", DA3_TEST_MODEL, "--backend", "cpu",
                           "--out", out, "--outputs", "depth,points", "--copy", "none",
                           "--topic", "/cam/image_raw",
                           "--depth-scale-source", "reference_depth",
                           "--reference-depth-topic", "/tof/depth"], capsys)
    assert code == 0, stderr
    messages, _ = read_bag(out)
    assert "/cam/depth/image" not in messages and "/cam/points" not in messages
    assert len(messages["/cam/depth/colored"]) == 2
    summary = json.loads((out / "summary.json").read_text())["depth"]
    assert summary["frames_withheld"] == 2
    assert [f["scale"] for f in summary["frames"]] == [None, None]
    assert summary["withheld_by_reason"] == {"no reference depth for this frame": 2}


def conversions_array(msg):
    from dense_perception.core.conversions import image_msg_to_array
    return image_msg_to_array(msg)


@pytest.mark.timeout(120)
def test_a_folder_of_photos_gives_each_its_own_scale(tmp_path, capsys):
    """Unrelated photos: each image's depth from its own floor, none filtered
    with another's or held from one: a photo with no floor gets no depth file, and the summary
    counts it. (Filtered, the third photo got the mean of the first and third scales, 22 %
    off, and the second the first one's.)"""
    photos = tmp_path / "photos"
    photos.mkdir()
    z1 = write_scene_image(photos / "1_near.png", FORWARD, 0.9)
    cv2.imwrite(str(photos / "2_wall.png"), cv2.cvtColor(
        paint(np.full((HEIGHT, WIDTH), 2.0)), cv2.COLOR_RGB2BGR))
    z3 = write_scene_image(photos / "3_far.png", FORWARD, 0.6)
    out = tmp_path / "out"
    code, _, stderr = run(["process", photos, "--model", DA3_TEST_MODEL, "--backend", "cpu",
                           "--out", out, "--outputs", "depth", "--fallback-hfov", HFOV,
                           "--depth-scale-source", "ground_plane", "--camera-height",
                           FORWARD.height], capsys)
    assert code == 0, stderr
    assert np.abs(np.load(out / "depth" / "1_near.npy") / z1 - 1).max() < 0.03
    assert np.abs(np.load(out / "depth" / "3_far.npy") / z3 - 1).max() < 0.03
    assert not (out / "depth" / "2_wall.npy").exists()
    summary = json.loads((out / "summary.json").read_text())["depth"]
    assert summary["scale_filter"] == "none: each image its own estimate"
    assert summary["frames_withheld"] == 1 and summary["frames_metric"] == 2
    scales = [f["scale"] for f in summary["frames"]]
    assert scales[0] == pytest.approx(0.9, rel=0.01) and scales[1] is None
    assert scales[2] == pytest.approx(0.6, rel=0.01)


@pytest.mark.timeout(120)
def test_a_bags_held_scale_expires(tmp_path, capsys):
    """Offline, the node's rule: references for the first 2 of 6 frames (1 s apart); with
    --depth-scale-max-age 2.5 the scale is held for frames 3 and 4 (1 and 2 s old), then
    withheld."""
    src = tmp_path / "in"
    write_reference_bag(src, 6, np.random.default_rng(5), referenced=2)
    out = tmp_path / "out"
    code, _, stderr = run(["process", src, "--model", DA3_TEST_MODEL, "--backend", "cpu",
                           "--out", out, "--outputs", "depth", "--copy", "none",
                           "--topic", "/cam/image_raw", "--depth-scale-source",
                           "reference_depth", "--reference-depth-topic", "/tof/depth",
                           "--depth-scale-max-age", "2.5",
                           "--max-scale-error", "1"], capsys)  # the age rule alone
    assert code == 0, stderr
    messages, _ = read_bag(out)
    assert [m.header.stamp.sec for _, m in messages["/cam/depth/image"]] == [
        1000, 1001, 1002, 1003]
    summary = json.loads((out / "summary.json").read_text())["depth"]
    assert summary["frames_withheld"] == 2
    assert [f["scale"] is not None for f in summary["frames"]] == [True] * 4 + [False] * 2


# ---- the node's CameraInfo rule offline; a guessed camera never enters the filter -------------
# A level camera 1.0 m above the floor with a 90 deg lens (fx = 252 on the 504 px width), a wall
# 2 m ahead, painted at s = 0.42: the 60 deg pinhole guess sees its floor 1.73x too near.
WIDE = Scene(height=1.0, pitch_deg=0.0, wall=2.0, fx=(WIDTH / 2) / math.tan(math.radians(45.0)))
WIDE_S = 0.42


def write_late_camera_info_bag(path, frames=20, info_delay_ns=5_000_000):
    """10 Hz images of WIDE, each followed by its CameraInfo stamped (and logged)
    ``info_delay_ns`` after it, as some drivers stamp them."""
    z, _ = WIDE.depth_and_surface()
    k = Intrinsics(WIDE.fx, WIDE.fx, WIDE.cx, WIDE.cy, WIDTH, HEIGHT)

    def header(ns):
        return T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](
            sec=1000 + ns // 1_000_000_000, nanosec=ns % 1_000_000_000), frame_id="cam")
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        img = w.add_connection("/cam/image_raw", bag_io.IMAGE, typestore=TS)
        info = w.add_connection("/cam/camera_info", bag_io.CAMERA_INFO, typestore=TS)
        for i in range(frames):
            ns, t = i * 100_000_000, 5_000_000_000 + i * 100_000_000
            w.write(img, t, TS.serialize_cdr(
                bag_io.array_to_image(paint(z / WIDE_S), "rgb8", header(ns)), bag_io.IMAGE))
            w.write(info, t + info_delay_ns, TS.serialize_cdr(
                bag_io.intrinsics_to_camera_info(k, header(ns + info_delay_ns)),
                bag_io.CAMERA_INFO))
    return z


@pytest.mark.timeout(120)
def test_camera_info_stamped_after_its_image_is_the_nodes_rule(tmp_path, capsys):
    """CameraInfo stamped 5 ms after each image: within the default --camera-info-slop (the
    node's 0.05 s), every frame has the real lens and the right scale. (With no slop the first
    frame got the guess, and the frames' scales read 1.73x, then 1.32x for 16 frames, then 1.0.)
    With --camera-info-slop 0 the first frame is the guess: published with its own scale,
    counted in the summary, and it never enters the filter of the real lens."""
    src = tmp_path / "in"
    z = write_late_camera_info_bag(src)
    scales = {}
    for slop in ("default", "0"):
        out = tmp_path / f"out_{slop}"
        code, _, stderr = run(["process", src, "--model", DA3_TEST_MODEL, "--backend", "cpu",
                               "--out", out, "--outputs", "depth", "--copy", "none",
                               "--depth-scale-source", "ground_plane", "--camera-height",
                               WIDE.height, *([] if slop == "default" else
                                              ["--camera-info-slop", slop])], capsys)
        assert code == 0, stderr
        summary = json.loads((out / "summary.json").read_text())
        scales[slop] = np.array([f["scale"] for f in summary["depth"]["frames"]]) / WIDE_S
        if slop == "default":  # no 1.73x, no run of 1.32x: the real lens from the first frame
            assert np.abs(scales[slop] - 1).max() < 0.01, np.round(scales[slop], 3)
        messages, _ = read_bag(out)
        depths = [conversions_array(m) for _, m in messages["/cam/depth/image"]]
        guessed = 0 if slop == "default" else 1
        assert summary["guessed_intrinsics_frames"] == guessed
        assert summary["depth"]["frames_guessed_camera"] == guessed
        for depth in depths[guessed:]:
            assert np.abs(depth / z - 1).max() < 0.03
    assert scales["0"][0] == pytest.approx(1.73, rel=0.03)  # the guess's own floor, marked
    assert np.abs(scales["0"][1:] - 1).max() < 0.01
