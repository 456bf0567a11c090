"""The offline ``dense-perception`` command on real files with real LiteRT and the test models.

Bags come from ``bag_maker`` (real sensor_msgs messages written with ``rosbags``, uniform colours
whose outputs the test models give in closed form); videos are written with OpenCV.
"""

import json
import os
import signal
import subprocess
import sys
from pathlib import Path

import cv2
import numpy as np
import pytest

from support.common import DA3_TEST_MODEL, REPO, TIPS_TEST_MODEL

pytest.importorskip("rosbags")

from rosbags.rosbag2 import StoragePlugin, Writer  # noqa: E402

from dense_perception.offline import cli  # noqa: E402
from dense_perception.offline.inputs import bag_io  # noqa: E402
from dense_perception.core import conversions  # noqa: E402
from dense_perception.offline.inputs.file_io import read_ply  # noqa: E402

TS = bag_io.TYPESTORE

from support.bag_maker import (COLOURS, H, STAMP0, T, W, frame_of, header,  # noqa: E402
                       image_msg, log_time, read_bag, tips_depth, tips_label, tips_normal,
                       da3_depth, wait_for_flushed_messages, write_bag)


from support.common import run_cli as run  # noqa: E402


# ---- bags ---------------------------------------------------------------------------------------
@pytest.mark.parametrize("fmt", ["mcap", "sqlite3"])
def test_bag_in_bag_out_every_output(tmp_path, capsys, fmt):
    src = write_bag(tmp_path / f"in_{fmt}", fmt)
    out = tmp_path / "out"
    # fp32: the values are compared with the model's formula to 1e-4 (cpu_precision auto would
    # pick fp16 on an fp16 CPU, e.g. the emulated arm64 of make test-arm64)
    code, stdout, stderr = run(["process", src, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                                "--cpu-precision", "fp32", "--out", out, "--bag-format", fmt],
                               capsys)
    assert code == 0, stderr
    assert stderr == ""
    assert "4 frames" in stdout
    storage = next(p for p in out.iterdir() if p.suffix in (".mcap", ".db3"))
    assert storage.suffix == (".mcap" if fmt == "mcap" else ".db3")
    msgs, types = read_bag(out)
    ns = "/cam"
    expected_types = {
        "/cam/image_raw": bag_io.IMAGE, "/cam/camera_info": bag_io.CAMERA_INFO,
        "/chatter": "std_msgs/msg/String",
        f"{ns}/depth/image": bag_io.IMAGE, f"{ns}/depth/camera_info": bag_io.CAMERA_INFO,
        f"{ns}/depth/colored": bag_io.IMAGE, f"{ns}/normals/image": bag_io.IMAGE,
        f"{ns}/normals/colored": bag_io.IMAGE, f"{ns}/segmentation/labels": bag_io.IMAGE,
        f"{ns}/segmentation/colored": bag_io.IMAGE, f"{ns}/segmentation/classes": bag_io.STRING,
        f"{ns}/segmentation/confidence": bag_io.IMAGE, f"{ns}/points": bag_io.POINT_CLOUD2}
    assert types == expected_types
    for topic in expected_types:
        assert len(msgs[topic]) == (1 if topic.endswith("classes") else 4), topic
    classes = json.loads(msgs[f"{ns}/segmentation/classes"][0][1].data)
    assert len(classes) == 150 and classes[0] == "wall"

    for i in range(4):
        rgb = COLOURS[i]
        want_stamp = (STAMP0 + i, 123 + i)
        for topic in expected_types:
            if topic.startswith(ns + "/") and not topic.endswith("classes") \
                    and topic not in ("/cam/image_raw", "/cam/camera_info"):
                t, msg = msgs[topic][i]
                assert t == log_time(i), topic  # bag time = the input image's log time
                assert (msg.header.stamp.sec, msg.header.stamp.nanosec) == want_stamp, topic
                assert msg.header.frame_id == "cam_optical"
        depth_msg = msgs[f"{ns}/depth/image"][i][1]
        assert depth_msg.encoding == "32FC1" and (depth_msg.width, depth_msg.height) == (448, 448)
        depth = conversions.image_msg_to_array(depth_msg)
        np.testing.assert_allclose(depth, tips_depth(rgb), atol=1e-4)
        normals_msg = msgs[f"{ns}/normals/image"][i][1]
        assert normals_msg.encoding == "32FC3"
        normals = conversions.image_msg_to_array(normals_msg)
        np.testing.assert_allclose(normals[200, 300], tips_normal(rgb), atol=1e-4)
        labels_msg = msgs[f"{ns}/segmentation/labels"][i][1]
        assert labels_msg.encoding == "mono8"
        assert (conversions.image_msg_to_array(labels_msg) == tips_label(rgb)).all()
        assert msgs[f"{ns}/depth/colored"][i][1].encoding == "bgr8"
        assert msgs[f"{ns}/normals/colored"][i][1].encoding == "rgb8"
        assert msgs[f"{ns}/segmentation/colored"][i][1].encoding == "rgb8"
        # CameraInfo matched by stamp although logged after the image: fx = 100 + i, scaled to
        # the published grid (48x48 crop -> 448x448); the rectified pinhole (D zero, R = I).
        info = msgs[f"{ns}/depth/camera_info"][i][1]
        assert (info.width, info.height) == (448, 448)
        assert info.k[0] == pytest.approx((100.0 + i) * 448 / 48)
        np.testing.assert_array_equal(info.d, [0.0] * 5)
        np.testing.assert_array_equal(info.r, np.eye(3).reshape(-1))
        cloud_msg = msgs[f"{ns}/points"][i][1]
        assert [f.name for f in cloud_msg.fields] == ["x", "y", "z", "rgb"]
        cloud = conversions.cloud_to_points(cloud_msg).reshape(-1)
        assert cloud.shape[0] == 224 * 224  # stride 2, every depth valid
        np.testing.assert_allclose(cloud["z"], tips_depth(rgb), atol=1e-4)
        fx, cx = info.k[0], info.k[2]
        assert cloud["x"].min() == pytest.approx((0 - cx) * tips_depth(rgb) / fx, rel=1e-3)
        packed = cloud["rgb"].view(np.uint32)
        assert set(np.unique(packed)) == {(rgb[0] << 16) | (rgb[1] << 8) | rgb[2]}
    # The input topics are copied unchanged.
    assert [m.data for _, m in msgs["/chatter"]] == [f"hello {i}" for i in range(4)]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["frames"] == 4 and summary["interrupted"] is False
    assert summary["camera_info_topic"] == "/cam/camera_info"
    assert summary["timing_ms"]["inference"]["count"] == 4


