# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception process --rerun FILE.rrd``: the recording read back with the rerun SDK
and checked against truths written out here: the bundled test model's depth and class of
each colour, the camera's pose from the robot's odometry and its mounting (support/
motion_bags.py), the pinhole of the crop and resize, the depth files the same run wrote, and
the scale summary.json records; and the refusals, each one line (exit 2)."""

import json
import math
import sys

import cv2
import numpy as np
import pytest

from support.bag_maker import COLOURS, frame_of, tips_depth, tips_label
from support.common import DA3_TEST_MODEL, TIPS_TEST_MODEL, run_cli
from support.motion_bags import STAMP0, driving, write_motion_bag
from support.rerun_recordings import column, image, read_recording

# marker rerun: the SDK is in .venv (make test), not in the other Pythons' venvs
pytestmark = [pytest.mark.rerun, pytest.mark.timeout(120)]


def test_a_bags_run_with_its_odometry_is_recorded_frame_by_frame(tmp_path, capsys):
    # Three uniform frames at 0.2, 0.4 and 0.6 s of a robot driving along x at 1 m/s from
    # -0.1 s (odometry x = t + 0.1), the camera 0.1 m ahead and 0.5 m up, looking along x.
    times = [0.2, 0.4, 0.6]
    bag = write_motion_bag(tmp_path / "b", times, driving(-0.1, 1.0), fx=50.0)
    rrd = tmp_path / "run.rrd"
    code, _, err = run_cli(["process", bag, "--model", TIPS_TEST_MODEL, "--out",
                            tmp_path / "out", "--odometry-topic", "/odom", "--rerun", rrd,
                            "--no-temporal-alignment"],  # each frame the model's own depth
                           capsys)
    assert code == 0, err
    summary = json.loads((tmp_path / "out" / "summary.json").read_text())
    assert summary["rerun"] == {"path": str(rrd), "frames": 3}
    found = read_recording(rrd)
    for entity in ("/world/camera", "/world/camera/image/rgb", "/world/camera/image/depth",
                   "/world/camera/image/segmentation", "/world/points", "/scale/in_metres"):
        assert entity in found, f"{entity} not recorded"
    # the odometry's frame, REP 103: x forward, y left, z up (rerun's codes 5, 4, 1)
    assert [b.column("ViewCoordinates:xyz")[0].as_py() for s, b in found["/world"] if s] == \
        [[[5, 4, 1]]]

    # one row per frame on both timelines, the stamps the images'
    frames, _ = column(found, "/world/camera/image/depth", "DepthImage:buffer")
    assert frames == [0, 1, 2]
    _, stamps = column(found, "/world/camera/image/depth", "stamp")  # chunks: the SDK's
    stamps = [t.value for t in stamps]
    assert stamps == [(STAMP0 * 10**9 + round(t * 1e9)) for t in times]

    # the camera's pose: x = odometry + 0.1, z = 0.5; optical axes x right = -y, y down = -z,
    # z forward = x of the odometry frame (rerun stores the matrix by columns)
    _, translations = column(found, "/world/camera", "Transform3D:translation")
    _, rotations = column(found, "/world/camera", "Transform3D:mat3x3")
    optical = np.array([[0, 0, 1], [-1, 0, 0], [0, -1, 0]], float)
    for t, translation, rotation in zip(times, translations, rotations):
        assert np.allclose(translation.as_py()[0], [t + 0.2, 0.0, 0.5], atol=1e-6)
        assert np.allclose(np.reshape(rotation.as_py()[0], (3, 3)).T, optical, atol=1e-6)
    # the pinhole of the published grid: the 64x48 frame's centred 48x48 crop up to 448x448
    _, pinholes = column(found, "/world/camera", "Pinhole:image_from_camera")
    k = np.reshape(pinholes[0].as_py()[0], (3, 3)).T
    s = 448 / 48
    assert np.allclose(k, [[50 * s, 0, (31.5 - 8 + 0.5) * s - 0.5],
                           [0, 50 * s, (23.5 + 0.5) * s - 0.5], [0, 0, 1]], rtol=1e-5)

    # per frame: the model's depth and class of its colour, the colour itself (JPEG)
    _, depths = column(found, "/world/camera/image/depth", "DepthImage:buffer")
    _, depth_formats = column(found, "/world/camera/image/depth", "DepthImage:format")
    _, labels = column(found, "/world/camera/image/segmentation", "SegmentationImage:buffer")
    _, label_formats = column(found, "/world/camera/image/segmentation",
                              "SegmentationImage:format")
    _, jpegs = column(found, "/world/camera/image/rgb", "EncodedImage:blob")
    for i, t in enumerate(times):
        depth = image(depths[i], depth_formats[i], np.float32)
        assert depth.shape == (448, 448)
        assert np.allclose(depth, tips_depth(COLOURS[i]), rtol=1e-3)
        assert (image(labels[i], label_formats[i], np.uint8) == tips_label(COLOURS[i])).all()
        blob = jpegs[i].values[0].values.to_numpy(zero_copy_only=False)
        rgb = cv2.cvtColor(cv2.imdecode(blob, cv2.IMREAD_COLOR), cv2.COLOR_BGR2RGB)
        assert rgb.shape == (448, 448, 3)
        assert np.abs(rgb.astype(int) - COLOURS[i]).max() <= 4
    # the class names, ADE20K's order: 0 wall, 3 floor, 149 flag
    (_, context), = [(s, b) for s, b in found["/world/camera/image/segmentation"] if s]
    classes = context.column("AnnotationContext:context")[0].as_py()[0]
    names = {c["class_id"]: c["class_description"]["info"]["label"] for c in classes}
    assert len(names) == 150 and (names[0], names[3], names[149]) == ("wall", "floor", "flag")

    # the cloud in the odometry frame: every point of a uniform depth d is d ahead of the
    # camera, x = odometry + 0.1 + d
    _, clouds = column(found, "/world/points", "Points3D:positions")
    for i, t in enumerate(times):
        xyz = np.array(clouds[i].as_py())
        assert len(xyz) > 100
        assert np.allclose(xyz[:, 0], t + 0.2 + tips_depth(COLOURS[i]), atol=2e-3)
    _, in_metres = column(found, "/scale/in_metres", "Scalars:scalars")
    assert [v.as_py() for v in in_metres] == [[1.0]] * 3  # a metric model


def test_a_folders_depth_in_the_recording_is_the_depth_files(tmp_path, capsys):
    folder = tmp_path / "images"
    folder.mkdir()
    for i in range(2):
        cv2.imwrite(str(folder / f"{i}.png"), cv2.cvtColor(frame_of(COLOURS[i]),
                                                           cv2.COLOR_RGB2BGR))
    rrd = tmp_path / "run.rrd"
    code, _, err = run_cli(["process", folder, "--model", TIPS_TEST_MODEL, "--out",
                            tmp_path / "out", "--rerun", rrd], capsys)
    assert code == 0, err
    found = read_recording(rrd)
    _, depths = column(found, "/world/camera/image/depth", "DepthImage:buffer")
    _, formats = column(found, "/world/camera/image/depth", "DepthImage:format")
    for i in range(2):
        written = np.load(tmp_path / "out" / "depth" / f"{i}.npy")
        assert np.array_equal(image(depths[i], formats[i], np.float32),
                              np.nan_to_num(written, nan=0.0))
    # no poses: no camera transform, the cloud in the camera's own frame, d ahead of it
    assert not column(found, "/world/camera", "Transform3D:translation")[0]
    assert "/world/points" not in found
    _, clouds = column(found, "/world/camera/points", "Points3D:positions")
    assert np.allclose(np.array(clouds[1].as_py())[:, 2], tips_depth(COLOURS[1]), rtol=1e-3)


def test_the_scale_and_its_error_over_time_are_the_summarys(tmp_path, capsys):
    """A reference depth for the first 2 of 6 frames, the scale held for 2.5 s: four frames
    in metres, two withheld; the recording's series are summary.json's, the band 2 sigma
    either side of the scale."""
    from support.reference_bags import write_reference_bag
    src = tmp_path / "in"
    write_reference_bag(src, 6, np.random.default_rng(5), referenced=2)
    rrd = tmp_path / "run.rrd"
    code, _, err = run_cli(["process", src, "--model", DA3_TEST_MODEL, "--backend", "cpu",
                            "--out", tmp_path / "out", "--outputs", "depth", "--copy", "none",
                            "--topic", "/cam/image_raw", "--depth-scale-source", "reference_depth",
                            "--reference-depth-topic", "/tof/depth",
                            "--depth-scale-max-age", "2.5", "--max-scale-error", "1",
                            "--rerun", rrd], capsys)
    assert code == 0, err
    frames = json.loads((tmp_path / "out" / "summary.json").read_text())["depth"]["frames"]
    found = read_recording(rrd)

    def series(name):
        at, values = column(found, f"/scale/{name}", "Scalars:scalars")
        return dict(zip(at, (v.as_py()[0] for v in values)))
    assert series("in_metres") == {i: float(f["in_metres"]) for i, f in enumerate(frames)}
    assert list(series("in_metres").values()) == [1.0] * 4 + [0.0] * 2
    scale, error = series("in_use"), series("error_2sigma_pct")
    upper, lower = series("upper_2sigma"), series("lower_2sigma")
    held = {i: f for i, f in enumerate(frames) if f["scale"] is not None}
    assert set(scale) == set(error) == set(upper) == set(lower) == set(held)
    for i, f in held.items():
        assert scale[i] == pytest.approx(f["scale"], rel=1e-5)
        assert error[i] == f["error_2sigma_pct"]
        band = math.exp(f["error_2sigma_pct"] / 100)
        assert upper[i] == pytest.approx(f["scale"] * band, rel=2e-3)
        assert lower[i] == pytest.approx(f["scale"] / band, rel=2e-3)
    # why the last two were withheld, in words, on the same frames
    at, texts = column(found, "/log/scale", "TextLog:text")
    assert at == [4, 5]
    for i, text in zip(at, texts):
        assert text.as_py()[0] == f"{frames[i]['reason_kind']}: {frames[i]['reason']}"


def test_what_cannot_be_recorded_is_refused_in_one_line(tmp_path, capsys, monkeypatch):
    image_file = tmp_path / "a.png"
    cv2.imwrite(str(image_file), frame_of(COLOURS[0]))
    taken = tmp_path / "taken.rrd"
    taken.write_bytes(b"")
    for inputs, extra, says in [
            ([image_file], ["--rerun", taken], f"--rerun {taken} exists"),
            ([image_file, image_file], ["--out", tmp_path / "many", "--rerun",
                                        tmp_path / "x.rrd"], "--rerun records one input")]:
        code, _, err = run_cli(["process", *inputs, "--model", TIPS_TEST_MODEL, *extra],
                               capsys)
        assert code == 2 and says in err and len(err.strip().splitlines()) == 1, err
    monkeypatch.setitem(sys.modules, "rerun", None)  # as where the SDK is not installed
    code, _, err = run_cli(["process", image_file, "--model", TIPS_TEST_MODEL, "--rerun",
                            tmp_path / "y.rrd"], capsys)
    assert code == 2 and "pip install 'dense-perception[rerun]'" in err, err
    assert not (tmp_path / "y.rrd").exists()


def test_a_bags_cameras_are_recorded_each_as_its_own(tmp_path, capsys):
    """Two cameras of one bag (front 64x48 at fx 100, rear 48x48 at fx 60, each its own
    colour): each under its own entity, with its own pinhole, depth and frame count."""
    from support.camera_bags import CAMERAS, FRAMES, write_two_camera_bag
    src = write_two_camera_bag(tmp_path / "two")
    rrd = tmp_path / "run.rrd"
    code, _, err = run_cli(["process", src, "--model", TIPS_TEST_MODEL, "--topic",
                            "/front/image_raw", "--topic", "/rear/image_raw",
                            "--output-resolution", "input", "--out", tmp_path / "out",
                            "--rerun", rrd], capsys)
    assert code == 0, err
    found = read_recording(rrd)
    assert "/world/camera" not in found
    for camera, (colour, fx, (width, height), _) in CAMERAS.items():
        entity = f"/world/camera_{camera}"
        frames, pinholes = column(found, entity, "Pinhole:image_from_camera")
        assert len(frames) == FRAMES
        assert np.allclose(np.reshape(pinholes[0].as_py()[0], (3, 3)).T,
                           [[fx, 0, (width - 1) / 2], [0, fx, (height - 1) / 2], [0, 0, 1]])
        _, depths = column(found, f"{entity}/image/depth", "DepthImage:buffer")
        _, formats = column(found, f"{entity}/image/depth", "DepthImage:format")
        assert len(depths) == FRAMES
        depth = image(depths[0], formats[0], np.float32)
        assert depth.shape == (height, width)  # the camera's own grid
        centre = depth[:, (width - height) // 2:(width + height) // 2]
        assert np.allclose(centre, tips_depth(colour), rtol=2e-3)
        assert len(column(found, f"/scale/camera_{camera}/in_metres",
                          "Scalars:scalars")[0]) == FRAMES
