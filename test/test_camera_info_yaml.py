# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``process --camera-info-yaml FILE``: a camera_calibration YAML, used for image folders and
videos as a bag's CameraInfo is. The truth is OpenCV's (initUndistortRectifyMap for the
rectified image) and the calibration written in each test; the model is the depth stand-in
(models/make_test_models.py), out = 2 + 0.5 r + 0.25 g + 0.125 b of RGB/255, at the images'
own size so that the model's grid is the camera's.
"""

import json
import subprocess
import sys

import cv2
import numpy as np
import pytest
import yaml

from support.common import REPO, run_cli

pytest.importorskip("rosbags")

W, H = 160, 120
K = [150.0, 0.0, 80.5, 0.0, 148.0, 60.2, 0.0, 0.0, 1.0]
D = [-0.25, 0.08, 0.001, -0.0015, 0.0]
R = [1.0, 0.0, 0.0, 0.0, 1.0, 0.0, 0.0, 0.0, 1.0]
P = [140.0, 0.0, 81.0, 0.0, 0.0, 139.0, 59.0, 0.0, 0.0, 0.0, 1.0, 0.0]


def calibration(width=W, height=H, k=K, d=D, r=R, p=P, **extra):
    """A calibration as camera_calibration writes it (camera_info_manager's keys)."""
    data = {"image_width": width, "image_height": height, "camera_name": "front",
            "camera_matrix": {"rows": 3, "cols": 3, "data": list(k)},
            "distortion_model": "plumb_bob",
            "distortion_coefficients": {"rows": 1, "cols": len(d), "data": list(d)},
            "rectification_matrix": {"rows": 3, "cols": 3, "data": list(r)},
            "projection_matrix": {"rows": 3, "cols": 4, "data": list(p)}}
    data.update(extra)
    return data


def write_yaml(path, data):
    path.write_text(yaml.safe_dump(data, sort_keys=False) if isinstance(data, dict) else data)
    return path


def smooth_frame(width=W, height=H):
    """RGB: red and green ramps, blue a slow wave (smooth, so interpolation agrees)."""
    y, x = np.mgrid[0:height, 0:width].astype(np.float64)
    return np.dstack([x * 255 / width, y * 255 / height,
                      128 + 100 * np.sin(x / 9.0)]).round().astype(np.uint8)


def law(rgb):
    return 2.0 + (rgb.astype(np.float64) / 255.0) @ np.array([0.5, 0.25, 0.125])


@pytest.fixture
def depth_model(maker, tmp_path):
    return maker.write_depth_model(tmp_path / "d.tflite", H, W, "NHWC")


def process(src, model, out, capsys, *extra):
    return run_cli(["process", src, "--model", model, "--model-type", "depth", "--backend",
                    "cpu", "--out", out, *extra], capsys)


def one_image_folder(tmp_path, rgb):
    folder = tmp_path / "in"
    folder.mkdir(exist_ok=True)
    cv2.imwrite(str(folder / "a.png"), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    return folder


def summary(out):
    return json.loads((out / "summary.json").read_text())


def test_raw_images_are_rectified_as_opencv_does(tmp_path, capsys, depth_model):
    rgb = smooth_frame()
    src = one_image_folder(tmp_path, rgb)
    cal = write_yaml(tmp_path / "cal.yaml", calibration())
    out = tmp_path / "out"
    code, _, stderr = process(src, depth_model, out, capsys, "--camera-info-yaml", cal)
    assert code == 0, stderr
    published = summary(out)["intrinsics"][f"{W}x{H}"]
    assert published["guessed"] is False
    # Rectified: the published camera is P's (here the model's grid is the image's).
    assert [published["published"][k] for k in ("fx", "fy", "cx", "cy")] == \
        [P[0], P[5], P[2], P[6]]
    # OpenCV's rectified image, then the model's law on it.
    map1, map2 = cv2.initUndistortRectifyMap(
        np.reshape(K, (3, 3)), np.array(D), np.reshape(R, (3, 3)),
        np.reshape(P, (3, 4))[:, :3], (W, H), cv2.CV_32FC1)
    rect = cv2.remap(rgb.astype(np.float32), map1, map2, cv2.INTER_LINEAR,
                     borderMode=cv2.BORDER_CONSTANT, borderValue=(np.nan,) * 3)
    depth = np.load(out / "depth" / "a.npy")
    inside = (map1 >= 1) & (map1 <= W - 2) & (map2 >= 1) & (map2 <= H - 2)
    assert inside.mean() > 0.8
    # uint8 remap in the pipeline: half a level of rounding, 0.875/255 per level at most
    np.testing.assert_allclose(depth[inside], law(rect)[inside], atol=0.004)
    # Where the rectified view looks past the raw frame, nothing was seen.
    outside = (map1 < -1) | (map1 > W) | (map2 < -1) | (map2 > H)
    assert outside.any() and np.isnan(depth[outside]).all()
    # The raw image itself would be a different answer (the check can fail).
    assert np.abs(depth[inside] - law(rgb)[inside]).max() > 0.02


def test_rectified_images_use_p_alone(tmp_path, capsys, depth_model):
    rgb = smooth_frame()
    src = one_image_folder(tmp_path, rgb)
    cal = write_yaml(tmp_path / "cal.yaml", calibration())
    out = tmp_path / "out"
    code, _, stderr = process(src, depth_model, out, capsys, "--camera-info-yaml", cal,
                              "--input-rectified")
    assert code == 0, stderr
    k = summary(out)["intrinsics"][f"{W}x{H}"]["published"]
    assert (k["fx"], k["fy"], k["cx"], k["cy"]) == (P[0], P[5], P[2], P[6])
    np.testing.assert_allclose(np.load(out / "depth" / "a.npy"), law(rgb), rtol=2e-5)


def test_the_rays_of_the_cloud_are_opencvs_undistorted_rays(tmp_path, capsys, depth_model):
    """Points (fixed scale): each point's ray, through P, lands where OpenCV's undistortPoints
    sends the raw pixel it came from."""
    rgb = smooth_frame()
    src = one_image_folder(tmp_path, rgb)
    cal = write_yaml(tmp_path / "cal.yaml", calibration())
    out = tmp_path / "out"
    code, _, stderr = process(src, depth_model, out, capsys, "--camera-info-yaml", cal,
                              "--depth-scale-source", "fixed", "--points-stride", "1",
                              "--points-min-confidence", "0", "--outputs", "depth,points",
                              "--no-points-rgb")
    assert code == 0, stderr
    from dense_perception.offline.inputs.file_io import read_ply
    cloud = read_ply(out / "points" / "a.ply")
    u = P[0] * cloud["x"] / cloud["z"] + P[2]
    v = P[5] * cloud["y"] / cloud["z"] + P[6]
    # OpenCV: the raw pixel (40.0, 30.0) is at this rectified pixel.
    raw = np.array([[[40.0, 30.0]]])
    want = cv2.undistortPoints(raw, np.reshape(K, (3, 3)), np.array(D), R=np.reshape(R, (3, 3)),
                               P=np.reshape(P, (3, 4)))[0, 0]
    # The point nearest that rectified pixel holds the law of the raw colour at (40, 30).
    nearest = np.argmin((u - want[0]) ** 2 + (v - want[1]) ** 2)
    assert np.hypot(u[nearest] - want[0], v[nearest] - want[1]) < 0.75
    assert abs(cloud["z"][nearest] - law(rgb[30:31, 40:41])[0, 0]) < 0.01


def test_binning_and_roi_are_applied(tmp_path, capsys, depth_model):
    """A 640x480 calibration binned 2x2, and a 320x240 one with a 160x120 ROI at (16, 8): both
    serve 160x120 images; the published camera is P binned, or P moved by the offset."""
    rgb = smooth_frame()
    src = one_image_folder(tmp_path, rgb)
    k2 = [2 * K[0], 0, 2 * K[2], 0, 2 * K[4], 2 * K[5], 0, 0, 1]
    p2 = [2 * P[0], 0, 2 * P[2], 0, 0, 2 * P[5], 2 * P[6], 0, 0, 0, 1, 0]
    binned = write_yaml(tmp_path / "binned.yaml", calibration(
        2 * W, 2 * H, k=k2, d=[0.0] * 5, p=p2, binning_x=2, binning_y=2))
    roi = write_yaml(tmp_path / "roi.yaml", calibration(
        320, 240, d=[0.0] * 5, roi={"x_offset": 16, "y_offset": 8, "width": W, "height": H,
                                    "do_rectify": False}))
    for cal, want in ((binned, (P[0], P[5], P[2], P[6])),
                      (roi, (P[0], P[5], P[2] - 16, P[6] - 8))):
        out = tmp_path / f"out_{cal.stem}"
        code, _, stderr = process(src, depth_model, out, capsys, "--camera-info-yaml", cal)
        assert code == 0, stderr
        k = summary(out)["intrinsics"][f"{W}x{H}"]["published"]
        np.testing.assert_allclose((k["fx"], k["fy"], k["cx"], k["cy"]), want, rtol=1e-12)


def test_video_input_uses_the_calibration(tmp_path, capsys, depth_model):
    video = tmp_path / "clip.avi"
    writer = cv2.VideoWriter(str(video), cv2.VideoWriter_fourcc(*"MJPG"), 5.0, (W, H))
    for _ in range(2):
        writer.write(cv2.cvtColor(smooth_frame(), cv2.COLOR_RGB2BGR))
    writer.release()
    cal = write_yaml(tmp_path / "cal.yaml", calibration())
    out = tmp_path / "out"
    code, stdout, stderr = process(video, depth_model, out, capsys, "--camera-info-yaml", cal)
    assert code == 0, stderr
    s = summary(out)
    assert s["camera_info_yaml"] == str(cal) and s["frames"] == 2 and s["rejected"] == 0
    k = s["intrinsics"][f"{W}x{H}"]
    assert not k["guessed"] and (k["published"]["fx"], k["published"]["cx"]) == (P[0], P[2])
    # A calibration for another size is refused before any frame.
    other = write_yaml(tmp_path / "other.yaml", calibration(320, 240))
    expect_one_line(process(video, depth_model, tmp_path / "out2", capsys,
                            "--camera-info-yaml", other),
                    f"camera info YAML '{other}' is for 320x240 images but the input's are "
                    f"{W}x{H}")
    assert not (tmp_path / "out2").exists()


def expect_one_line(result, *needles):
    code, _, stderr = result
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, stderr
    assert lines[0].startswith("dense-perception: error: "), lines[0]
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


BAD = [
    ("image_width: [1, 2\n", "is not YAML"),
    ("- just\n- a list\n", "is not a camera calibration"),
    (calibration(camera_matrix=None), "camera_matrix is missing"),
    (calibration(camera_matrix={"rows": 3, "cols": 3, "data": [1.0, 2.0]}),
     "camera_matrix has 2 values for 3x3"),
    (calibration(projection_matrix={"rows": 3, "cols": 3, "data": K}),
     "projection_matrix is 3x3, should be 3x4"),
    (calibration(camera_matrix={"rows": 3, "cols": 3, "data": [1.0, 0, 0, 0, "x", 0, 0, 0, 1]}),
     "camera_matrix data must be finite numbers"),
    (calibration(image_width="wide"), "image_width must be an integer >= 1"),
    (calibration(k=[0.0, 0, 80, 0, 148, 60, 0, 0, 1]), "is unusable"),
    (calibration(d=[0.1, 0.0, 0.0]), "is unusable: plumb_bob distortion has 3 coefficients"),
    (calibration(distortion_model=None), "distortion_coefficients are given without a "
                                         "distortion_model"),
]


@pytest.mark.parametrize("content,words", BAD)
def test_malformed_files_are_refused_in_one_line(tmp_path, capsys, depth_model, content, words):
    if isinstance(content, dict):
        content = {k: v for k, v in content.items() if v is not None}
    cal = write_yaml(tmp_path / "bad.yaml", content)
    src = one_image_folder(tmp_path, smooth_frame())
    expect_one_line(process(src, depth_model, tmp_path / "out", capsys,
                            "--camera-info-yaml", cal), f"camera info YAML '{cal}'", words)


def test_size_mismatch_and_bags_are_refused(tmp_path, capsys, depth_model):
    src = one_image_folder(tmp_path, smooth_frame())
    cal = write_yaml(tmp_path / "cal.yaml", calibration(W + 2, H))
    expect_one_line(process(src, depth_model, tmp_path / "out", capsys,
                            "--camera-info-yaml", cal),
                    f"camera info YAML '{cal}' is for {W + 2}x{H} images but the input's are "
                    f"{W}x{H}")
    from support.bag_maker import write_bag
    bag = write_bag(tmp_path / "bag", "mcap", frames=1)
    good = write_yaml(tmp_path / "good.yaml", calibration())
    expect_one_line(process(bag, depth_model, tmp_path / "out3", capsys,
                            "--camera-info-yaml", good),
                    "--camera-info-yaml is for image folders and videos")


def test_a_folder_image_of_another_size_is_skipped_with_the_reason(tmp_path, capsys,
                                                                   depth_model):
    src = one_image_folder(tmp_path, smooth_frame())
    cv2.imwrite(str(src / "b.png"), np.zeros((H, W + 8, 3), np.uint8))
    cal = write_yaml(tmp_path / "cal.yaml", calibration())
    out = tmp_path / "out"
    code, _, stderr = process(src, depth_model, out, capsys, "--camera-info-yaml", cal)
    assert summary(out)["frames"] == 1 and summary(out)["rejected"] == 1
    assert (out / "depth" / "a.npy").exists() and not (out / "depth" / "b.npy").exists()
    assert f"is for {W}x{H} images but the input's are {W + 8}x{H}" in stderr


def test_missing_file_from_the_shell(tmp_path, depth_model):
    """``python -m dense_perception``: exit status 2 and one line naming the file."""
    src = one_image_folder(tmp_path, smooth_frame())
    result = subprocess.run(
        [sys.executable, "-m", "dense_perception", "process", str(src), "--model",
         str(depth_model), "--model-type", "depth", "--backend", "cpu", "--camera-info-yaml",
         str(tmp_path / "none.yaml")], cwd=REPO, capture_output=True, text=True, timeout=120)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"dense-perception: error: camera info YAML '{tmp_path / 'none.yaml'}' cannot be read "
        "(No such file or directory)"]


def test_fleet_redoes_an_input_when_the_calibration_changes(tmp_path, capsys, depth_model):
    """Many inputs: a finished output is skipped on the next run, unless the calibration file
    (same name, new contents) changed."""
    rgb = smooth_frame()
    inputs = [one_image_folder(tmp_path, rgb), tmp_path / "in2"]
    inputs[1].mkdir()
    cv2.imwrite(str(inputs[1] / "a.png"), cv2.cvtColor(rgb, cv2.COLOR_RGB2BGR))
    cal = write_yaml(tmp_path / "cal.yaml", calibration())
    out = tmp_path / "fleet"

    def statuses():
        code, _, stderr = run_cli(["process", *inputs, "--model", depth_model, "--model-type",
                                   "depth", "--backend", "cpu", "--out", out,
                                   "--camera-info-yaml", cal], capsys)
        assert code == 0, stderr
        report = json.loads((out / "fleet_summary.json").read_text())
        return [row["status"] for row in report["inputs"]]

    assert statuses() == ["done", "done"]
    assert statuses() == ["skipped", "skipped"]
    write_yaml(cal, calibration(p=[141.0, 0.0, 81.0, 0.0, 0.0, 139.0, 59.0, 0.0, 0.0, 0.0, 1.0,
                                   0.0]))
    assert statuses() == ["done", "done"]
