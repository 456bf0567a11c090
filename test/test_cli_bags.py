# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The offline ``dense-perception`` command on rosbag2 input and output (mcap and sqlite3) with
real LiteRT and the test models.

Bags come from ``bag_maker`` (real sensor_msgs messages written with ``rosbags``, uniform colours
whose outputs the test models give in closed form).
"""

import json

import numpy as np
import pytest

from support.common import TIPS_TEST_MODEL

pytest.importorskip("rosbags")

from rosbags.rosbag2 import StoragePlugin, Writer  # noqa: E402

from dense_perception.offline.inputs import bag_io  # noqa: E402
from dense_perception.core import conversions  # noqa: E402

TS = bag_io.TYPESTORE

from support.bag_maker import (COLOURS, STAMP0, header, image_msg, log_time,  # noqa: E402
                               read_bag, tips_depth, tips_label, tips_normal, write_bag)
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
        f"{ns}/segmentation/confidence": bag_io.IMAGE, f"{ns}/points": bag_io.POINT_CLOUD2,
        "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray"}  # the run's, one per frame
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


def mcap_chunk_compressions(bag_folder):
    """The compression named by each Chunk record (opcode 0x06) of the bag's MCAP file, read
    with the MCAP specification's record layout written out here."""
    import struct
    data = next(bag_folder.glob("*.mcap")).read_bytes()
    assert data[:8] == b"\x89MCAP0\r\n"
    at, found = 8, []
    while at + 9 <= len(data):
        opcode, length = data[at], struct.unpack_from("<Q", data, at + 1)[0]
        if opcode == 0x06:  # start, end, uncompressed size (u64), crc (u32), compression
            (size,) = struct.unpack_from("<I", data, at + 9 + 28)
            found.append(data[at + 9 + 32:at + 9 + 32 + size].decode())
        if opcode == 0x02:  # the Footer: the end
            break
        at += 9 + length
    return found


def test_output_mcap_is_zstd_compressed_unless_asked_otherwise(tmp_path, capsys):
    """The output MCAP's chunks are zstd-compressed by default (lossless: the depth read back is
    the model's closed-form value) and smaller than uncompressed; --bag-compression none
    writes them uncompressed."""
    src = write_bag(tmp_path / "in", "mcap", frames=3, extra=False)
    sizes = {}
    for mode in ("zstd", "none"):
        out = tmp_path / mode
        args = ["process", src, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                "--cpu-precision", "fp32", "--out", out, "--outputs", "depth"]
        code, _, stderr = run(args + ([] if mode == "zstd" else ["--bag-compression", "none"]),
                              capsys)
        assert code == 0, stderr
        chunks = mcap_chunk_compressions(out)
        assert chunks and set(chunks) == {"zstd" if mode == "zstd" else ""}
        sizes[mode] = sum(p.stat().st_size for p in out.glob("*.mcap"))
        msgs, _ = read_bag(out)
        for i in range(3):
            depth = conversions.image_msg_to_array(msgs["/cam/depth/image"][i][1])
            np.testing.assert_allclose(depth, tips_depth(COLOURS[i]), atol=1e-4)
        assert json.loads((out / "summary.json").read_text())["bag_compression"] == mode
    assert sizes["zstd"] < 0.5 * sizes["none"]  # uniform colours: a few kB per frame
    # A sqlite3 bag is never compressed: the flag typed for one is refused, not ignored.
    code, _, stderr = run(["process", src, "--model", TIPS_TEST_MODEL, "--out",
                           tmp_path / "db", "--bag-format", "sqlite3", "--bag-compression",
                           "zstd"], capsys)
    assert code == 2 and "--bag-compression has no effect on a sqlite3 bag" in stderr
    assert not (tmp_path / "db").exists()


def test_ply_writes_each_frames_cloud_beside_the_bag(tmp_path, capsys):
    """``--ply``: each frame's cloud as a binary PLY in the output folder, named by the frame's
    number and stamp, its points the test model's depth in closed form (read here with a PLY
    reader written out in the test, not the package's)."""
    src = write_bag(tmp_path / "in", "mcap", frames=3, extra=False)
    out = tmp_path / "out"
    code, _, stderr = run(["process", src, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                           "--cpu-precision", "fp32", "--out", out, "--outputs", "depth,points",
                           "--ply"], capsys)
    assert code == 0, stderr
    files = sorted((out / "points").iterdir())
    assert [f.name for f in files] == [f"{i:06d}_{STAMP0 + i}.{123 + i:09d}.ply"
                                       for i in range(3)]
    for i, path in enumerate(files):
        raw = path.read_bytes()
        head, body = raw.split(b"end_header\n", 1)
        lines = head.decode("ascii").splitlines()
        assert lines[:2] == ["ply", "format binary_little_endian 1.0"]
        count = int(next(ln for ln in lines if ln.startswith("element vertex")).split()[-1])
        names = [ln.split()[-1] for ln in lines if ln.startswith("property")]
        assert names == ["x", "y", "z", "red", "green", "blue"]
        points = np.frombuffer(body, np.dtype([("x", "<f4"), ("y", "<f4"), ("z", "<f4"),
                                               ("red", "u1"), ("green", "u1"), ("blue", "u1")]),
                               count)
        assert count == 224 * 224  # stride 2, every depth valid: as the bag's cloud
        np.testing.assert_allclose(points["z"], tips_depth(COLOURS[i]), atol=1e-4)
        assert {tuple(c) for c in np.stack([points["red"], points["green"], points["blue"]],
                                           1)} == {tuple(COLOURS[i])}
    # Without the cloud among the outputs there is nothing to write: said in one line, before
    # any output is made.
    code, _, stderr = run(["process", src, "--model", TIPS_TEST_MODEL, "--out",
                           tmp_path / "out2", "--outputs", "depth", "--ply"], capsys)
    assert code == 2 and "--ply writes the cloud: keep points in --outputs" in stderr
    assert not (tmp_path / "out2").exists()


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
                          "/cam/segmentation/classes", "/cam/segmentation/confidence",
                          "/diagnostics"}
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
    assert set(types) == {"/cam/image_raw", "/dense/points", "/diagnostics"}
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

