# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Test bags and their known outputs, for the offline command's tests (test_cli_*, test_fleet).

Bags (MCAP and sqlite3) are written with ``rosbags`` and hold real sensor_msgs/Image,
CompressedImage and CameraInfo messages. Frames are uniform colours, so every output value is
known from the test models' closed-form functions: TIPSv2 depth = 0.5 + 2r + g + 0.5b, normals =
normalize(2r-1, 2g-1, -1), labels = round(149 b) (r, g, b in [0, 1]); DA3 depth = 3 + 0.5 x_r +
0.25 x_g + 0.125 x_b (ImageNet-normalised x).
"""

import hashlib
import os
import time
from pathlib import Path

import cv2
import numpy as np
from rosbags.rosbag2 import Reader, StoragePlugin, Writer

from dense_perception.core.geometry.intrinsics import Intrinsics
from dense_perception.offline.inputs import bag_io
from support.model_truth import da3_depth_of

TS = bag_io.TYPESTORE
# Uniform RGB colours, one per frame; blue values keep round(149 b / 255) away from .5 ties.
COLOURS = [(40, 200, 10), (230, 60, 120), (128, 128, 200), (10, 90, 250), (180, 20, 60),
           (90, 160, 30)]
W, H = 64, 48  # camera frames: crop to 48x48, then up to the model's 448x448


def tips_depth(rgb):
    r, g, b = (c / 255.0 for c in rgb)
    return 0.5 + 2.0 * r + g + 0.5 * b


def tips_label(rgb):
    return round(149 * rgb[2] / 255)


def tips_normal(rgb):
    n = np.array([2 * rgb[0] / 255 - 1, 2 * rgb[1] / 255 - 1, -1.0])
    return n / np.linalg.norm(n)


def da3_depth(rgb):
    return float(da3_depth_of(rgb))


def frame_of(rgb, width=W, height=H):
    return np.tile(np.array(rgb, np.uint8), (height, width, 1))


# ---- bag making ---------------------------------------------------------------------------------
T = TS.types
STAMP0 = 1_700_000_000


def header(i, frame_id="cam_optical"):
    return T["std_msgs/msg/Header"](stamp=T["builtin_interfaces/msg/Time"](sec=STAMP0 + i,
                                                                          nanosec=123 + i),
                                    frame_id=frame_id)


def image_msg(i, rgb, encoding="rgb8", size=(W, H)):
    pixels = frame_of(rgb, *size)
    pixels = pixels if encoding == "rgb8" else pixels[:, :, ::-1].copy()
    return bag_io.array_to_image(pixels, encoding, header(i))


def compressed_msg(i, rgb):
    ok, png = cv2.imencode(".png", frame_of(rgb)[:, :, ::-1])
    assert ok
    return T["sensor_msgs/msg/CompressedImage"](header=header(i), format="rgb8; png compressed "
                                                "bgr8", data=png.reshape(-1))


def camera_info_msg(i, fx):
    k = Intrinsics(fx=fx, fy=fx, cx=31.5, cy=23.5, width=W, height=H)
    return bag_io.intrinsics_to_camera_info(k, header(i))  # no distortion: see test_offline_camera


def log_time(i):
    return 5_000_000_000 + i * 100_000_000


def write_bag(path, fmt, frames=4, compressed=False, extra=True, camera_info=True,
              topic="/cam/image_raw", size=(W, H)):
    """A bag with ``frames`` uniform-colour images (rgb8 and bgr8 alternating, or PNG), a
    CameraInfo per frame logged 1 ms *after* its image (fx = 100 + i) and an unrelated topic."""
    plugin = StoragePlugin.MCAP if fmt == "mcap" else StoragePlugin.SQLITE3
    with Writer(path, version=9, storage_plugin=plugin) as w:
        msgtype = bag_io.COMPRESSED_IMAGE if compressed else bag_io.IMAGE
        img = w.add_connection(topic, msgtype, typestore=TS)
        info = w.add_connection("/cam/camera_info", bag_io.CAMERA_INFO, typestore=TS) \
            if camera_info else None
        chat = w.add_connection("/chatter", "std_msgs/msg/String", typestore=TS) \
            if extra else None
        for i in range(frames):
            rgb = COLOURS[i % len(COLOURS)]
            msg = compressed_msg(i, rgb) if compressed else \
                image_msg(i, rgb, "rgb8" if i % 2 == 0 else "bgr8", size)
            w.write(img, log_time(i), TS.serialize_cdr(msg, msgtype))
            if info is not None:
                w.write(info, log_time(i) + 1_000_000,
                        TS.serialize_cdr(camera_info_msg(i, 100.0 + i), bag_io.CAMERA_INFO))
            if chat is not None:
                w.write(chat, log_time(i) + 2_000_000, TS.serialize_cdr(
                    T["std_msgs/msg/String"](data=f"hello {i}"), "std_msgs/msg/String"))
    return path


def read_bag(path):
    """{topic: [(log_time, msgtype, message)]} of a bag, with its metadata's topic types."""
    out = {}
    with Reader(path) as reader:
        types = {c.topic: c.msgtype for c in reader.connections}
        for conn, t, data in reader.messages():
            out.setdefault(conn.topic, []).append((t, TS.deserialize_cdr(data, conn.msgtype)))
    return out, types


