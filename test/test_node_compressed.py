# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The node's compressed topics over real DDS, read back by decoders written from the formats'
definitions (support/transport_decoders.py) and compared with the raw topics of the same frame;
encoded only while subscribed; their bandwidth in /diagnostics."""

import numpy as np
import pytest

pytest.importorskip("rclpy")

from dense_perception.core.conversions import image_msg_to_array  # noqa: E402
from support.common import DA3_TEST_MODEL, TIPS_TEST_MODEL  # noqa: E402
from support.model_truth import gradient_frame  # noqa: E402
from support.ros_harness import TOPIC_KEYS, camera_info, wait_until  # noqa: E402
from support.transport_decoders import (  # noqa: E402
    check_depth_round_trip, decode_compressed_depth, decode_jpeg_view, decode_png, depth_header,
    psnr)

Q, DEPTH_MAX = 100.0, 10.0  # compressed_depth_image_transport's defaults, ours too
A = Q * (Q + 1)


def decode_depth(msg):
    """(encoding, metres with NaN invalid), checking the header's a and b from their formula."""
    kind, a, b = depth_header(msg.data)
    assert kind == 0 and a == pytest.approx(A) and b == pytest.approx(1 - A / DEPTH_MAX)
    return decode_compressed_depth(msg.format, msg.data)


pytestmark = [pytest.mark.ros, pytest.mark.timeout(120)]

COMPRESSED = ("depth/image/compressedDepth", "depth/colored/compressed",
              "normals/colored/compressed", "segmentation/labels/compressed",
              "segmentation/colored/compressed")
RAW = ("depth/image", "depth/colored", "normals/colored", "segmentation/labels",
       "segmentation/colored")