def test_compressed_topic_16uc1_depth_and_output_subset(tmp_path, capsys):
    src = write_bag(tmp_path / "in", "mcap", frames=3, compressed=True, extra=False,
                    topic="/cam/image_raw/compressed")
    out = tmp_path / "out"
    code, _, stderr = run(["process", src, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                           "--cpu-precision", "fp32",  # exact millimetres and labels below
                           "--out", out, "--outputs", "depth,seg", "--depth-format", "png16",
                           "--copy", "none"], capsys)
    assert code == 0, stderr
    msgs, types = read_bag(out)
    assert set(types) == {"/cam/depth/image", "/cam/depth/camera_info", "/cam/depth/colored",
                          "/cam/segmentation/labels", "/cam/segmentation/colored",
                          "/cam/segmentation/classes", "/cam/segmentation/confidence"}
    for i in range(3):
        depth_msg = msgs["/cam/depth/image"][i][1]
        assert depth_msg.encoding == "16UC1"
        mm = conversions.image_msg_to_array(depth_msg)
        assert (mm == round(tips_depth(COLOURS[i]) * 1000)).all()
        labels = conversions.image_msg_to_array(msgs["/cam/segmentation/labels"][i][1])
        assert (labels == tips_label(COLOURS[i])).all()


def test_bag_file_input_without_camera_info_guesses_and_says_so(tmp_path, capsys):
    write_bag(tmp_path / "in", "mcap", frames=2, camera_info=False, extra=False)
    src = next((tmp_path / "in").glob("*.mcap"))  # a bare .mcap file works too
    out = tmp_path / "out"
    code, _, stderr = run(["process", src, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                           "--out", out, "--outputs", "points", "--out-namespace", "/dense"],
                          capsys)
    assert code == 0
    assert "no CameraInfo" in stderr and "60 deg pinhole guess" in stderr
    msgs, types = read_bag(out)
    assert set(types) == {"/cam/image_raw", "/dense/points"}
    assert json.loads((out / "summary.json").read_text())["guessed_intrinsics_frames"] == 2


