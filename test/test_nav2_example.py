# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""docs/nav2.md's example against the node: every topic its YAML names is one the node (or the
relay it gives) publishes, its QoS table is the node's real QoS over DDS, and what the semantic
layer relies on holds (one stamp for labels, confidence and points; one point per label pixel,
in pixel order). Nav2 itself is not on pip: its side is not run."""

import ast
import functools
import json
import re
import threading

import numpy as np
import pytest

from support.common import REPO, TIPS_TEST_MODEL
from dense_perception.core.settings.table import PARAMS_BY_NAME
from dense_perception.core.postprocess import ade20k_class_names
from dense_perception.core.products import OUTPUT_GROUPS, OUTPUTS

yaml = pytest.importorskip("yaml")

pytestmark = pytest.mark.timeout(60)
DOC = (REPO / "docs" / "nav2.md").read_text()


def code_blocks(language):
    return re.findall(rf"```{language}\n(.*?)```", DOC, re.S)


def yaml_block(top_key):
    return next(d for d in map(yaml.safe_load, code_blocks("yaml")) if top_key in d)


NODE = yaml_block("/**/dense_perception")["/**/dense_perception"]["ros__parameters"]
COSTMAP = yaml_block("local_costmap")["local_costmap"]["local_costmap"]["ros__parameters"]
NAMESPACE = "/" + re.search(r"namespace:=(\S+)", code_blocks("bash")[0]).group(1)
RELAY = ast.parse(code_blocks("python")[0])


def relay_topic(method):
    """The topic the relay passes to ``node.<method>(type, topic, ...)``, in the namespace."""
    call = next(n for n in ast.walk(RELAY) if isinstance(n, ast.Call)
                and getattr(n.func, "attr", "") == method)
    return f"{NAMESPACE}/{call.args[1].value}"


def named_topics(tree):
    """Every value of a ``topic`` or ``*_topic`` key anywhere in the costmap parameters."""
    if isinstance(tree, dict):
        for key, value in tree.items():
            if key == "topic" or key.endswith("_topic"):
                yield value
            else:
                yield from named_topics(value)


def node_topics():
    """Our topics, as the example's node publishes them: TIPSv2 gives every group."""
    return {f"{NAMESPACE}/{OUTPUTS[key][0]}": key for group in OUTPUT_GROUPS.values()
            if NODE.get(group.switch, PARAMS_BY_NAME[group.switch].default)
            for key in group.products}


def qos_table():
    """{topic: (publisher, pub reliability, pub durability, sub reliability, sub durability)}."""
    rows = re.findall(r"^\| `(/[^`]+)` \| ([^|]+) \| ([^|]+) \| ([^|]+) \| [^|]+ \| ([^|]+) \| "
                      r"([^|]+) \|$", DOC, re.M)
    return {r[0]: tuple(c.strip() for c in r[1:]) for r in rows}


def test_node_parameters_are_ours_and_give_the_layer_an_aligned_cloud():
    for name, value in NODE.items():
        assert name in PARAMS_BY_NAME, name
        assert type(value) is type(PARAMS_BY_NAME[name].default), name
    assert NODE["points_organized"] is True and NODE["points_stride"] == 1


def test_every_topic_the_costmap_names_is_published():
    ours = node_topics()
    relay_out = relay_topic("create_publisher")
    assert relay_topic("create_subscription") in ours  # the relay reads segmentation/classes
    named = list(named_topics(COSTMAP))
    assert len(named) == 5
    for topic in named:
        assert topic in ours or topic == relay_out, topic
    semantic = COSTMAP["semantic_layer"]["front_camera"]
    voxel = COSTMAP["voxel_layer"]["dense_points"]
    assert ours[semantic["segmentation_topic"]] == "labels"
    assert ours[semantic["confidence_topic"]] == "labels_confidence"
    assert ours[semantic["pointcloud_topic"]] == ours[voxel["topic"]] == "points"
    assert semantic["labels_topic"] == relay_out and voxel["data_type"] == "PointCloud2"


def test_class_names_are_ade20k_and_the_relay_keeps_them():
    semantic = COSTMAP["semantic_layer"]["front_camera"]
    named = [c for t in semantic["class_types"] for c in semantic[t]["classes"]]
    assert set(named) <= set(ade20k_class_names())
    kept = ast.literal_eval(re.search(r"classes:=\"(\[.*?\])\"", DOC).group(1))
    assert sorted(kept) == sorted(named)


def test_qos_table_rows_are_compatible():
    table = qos_table()
    assert set(table) == set(named_topics(COSTMAP)) | {relay_topic("create_subscription")}
    for topic, (_, pub_rel, pub_dur, sub_rel, sub_dur) in table.items():
        assert sub_rel != "reliable" or pub_rel == "reliable", topic
        assert sub_dur != "transient local" or pub_dur == "transient local", topic