def raw_messages(path):
    """Every message of a bag as (topic, msgtype, log time, raw CDR bytes), in log-time order."""
    with Reader(path) as reader:
        return [(c.topic, c.msgtype, t, bytes(d)) for c, t, d in reader.messages()]


def write_fleet_bags(folder):
    """Four small bags in ``folder``: ``a`` (MCAP folder, 3 frames), ``b`` (sqlite3 folder, 2),
    ``c.mcap`` (a bare MCAP file, 4) and ``d.mcap`` (an MCAP file cut in half: unreadable).
    Returns {"good": {name: frames}, "damaged": [name]}."""
    import shutil
    folder.mkdir(parents=True, exist_ok=True)
    write_bag(folder / "a", "mcap", frames=3)
    write_bag(folder / "b", "sqlite3", frames=2)
    for name, frames in (("c", 4), ("d", 3)):
        tmp = folder.parent / f"_{name}_tmp"
        write_bag(tmp, "mcap", frames=frames)
        shutil.move(next(tmp.glob("*.mcap")), folder / f"{name}.mcap")
        shutil.rmtree(tmp)
    damaged = folder / "d.mcap"
    data = damaged.read_bytes()
    damaged.write_bytes(data[:len(data) // 2])
    return {"good": {"a": 3, "b": 2, "c.mcap": 4}, "damaged": ["d.mcap"]}


def fleet_output_name(path) -> str:
    """The output folder a fleet run gives ``path``, by README's rule written out: the bag
    folder's name or the file's stem, '-', 12 hex digits of the SHA-256 of its absolute path."""
    path = Path(path)
    digest = hashlib.sha256(os.path.abspath(path).encode()).hexdigest()[:12]
    return f"{path.name if path.is_dir() else path.stem}-{digest}"


def wait_for_flushed_messages(folder: Path, proc, timeout: float = 60.0,
                              pattern: str = "*.mcap") -> None:
    """Wait until the MCAP bag being written in ``folder`` holds messages on disk (``pattern``:
    the .mcap files to look at, relative to ``folder``). The run must write its chunks
    uncompressed (``--bag-compression none``): zstd shrinks the test bags' uniform frames so
    far that a long run stays under the threshold.

    The writer buffers its records and writes a chunk at a time, so an .mcap over 64 KiB (more
    than its header and schemas) holds at least one finished frame: a signal sent now
    interrupts a run with frames done, however fast or slow this machine is.
    """
    deadline = time.monotonic() + timeout
    while not any(p.stat().st_size > 64 * 1024 for p in Path(folder).glob(pattern)):
        assert time.monotonic() < deadline and proc.poll() is None, proc.communicate()
        time.sleep(0.02)