def test_bad_frames_in_a_bag_are_skipped_with_a_warning(tmp_path, capsys):
    path = tmp_path / "in"
    with Writer(path, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        conn = w.add_connection("/cam/image_raw", bag_io.IMAGE, typestore=TS)
        w.write(conn, 1, TS.serialize_cdr(image_msg(0, COLOURS[0]), bag_io.IMAGE))
        bad = bag_io.array_to_image(np.zeros((4, 4), np.uint16), "16UC1", header(1))
        w.write(conn, 2, TS.serialize_cdr(bad, bag_io.IMAGE))
        w.write(conn, 3, TS.serialize_cdr(image_msg(2, COLOURS[2]), bag_io.IMAGE))
    code, stdout, stderr = run(["process", path, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                                "--out", tmp_path / "out", "--outputs", "depth"], capsys)
    assert code == 0
    assert "frame 1 skipped: unsupported encoding '16UC1'" in stderr
    assert "2 frames, 1 skipped" in stdout
    msgs, _ = read_bag(tmp_path / "out")
    assert [m.header.stamp.sec for _, m in msgs["/cam/depth/image"]] == [STAMP0, STAMP0 + 2]


# ---- video, folder, single image -----------------------------------------------------------------
def write_video(path_stem, colours):
    """A short video: lossless FFV1 when this OpenCV has it, else MJPG (lossy)."""
    for suffix, fourcc, tolerance in ((".mkv", "FFV1", 0), (".avi", "MJPG", 6)):
        path = path_stem.with_suffix(suffix)
        writer = cv2.VideoWriter(str(path), cv2.VideoWriter_fourcc(*fourcc), 10, (W, H))
        if writer.isOpened():
            for rgb in colours:
                writer.write(frame_of(rgb)[:, :, ::-1].copy())
            writer.release()
            return path, tolerance
    pytest.skip("OpenCV cannot write FFV1 or MJPG video here")


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


# ---- Ctrl-C -------------------------------------------------------------------------------------
def ctrl_c_after(n):
    """A real SIGINT to this process once n frames are handed to inference (as a user's Ctrl-C:
    the CLI's handler asks the loop to stop after the frames in flight)."""
    def hook(done):
        if done == n:
            os.kill(os.getpid(), signal.SIGINT)
    return hook


def keyboard_interrupt_after(n):
    """KeyboardInterrupt raised inside the loop (as a second Ctrl-C: stop at once)."""
    def hook(done):
        if done == n:
            raise KeyboardInterrupt
    return hook


@pytest.mark.parametrize("fmt", ["mcap", "sqlite3"])
def test_ctrl_c_leaves_a_closed_readable_bag(tmp_path, capsys, fmt):
    src = write_bag(tmp_path / "in", "mcap", frames=6)
    out = tmp_path / "out"
    code, _, stderr = run(["process", src, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                           "--out", out, "--outputs", "depth", "--bag-format", fmt], capsys,
                          after_frame=ctrl_c_after(2))
    assert code == 130
    assert "stopping after the frames in flight" in stderr
    assert "interrupted after 2 frames" in stderr
    msgs, types = read_bag(out)
    assert len(msgs["/cam/depth/image"]) == 2
    assert len(msgs["/cam/image_raw"]) == 2  # input copied up to the last frame done
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["frames"] == 2
    assert signal.getsignal(signal.SIGINT) is signal.default_int_handler  # handler restored


def test_keyboard_interrupt_mid_loop_still_closes_the_bag(tmp_path, capsys):
    src = write_bag(tmp_path / "in", "sqlite3", frames=6)
    out = tmp_path / "out"
    code, _, stderr = run(["process", src, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                           "--out", out, "--outputs", "depth", "--bag-format", "sqlite3"],
                          capsys, after_frame=keyboard_interrupt_after(3))
    assert code == 130
    msgs, _ = read_bag(out)
    done = json.loads((out / "summary.json").read_text())["frames"]
    assert len(msgs["/cam/depth/image"]) == done <= 3


def test_interrupted_video_leaves_a_summary(tmp_path, capsys):
    video, _ = write_video(tmp_path / "clip", COLOURS)
    out = tmp_path / "out"
    code, _, _ = run(["process", video, "--model", TIPS_TEST_MODEL, "--backend", "cpu", "--out",
                      out, "--outputs", "depth"], capsys, after_frame=ctrl_c_after(3))
    assert code == 130
    assert len(list((out / "depth").iterdir())) == 3
    summary = json.loads((out / "summary.json").read_text())
    assert summary["interrupted"] is True and summary["frames"] == 3


@pytest.mark.slow
def test_real_sigint_to_the_process(tmp_path):
    src = write_bag(tmp_path / "in", "mcap", frames=400, extra=False)
    out = tmp_path / "out"
    proc = subprocess.Popen(
        [sys.executable, "-m", "dense_perception", "process", str(src), "--model",
         TIPS_TEST_MODEL, "--backend", "cpu", "--out", str(out), "--outputs", "seg",
         "--copy", "none"], cwd=REPO, stdout=subprocess.PIPE, stderr=subprocess.PIPE, text=True)
    wait_for_flushed_messages(out, proc)
    proc.send_signal(signal.SIGINT)
    _, stderr = proc.communicate(timeout=30)
    assert proc.returncode == 130, stderr
    msgs, _ = read_bag(out)
    done = len(msgs["/cam/segmentation/labels"])
    assert 0 < done < 400
    assert json.loads((out / "summary.json").read_text())["frames"] == done
    assert "Traceback" not in stderr


# ---- errors: one line on stderr, exit status 2 ---------------------------------------------------
def expect_error(argv, capsys, *needles):
    code, _, stderr = run(argv, capsys)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2, stderr
    assert len(lines) == 1, stderr
    assert lines[0].startswith("dense-perception: error: ")
    for needle in needles:
        assert needle in lines[0], lines[0]
    return lines[0]


def tips(*argv):
    return ["process", *argv, "--model", TIPS_TEST_MODEL, "--backend", "cpu"]


def test_truncated_and_corrupt_bags(tmp_path, capsys):
    mcap = write_bag(tmp_path / "a", "mcap", frames=3)
    storage = next(mcap.glob("*.mcap"))
    storage.write_bytes(storage.read_bytes()[:storage.stat().st_size // 2])
    expect_error(tips(mcap, "--out", tmp_path / "o1"), capsys, "cannot read bag", "reindex")
    assert not (tmp_path / "o1").exists()
    sq = write_bag(tmp_path / "b", "sqlite3", frames=3)
    db = next(sq.glob("*.db3"))
    db.write_bytes(b"garbage!" * 100 + db.read_bytes()[800:])
    expect_error(tips(sq, "--out", tmp_path / "o2"), capsys, "cannot read bag")
    junk = tmp_path / "junk.mcap"
    junk.write_bytes(b"\x89MCAP0\r\n" + b"\0" * 50)
    expect_error(tips(junk, "--out", tmp_path / "o3"), capsys, "cannot read bag")


def test_bag_damaged_half_way_keeps_what_was_done(tmp_path, capsys):
    # 640x480 frames: rosbags starts a new MCAP chunk every MiB, so about one frame per chunk.
    src = write_bag(tmp_path / "in", "mcap", frames=6, camera_info=False, extra=False,
                    size=(640, 480))
    storage = next(src.glob("*.mcap"))
    data = bytearray(storage.read_bytes())
    # Damage frame 4's record (the reader fails when it gets there).
    tail = data.rfind(bytes(frame_of(COLOURS[4], 64, 1).reshape(-1)))
    assert tail > 0
    data[tail - 400:tail + 3000] = b"\xff" * 3400
    storage.write_bytes(bytes(data))
    out = tmp_path / "out"
    code, _, stderr = run(tips(src, "--out", out, "--outputs", "depth"), capsys)
    assert code == 2
    # one line says what is wrong (besides the warning that the bag has no CameraInfo)
    lines = [line for line in stderr.strip().splitlines() if ": warning: " not in line]
    assert len(lines) == 1 and "is damaged after" in lines[0], stderr
    msgs, _ = read_bag(out)  # the partial output is a valid, closed bag
    done = len(msgs["/cam/depth/image"])
    assert 0 < done < 6
    assert f"({done} frames done are in {out})" in lines[0]
    summary = json.loads((out / "summary.json").read_text())
    assert summary["frames"] == done and "damaged" in summary["error"]


def test_topic_errors_list_the_image_topics(tmp_path, capsys):
    src = write_bag(tmp_path / "in", "sqlite3", frames=1)
    line = expect_error(tips(src, "--topic", "/nope"), capsys, "topic '/nope' is not in bag",
                        "/cam/image_raw (Image, 1 msgs)")
    assert "/chatter" not in line
    expect_error(tips(src, "--topic", "/cam/camera_info"), capsys,
                 "has type sensor_msgs/msg/CameraInfo, not sensor_msgs/msg/Image",
                 "/cam/image_raw")
    expect_error(tips(src, "--camera-info-topic", "/chatter"), capsys,
                 "has type std_msgs/msg/String")
    two = tmp_path / "two"
    with Writer(two, version=9, storage_plugin=StoragePlugin.MCAP) as w:
        for topic in ("/left/image_raw", "/right/image_raw"):
            conn = w.add_connection(topic, bag_io.IMAGE, typestore=TS)
            w.write(conn, 1, TS.serialize_cdr(image_msg(0, COLOURS[0]), bag_io.IMAGE))
    expect_error(tips(two), capsys, "has 2 image topics; choose one with --topic",
                 "/left/image_raw", "/right/image_raw")


def test_file_and_model_errors(tmp_path, capsys):
    # Fixed bytes, not os.urandom: now and then FFmpeg's probe accepts random bytes as a
    # container, and the error then comes from the first read instead of the open.
    junk = tmp_path / "clip.avi"
    junk.write_bytes(b"this is not a video\n" * 100)
    code, _, stderr = run(tips(junk), capsys)
    lines = [line for line in stderr.splitlines() if line.strip()]
    assert code == 2 and len(lines) == 1, stderr
    assert lines[0].startswith("dense-perception: error: ") and "clip.avi" in lines[0], stderr
    assert "cannot open" in lines[0] or "cannot read a frame from video" in lines[0], stderr
    expect_error(tips(tmp_path / "missing.mp4"), capsys, "does not exist")
    image = tmp_path / "a.png"
    cv2.imwrite(str(image), frame_of(COLOURS[0]))
    expect_error(["process", image, "--model", tmp_path / "nope.tflite"], capsys,
                 "model file", "does not exist")
    fake = tmp_path / "fake.tflite"
    fake.write_bytes(b"12345678" * 10)
    expect_error(["process", image, "--model", fake], capsys, "not a LiteRT/TFLite flatbuffer")
    expect_error(["process", image, "--model", DA3_TEST_MODEL, "--outputs", "normals"], capsys,
                 "Depth Anything 3 Small has no normals output")
    (tmp_path / "busy").mkdir()
    (tmp_path / "busy" / "x").write_text("x")
    expect_error(tips(image, "--out", tmp_path / "busy"), capsys, "exists already")


def test_unsupported_model_signature(tmp_path, capsys, maker):
    other = maker.write_signature_model(tmp_path / "midas.tflite", [(1, 3, 256, 256)],
                                        [(1, 1, 256, 256)])
    image = tmp_path / "a.png"
    cv2.imwrite(str(image), frame_of(COLOURS[0]))
    expect_error(["process", image, "--model", other], capsys,
                 "input [1,3,256,256] -> outputs [1,1,256,256], which matches no supported model")
    code, stdout, stderr = run(["info", other], capsys)  # info still shows what the file is
    assert code == 2 and "signature  input [1,3,256,256]" in stdout
    assert stderr.count("\n") == 1 and "matches no supported model" in stderr


def test_python_dash_m_error_exit_status_and_no_traceback(tmp_path):
    src = write_bag(tmp_path / "in", "mcap", frames=1)
    result = subprocess.run(
        [sys.executable, "-m", "dense_perception", "process", str(src), "--model",
         TIPS_TEST_MODEL, "--topic", "/camera/missing"], cwd=REPO, capture_output=True,
        text=True, timeout=60)
    assert result.returncode == 2
    assert result.stderr.strip().splitlines() == [
        f"dense-perception: error: topic '/camera/missing' is not in bag '{src}'; its image "
        "topics: /cam/image_raw (Image, 1 msgs)"]


# ---- info ---------------------------------------------------------------------------------------
def test_info(capsys):
    code, stdout, stderr = run(["info", TIPS_TEST_MODEL, "--runs", "2"], capsys)
    assert code == 0, stderr
    assert "tipsv2: TIPSv2-B14-DPT (metric depth)" in stdout
    assert "[1,3,448,448]" in stdout and "segmentation [1,150,256,256]" in stdout
    assert "cpu: cpu (XNNPACK Interpreter" in stdout and "warm invoke median" in stdout
    assert "gpu: " in stdout  # here: "not available here: the GPU backend did not initialise"
    code, stdout, _ = run(["info", DA3_TEST_MODEL, "--runs", "1", "--backends", "cpu",
                           "--json"], capsys)
    report = json.loads(stdout)
    assert report["kind"] == "da3" and report["metric_depth"] is False
    assert report["size_bytes"] == os.path.getsize(DA3_TEST_MODEL)
    assert report["backends"]["cpu"]["ok"] and report["backends"]["cpu"]["median_ms"] > 0
    assert set(report["backends"]) == {"cpu"}


# ---- helpers ------------------------------------------------------------------------------------
def test_output_namespace_follows_the_image_topic():
    assert bag_io.namespace_of("/camera/image_raw") == "/camera"
    assert bag_io.namespace_of("/camera/image_raw/compressed") == "/camera"
    assert bag_io.namespace_of("/robot/front/color/image_raw") == "/robot/front/color"
    assert bag_io.namespace_of("/image") == ""
    assert bag_io.output_topic_names("")["points"] == "/points"
    assert bag_io.output_topic_names("/camera")["depth"] == "/camera/depth/image"


def test_image_message_conversion_checks_like_the_node():
    msg = image_msg(0, COLOURS[0])
    np.testing.assert_array_equal(conversions.image_to_array(msg), frame_of(COLOURS[0]))
    padded = T["sensor_msgs/msg/Image"](header=header(0), height=2, width=3, encoding="rgb8",
                                        is_bigendian=0, step=12,
                                        data=np.arange(24, dtype=np.uint8))
    assert conversions.image_to_array(padded).shape == (2, 3, 3)
    assert conversions.image_to_array(padded)[1, 0, 0] == 12
    for change, text in [({"encoding": "yuv422"}, "unsupported encoding 'yuv422'"),
                         ({"step": 5}, "step 5 is smaller"),
                         ({"data": np.zeros(5, np.uint8)}, "data has 5 bytes")]:
        bad = T["sensor_msgs/msg/Image"](**{**padded.__dict__, **change})
        with pytest.raises(conversions.BadImageError, match=text):
            conversions.image_to_array(bad)


def test_the_command_line_modules_need_no_ros():
    code = ("import sys\nimport dense_perception.offline.cli, "
            "dense_perception.offline.inputs.bag_io, dense_perception.offline.inputs.file_io\n"
            "print(','.join(sorted(m for m in sys.modules if m.split('.')[0] in "
            "('rclpy', 'sensor_msgs', 'std_msgs', 'builtin_interfaces'))))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True,
                         check=True, cwd=REPO)
    assert out.stdout.strip() == ""
