# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The offline ``dense-perception`` command on a video, an image folder and a single image, with
real LiteRT and the test models (uniform colours whose outputs they give in closed form)."""

import json
from pathlib import Path

import cv2
import numpy as np
import pytest

from support.common import DA3_TEST_MODEL, TIPS_TEST_MODEL

pytest.importorskip("rosbags")

from dense_perception.offline.inputs.file_io import read_ply  # noqa: E402

from support.bag_maker import (COLOURS, da3_depth, frame_of, tips_depth, tips_label,  # noqa: E402
                               tips_normal)
from support.common import run_cli as run  # noqa: E402
from support.video_maker import write_video  # noqa: E402


def test_video_to_folder(tmp_path, capsys):
    colours = COLOURS[:5]
    video, tol = write_video(tmp_path / "clip", colours)
    out = tmp_path / "clip_out"
    code, stdout, stderr = run(["process", video, "--model", TIPS_TEST_MODEL, "--backend",
                                "cpu", "--cpu-precision", "fp32",  # exact values below
                                "--out", out, "--depth-format", "png16"], capsys)
    assert code == 0, stderr
    for sub in ("depth", "depth_colored", "normals", "normals_colored", "labels",
                "labels_colored", "points"):
        assert len(list((out / sub).iterdir())) == 5, sub
    for i, rgb in enumerate(colours):
        stem = f"frame_{i:06d}"
        mm = cv2.imread(str(out / "depth" / f"{stem}.png"), cv2.IMREAD_UNCHANGED)
        assert mm.dtype == np.uint16 and mm.shape == (448, 448)
        assert np.abs(mm.astype(int) - round(tips_depth(rgb) * 1000)).max() <= 1 + tol * 14
        labels = cv2.imread(str(out / "labels" / f"{stem}.png"), cv2.IMREAD_UNCHANGED)
        assert labels.ndim == 2 and np.abs(labels.astype(int) - tips_label(rgb)).max() <= tol
        normals = np.load(out / "normals" / f"{stem}.npy")
        assert normals.dtype == np.float32 and normals.shape == (448, 448, 3)
        np.testing.assert_allclose(normals[100, 100], tips_normal(rgb), atol=0.01 + tol * 0.01)
        points = read_ply(out / "points" / f"{stem}.ply")
        assert points.shape[0] == 224 * 224
        assert np.abs(points["z"] - tips_depth(rgb)).max() < 0.002 + tol * 0.015
        if tol == 0:
            assert (points["red"] == rgb[0]).all() and (points["blue"] == rgb[2]).all()
    assert len(json.loads((out / "classes.json").read_text())) == 150
    summary = json.loads((out / "summary.json").read_text())
    assert summary["frames"] == 5 and summary["total"] == 5
    assert summary["model"]["kind"] == "tipsv2" and summary["backend"].startswith("cpu")
    for stage in ("preprocess", "inference", "postprocess", "write"):
        assert summary["timing_ms"][stage]["count"] == 5
        assert summary["timing_ms"][stage]["p95_ms"] >= 0
    assert summary["interrupted"] is False


def test_image_folder_da3_in_name_order_and_unreadable_file_skipped(tmp_path, capsys):
    folder = tmp_path / "shots"
    folder.mkdir()
    names = ["img_2.png", "img_10.png", "img_1.jpg"]
    colours = [COLOURS[0], COLOURS[1], (128, 128, 128)]
    for name, rgb in zip(names, colours):
        cv2.imwrite(str(folder / name), frame_of(rgb, 100, 60)[:, :, ::-1].copy(),
                    [cv2.IMWRITE_JPEG_QUALITY, 100])
    (folder / "broken.png").write_bytes(b"not a png")
    (folder / "notes.txt").write_text("ignored")
    code, stdout, stderr = run(["process", folder, "--model", DA3_TEST_MODEL, "--backend", "cpu",
                                "--outputs", "depth,points", "--output-resolution", "input"],
                               capsys)
    out = tmp_path / "shots_dense"  # the default output beside the input
    assert code == 0, stderr
    assert "cannot read image" in stderr and "broken.png" in stderr
    assert "3 frames, 1 skipped" in stdout
    assert sorted(p.name for p in (out / "depth").iterdir()) == [
        "img_1.npy", "img_10.npy", "img_2.npy"]
    for name, rgb in zip(names, colours):
        depth = np.load(out / "depth" / (Path(name).stem + ".npy"))
        assert depth.shape == (60, 100)  # input resolution
        crop = depth[:, ~np.isnan(depth).all(axis=0)]  # the portrait model sees a centre crop
        assert 0 < crop.shape[1] < 100
        tol = 0.02 if name.endswith(".jpg") else 1e-3
        np.testing.assert_allclose(crop, da3_depth(rgb), atol=tol)
    summary = json.loads((out / "summary.json").read_text())
    assert summary["frames"] == 3 and summary["rejected"] == 1
    assert summary["intrinsics"]["100x60"]["guessed"] is True


def test_single_image(tmp_path, capsys):
    image = tmp_path / "one.png"
    cv2.imwrite(str(image), frame_of(COLOURS[3])[:, :, ::-1].copy())
    code, stdout, _ = run(["process", image, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                           "--outputs", "seg"], capsys)
    assert code == 0
    labels = cv2.imread(str(tmp_path / "one_dense" / "labels" / "one.png"), cv2.IMREAD_UNCHANGED)
    assert (labels == tips_label(COLOURS[3])).all()
    assert not (tmp_path / "one_dense" / "depth").exists()