def test_every_compressed_topic_decodes_to_its_raw_topic(harness_factory):
    h = harness_factory({"model_path": TIPS_TEST_MODEL, "jpeg_quality": 90},
                        subscribe=COMPRESSED + RAW + ("/diagnostics",))
    h.wait_matched(COMPRESSED + RAW)
    frame = np.clip(gradient_frame(448, 448, blue=0), 0, 255).astype(np.uint8)
    # Labels in 16 bands of 28 rows (regions, as a scene has: JPEG's 4:2:0 chroma would blur
    # stripes a few pixels high); the PNG test in test_compressed has every id in noise.
    frame[..., 2] = (np.arange(448) // 28 * 17).astype(np.uint8)[:, None]
    header = h.header(sec=1)
    h.publish_frame(frame, header, info=camera_info(448, 448, fx=400.0))
    got = {t: h.wait_for(t, where=lambda m: m.header.stamp == header.stamp)[0]
           for t in COMPRESSED + RAW}

    raw_depth = image_msg_to_array(got["depth/image"])
    encoding, depth = decode_depth(got["depth/image/compressedDepth"])
    assert encoding == "32FC1" and depth.shape == raw_depth.shape
    check_depth_round_trip(raw_depth, depth)
    assert np.isfinite(depth).mean() > 0.9

    packed = got["segmentation/labels/compressed"]
    encoding, labels = decode_png(packed.format, packed.data)
    assert encoding == "mono8"
    raw_labels = image_msg_to_array(got["segmentation/labels"])
    np.testing.assert_array_equal(labels, raw_labels)
    assert len(np.unique(raw_labels)) == 16

    # The smooth views keep 35 dB at quality 90; the segmentation view's saturated class
    # colours meet at hard edges, which JPEG's 4:2:0 chroma blurs: 25 dB (exact ids: labels).
    for view, floor in (("depth/colored", 35.0), ("normals/colored", 35.0),
                        ("segmentation/colored", 25.0)):
        encoding, bgr = decode_jpeg_view(got[f"{view}/compressed"].format,
                                         got[f"{view}/compressed"].data)
        raw = image_msg_to_array(got[view])
        assert encoding == got[view].encoding
        expected = raw[..., ::-1] if encoding == "rgb8" else raw
        assert psnr(bgr, expected) > floor, view
        assert len(got[f"{view}/compressed"].data) < raw.nbytes / 4, view

    values = h.diagnostics(lambda d: "bandwidth segmentation/labels/compressed (kB/s)" in d[2])[2]
    assert float(values["bandwidth total (kB/s)"]) >= 0


def test_compressed_topics_are_encoded_only_while_subscribed(harness_factory):
    h = harness_factory({"model_path": TIPS_TEST_MODEL},
                        subscribe=("depth/image", "/diagnostics"))
    h.wait_matched(("depth/image",))
    frame = np.clip(gradient_frame(448, 448), 0, 255).astype(np.uint8)
    info = camera_info(448, 448, fx=400.0)

    def one_frame(sec, topic="depth/image"):
        header = h.header(sec=sec)
        h.publish_frame(frame, header, info=info)
        return h.wait_for(topic, where=lambda m: m.header.stamp == header.stamp)[0]

    for sec in (1, 2, 3):
        one_frame(sec)
    stats = h.perception.pipeline.timer.stats()
    assert "publish" in stats and "compress" not in stats  # no encoding for nobody

    h.subscribe("depth/image/compressedDepth")
    h.wait_matched(("depth/image/compressedDepth",))
    for sec in (4, 5, 6):
        msg = one_frame(sec, "depth/image/compressedDepth")
    stats = h.perception.pipeline.timer.stats()
    assert stats["compress"].count == 3  # one encode per frame, now that someone listens
    raw = h.wait_for("depth/image", where=lambda m: m.header.stamp == msg.header.stamp)[0]
    ratio = len(raw.data) / len(msg.data)

    # Bandwidth per topic: a frame's bytes times the frame rate (every frame the same size).
    values = h.diagnostics(lambda d: d[2]["frames processed"] == "6"
                           and "bandwidth depth/image/compressedDepth (kB/s)" in d[2])[2]
    raw_rate = float(values["bandwidth depth/image (kB/s)"])
    packed_rate = float(values["bandwidth depth/image/compressedDepth (kB/s)"])
    assert raw_rate == pytest.approx(len(raw.data) / 1000 * float(values["output rate (Hz)"]),
                                     rel=0.25)
    assert 0 < packed_rate < raw_rate / 4 and ratio > 4
    assert float(values["bandwidth total (kB/s)"]) == pytest.approx(raw_rate + packed_rate,
                                                                    abs=0.11)
    assert float(values["compress mean (ms)"]) > 0

    h.unsubscribe("depth/image/compressedDepth")
    pub = h.perception.channels[0].outputs.pubs[TOPIC_KEYS["depth/image/compressedDepth"]]
    wait_until(lambda: pub.get_subscription_count() == 0, 10.0, "compressedDepth unmatched")
    for sec in (7, 8):
        one_frame(sec)
    assert h.perception.pipeline.timer.stats()["compress"].count == 3  # none since


def test_da3_compressed_depth_at_504x280_is_4x_smaller_within_its_bound(harness_factory):
    """DA3 (test model, fixed scale: a 3.9-9.3 m scene) published at a 504x280 camera's grid."""
    h = harness_factory({"model_path": DA3_TEST_MODEL, "depth_scale_source": "fixed",
                         "relative_depth_scale": 2.0, "output_resolution": "input",
                         "fit": "stretch"},
                        subscribe=("depth/image", "depth/image/compressedDepth"))
    h.wait_matched(("depth/image", "depth/image/compressedDepth"))
    frame = np.clip(gradient_frame(504, 280), 0, 255).astype(np.uint8)
    header = h.header(sec=1)
    h.publish_frame(frame, header, info=camera_info(504, 280, fx=360.0))
    raw = h.wait_for("depth/image", where=lambda m: m.header.stamp == header.stamp)[0]
    packed = h.wait_for("depth/image/compressedDepth",
                        where=lambda m: m.header.stamp == header.stamp)[0]
    raw_depth = image_msg_to_array(raw)
    assert raw_depth.shape == (280, 504)
    assert 1.0 <= np.nanmin(raw_depth) and np.nanmax(raw_depth) <= 10.0
    _, depth = decode_depth(packed)
    check_depth_round_trip(raw_depth, depth)
    assert np.isfinite(depth).all()
    assert len(raw.data) / len(packed.data) >= 4.0


def test_a_compressed_topic_alone_computes_its_raw_product_only(harness_factory):
    """Only segmentation/labels/compressed subscribed: the labels are computed (nothing else),
    and the PNG holds the TIPSv2 test model's labels, round(149 b), exactly."""
    h = harness_factory({"model_path": TIPS_TEST_MODEL},
                        subscribe=("segmentation/labels/compressed", "/diagnostics"))
    h.wait_matched(("segmentation/labels/compressed",))
    frame = np.zeros((448, 448, 3), np.uint8)
    frame[:, :224] = (30, 60, 90)
    frame[:, 224:] = (200, 10, 170)
    header = h.header(sec=1)
    h.publish_frame(frame, header, info=camera_info(448, 448, fx=400.0))
    msg = h.wait_for("segmentation/labels/compressed",
                     where=lambda m: m.header.stamp == header.stamp)[0]
    encoding, labels = decode_png(msg.format, msg.data)
    assert encoding == "mono8" and labels.shape == (448, 448)
    # away from the edge between the halves (the logits are resampled across it)
    assert (labels[:, :200] == round(149 * 90 / 255)).all()
    assert (labels[:, 248:] == round(149 * 170 / 255)).all()
    values = h.diagnostics(lambda d: d[2]["frames processed"] == "1")[2]
    assert values["products computed"] == "labels"
    assert "bandwidth segmentation/labels (kB/s)" not in values  # the raw topic sent nothing


def test_the_foxglove_layout_names_only_topics_the_node_publishes(harness_factory):
    """config/dense_perception.foxglove.json: each topic it names is one the node (in the root
    namespace, the launch file's default) advertises, with the type its panel reads."""
    import json
    from support.common import REPO, layout_topics
    layout = json.loads((REPO / "config" / "dense_perception.foxglove.json").read_text())
    named = layout_topics(layout)
    assert {"/depth/colored/compressed", "/points", "/diagnostics"} <= named
    h = harness_factory({"model_path": TIPS_TEST_MODEL})
    wanted = {"/depth/colored/compressed": "sensor_msgs/msg/CompressedImage",
              "/segmentation/colored/compressed": "sensor_msgs/msg/CompressedImage",
              "/normals/colored/compressed": "sensor_msgs/msg/CompressedImage",
              "/depth/camera_info": "sensor_msgs/msg/CameraInfo",
              "/points": "sensor_msgs/msg/PointCloud2",
              "/diagnostics": "diagnostic_msgs/msg/DiagnosticArray"}
    assert named <= set(wanted)

    def advertised():
        return dict(h.node.get_topic_names_and_types())
    wait_until(lambda: named <= set(advertised()), 10.0, "the layout's topics advertised")
    topics = advertised()
    for topic in named:
        assert wanted[topic] in topics[topic], topic