@pytest.mark.ros
@pytest.mark.timeout(90)
def test_the_node_publishes_what_the_example_wires():
    pytest.importorskip("rclpy")
    from support.model_truth import tips_seg_confidence_of
    from support.ros_harness import Harness, camera_info
    from rclpy.qos import DurabilityPolicy, QoSProfile, ReliabilityPolicy
    from dense_perception.core.conversions import cloud_to_points, image_msg_to_array
    from dense_perception.core.geometry.fit import make_fit_plan
    from dense_perception.core.geometry.intrinsics import Intrinsics
    from dense_perception.ros.messages import MESSAGE_CLASSES
    from dense_perception.ros.node import DensePerceptionNode

    table = qos_table()
    ours = {t: k for t, k in node_topics().items() if t in table}
    node_class = functools.partial(
        DensePerceptionNode, namespace=NAMESPACE,
        cli_args=["--ros-args", "-r", "image:=/image", "-r", "camera_info:=/camera_info"])
    h = Harness({**NODE, "model_path": TIPS_TEST_MODEL}, node_class=node_class, subscribe=())
    try:
        got, cond = {}, threading.Condition()
        for topic, key in ours.items():
            _, _, _, sub_rel, sub_dur = table[topic]
            qos = QoSProfile(depth=50, reliability=ReliabilityPolicy.RELIABLE
                             if sub_rel == "reliable" else ReliabilityPolicy.BEST_EFFORT,
                             durability=DurabilityPolicy.TRANSIENT_LOCAL
                             if sub_dur == "transient local" else DurabilityPolicy.VOLATILE)

            def record(msg, key=key):
                with cond:
                    got.setdefault(key, []).append(msg)
                    cond.notify_all()
            h.client.create_subscription(MESSAGE_CLASSES[OUTPUTS[key][1]], topic, record, qos)
        # The node's publishers as the graph reports them, against the table.
        for topic in ours:
            _, pub_rel, pub_dur, _, _ = table[topic]
            h.wait_until(lambda t=topic: h.client.get_publishers_info_by_topic(t), 10, topic)
            info = h.client.get_publishers_info_by_topic(topic)[0]
            assert info.node_name == "dense_perception" and info.node_namespace == NAMESPACE
            assert info.qos_profile.reliability.name.lower().replace("_", " ") == pub_rel
            assert info.qos_profile.durability.name.lower().replace("_", " ") == pub_dur
        frame = np.zeros((480, 640, 3), np.uint8)
        frame[..., 2] = 200  # rgb8 blue 200: label 117 everywhere, depth 0.5 + 0.5 * 200/255
        frame[:, :, 0] = np.linspace(0, 255, 640).astype(np.uint8)  # depth varies with u
        per_frame = ("labels", "labels_confidence", "points")

        def complete():  # a stamp all three carry
            stamps = [{(m.header.stamp.sec, m.header.stamp.nanosec) for m in got.get(k, [])}
                      for k in per_frame]
            return set.intersection(*stamps)
        # Best-effort subscriptions: a lost sample is allowed, so frames go until one arrives.
        for sec in range(1, 6):
            h.wait_until(lambda: h.perception.channels[0].camera.subscribed, 10,
                         "camera subscribed")
            h.publish_frame(frame, h.header(sec=sec), info=camera_info(640, 480, fx=520.0))
            with cond:
                if cond.wait_for(complete, timeout=10):
                    break
        stamp = min(complete())
        pick = {k: next(m for m in got[k] if (m.header.stamp.sec, m.header.stamp.nanosec)
                        == stamp) for k in per_frame}
        labels, conf, cloud = pick["labels"], pick["labels_confidence"], pick["points"]
        assert (cloud.height, cloud.width) == (labels.height, labels.width) \
            == (conf.height, conf.width) == (448, 448)
        assert labels.header.frame_id == conf.header.frame_id == cloud.header.frame_id
        assert [f.name for f in cloud.fields] == ["x", "y", "z"]  # points_rgb: false
        assert (image_msg_to_array(labels) == round(149 * 200 / 255)).all()
        assert np.abs(image_msg_to_array(conf).astype(int)
                      - int(tips_seg_confidence_of(200))).max() <= 1
        # Pixel order: point (v, u) projects back to pixel (u, v) of the labels' grid.
        points = cloud_to_points(cloud)
        k = make_fit_plan(640, 480, 448, 448, "crop").published_intrinsics(
            Intrinsics.from_k(camera_info(640, 480, fx=520.0).k, 640, 480), "model")
        for v, u in [(0, 0), (100, 300), (447, 447), (224, 10)]:
            p = points[v, u]
            assert p["x"] / p["z"] * k.fx + k.cx == pytest.approx(u, abs=0.01)
            assert p["y"] / p["z"] * k.fy + k.cy == pytest.approx(v, abs=0.01)
        with cond:  # what the relay reads: the latched class list
            cond.wait_for(lambda: "classes" in got, timeout=10)
        assert json.loads(got["classes"][0].data) == list(ade20k_class_names())
    finally:
        h.close()
