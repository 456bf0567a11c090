# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The offline ``dense-perception`` command's refusals: one line on stderr, exit status 2, no
traceback; a bag damaged half way keeps what was done."""

import json
import subprocess
import sys

import cv2
import pytest

from support.common import DA3_TEST_MODEL, REPO, TIPS_TEST_MODEL

pytest.importorskip("rosbags")

from rosbags.rosbag2 import StoragePlugin, Writer  # noqa: E402

from dense_perception.offline.inputs import bag_io  # noqa: E402

TS = bag_io.TYPESTORE

from support.bag_maker import COLOURS, frame_of, image_msg, read_bag, write_bag  # noqa: E402
from support.common import run_cli as run  # noqa: E402


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

