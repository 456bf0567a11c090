# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception process --compressed``: image_transport's compressed topics in the output
bag, decoded by the formats' own decoders (support/transport_decoders.py) to the raw topics of
the same bag; ``only`` keeps them instead of the raw images."""

import numpy as np
import pytest

from dense_perception.core.conversions import image_msg_to_array as image_to_array
from support.bag_maker import read_bag, write_bag
from support.common import TIPS_TEST_MODEL
from support.common import run_cli as run
from support.transport_decoders import (check_depth_round_trip, decode_compressed_depth,
                                        decode_jpeg_view, decode_png, psnr)

pytestmark = pytest.mark.timeout(120)

COMPRESSED = {"/cam/depth/image/compressedDepth": "/cam/depth/image",
              "/cam/depth/colored/compressed": "/cam/depth/colored",
              "/cam/normals/colored/compressed": "/cam/normals/colored",
              "/cam/segmentation/labels/compressed": "/cam/segmentation/labels",
              "/cam/segmentation/colored/compressed": "/cam/segmentation/colored"}


def process(tmp_path, capsys, name, *flags):
    src = tmp_path / "in"
    if not src.exists():
        write_bag(src, "mcap", frames=3, extra=False)
    out = tmp_path / name
    code, _, stderr = run(["process", src, "--model", TIPS_TEST_MODEL, "--backend", "cpu",
                           "--cpu-precision", "fp32", "--out", out, "--copy", "none", *flags],
                          capsys)
    assert code == 0, stderr
    return out


def test_bag_compressed_topics_decode_to_the_raw_ones(tmp_path, capsys):
    out = process(tmp_path, capsys, "add", "--compressed", "add")
    assert next(out.glob("*.mcap"))  # MCAP, the default storage
    msgs, types = read_bag(out)
    for packed, raw in COMPRESSED.items():
        assert types[packed] == "sensor_msgs/msg/CompressedImage"
        assert len(msgs[packed]) == len(msgs[raw]) == 3, packed
    for i in range(3):
        def pair(topic):
            (_, p), (_, r) = msgs[topic][i], msgs[COMPRESSED[topic]][i]
            assert p.header.stamp == r.header.stamp
            return p, r
        p, r = pair("/cam/depth/image/compressedDepth")
        encoding, depth = decode_compressed_depth(p.format, p.data)
        assert encoding == "32FC1"
        check_depth_round_trip(image_to_array(r), depth)
        assert np.isfinite(depth).all()
        p, r = pair("/cam/segmentation/labels/compressed")
        assert decode_png(p.format, p.data)[0] == "mono8"
        np.testing.assert_array_equal(decode_png(p.format, p.data)[1], image_to_array(r))
        for topic in ("/cam/depth/colored/compressed", "/cam/normals/colored/compressed",
                      "/cam/segmentation/colored/compressed"):
            p, r = pair(topic)
            encoding, bgr = decode_jpeg_view(p.format, p.data)
            raw = image_to_array(r)
            assert encoding == r.encoding
            assert psnr(bgr, raw[..., ::-1] if encoding == "rgb8" else raw) > 35.0, topic


def test_16uc1_depth_is_compressed_exactly(tmp_path, capsys):
    out = process(tmp_path, capsys, "mm", "--compressed", "add", "--outputs", "depth",
                  "--depth-format", "png16")
    msgs, _ = read_bag(out)
    for (_, p), (_, r) in zip(msgs["/cam/depth/image/compressedDepth"], msgs["/cam/depth/image"]):
        encoding, mm = decode_compressed_depth(p.format, p.data)
        assert encoding == "16UC1" == r.encoding
        np.testing.assert_array_equal(mm, image_to_array(r))  # all under 10 m: kept exact


def test_only_keeps_the_compressed_instead_of_the_raw_images(tmp_path, capsys):
    # Uncompressed chunks: the sizes are the messages' own (zstd would hide the difference).
    off = process(tmp_path, capsys, "off", "--bag-compression", "none")
    only = process(tmp_path, capsys, "only", "--compressed", "only", "--bag-compression", "none")
    off_msgs, off_types = read_bag(off)
    _, only_types = read_bag(only)
    assert not set(COMPRESSED) & set(off_types)  # off (the default): the bag as before
    assert set(only_types) == (set(off_types) - set(COMPRESSED.values())) | set(COMPRESSED)
    assert {"/cam/depth/camera_info", "/cam/normals/image", "/cam/points"} <= set(only_types)
    size = {name: sum(f.stat().st_size for f in path.glob("*.mcap"))
            for name, path in (("off", off), ("only", only))}
    # The raw images' bytes are gone but for the compressed ones' few percent.
    raw_bytes = sum(len(m.data) for topic in COMPRESSED.values() for _, m in off_msgs[topic])
    assert size["off"] - size["only"] > 0.9 * raw_bytes
