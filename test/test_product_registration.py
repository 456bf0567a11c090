# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""A row added while running (core/product_table.py's ``register``) is refused in one line when
it cannot work: a topic that is another row's once its slashes are normalised, a name ROS does
not take, an encoding that neither sensor_msgs nor the writers know, a file form that would
change its values; and ``unregister`` leaves the built-in rows."""

from dataclasses import replace
from pathlib import Path

import numpy as np
import pytest

from dense_perception.core.product_table import IMAGE, PRODUCTS, Product, register, unregister
from dense_perception.core.products import OUTPUTS
from support.common import REPO

pytestmark = pytest.mark.timeout(60)


def _row(key="depth_twice", topic="depth/twice", encoding="32FC1", file="npy",
         needs=("depth",)):
    return Product(key, topic, IMAGE, "depth", encoding, file, needs=needs,
                   compute=lambda products: None)


def _refused(row, *words):
    """Register ``row``: it must be refused in one line holding ``words``, the table as it was."""
    before = dict(PRODUCTS)
    try:
        register(row)
    except ValueError as exc:
        text = str(exc)
    else:
        unregister(row.key)  # the next test starts from the table as it was
        pytest.fail(f"{row.key} (topic '{row.topic}', {row.encoding}, file '{row.file}') was taken")
    assert "\n" not in text and all(word in text for word in words), text
    assert PRODUCTS == before and row.key not in OUTPUTS
    return text


@pytest.mark.parametrize("topic", ["/depth/image", "depth/image/", "//depth/image//"])
def test_a_topic_that_is_a_built_in_ones_but_for_its_slashes_is_refused(topic):
    _refused(_row(topic=topic), "exists already", "'depth/image'", "depth's")


def test_a_topic_is_stored_without_its_slashes_and_then_taken():
    register(_row(topic="/depth/twice/"))
    try:
        assert OUTPUTS["depth_twice"][0] == "depth/twice"
        _refused(_row(key="depth_twice_again", topic="depth/twice"), "exists already")
    finally:
        unregister("depth_twice")
    assert "depth_twice" not in PRODUCTS and "depth_twice" not in OUTPUTS


# Relative topic names, as a row gives them; what ROS makes of each is asked of rclpy.
NAMES = ["depth/inverse", "Depth/Inverse_2", "_private/x", "a__b", "depth inverse",
         "depth//inverse", "9depth", "depth/9x", "dépth", "depth-inverse", "depth/in.verse",
         "depth/#", "", "/"]


@pytest.mark.ros
@pytest.mark.parametrize("name", NAMES)
def test_a_topic_name_is_taken_only_when_ros_takes_it(name):
    """rclpy's own validation, of the name as the node's publisher and a camera's (prefixed)
    publisher would use it, is the truth."""
    pytest.importorskip("rclpy")
    from rclpy.exceptions import InvalidTopicNameException
    from rclpy.expand_topic_name import expand_topic_name
    from rclpy.validate_full_topic_name import validate_full_topic_name
    from rclpy.validate_topic_name import validate_topic_name

    def ros_takes(topic):
        try:
            for prefixed in (topic, f"front/{topic}"):
                validate_topic_name(prefixed)
                validate_full_topic_name(expand_topic_name(prefixed, "dense_perception", "/"))
        except InvalidTopicNameException:
            return False
        return True

    row = _row(topic=name)
    if ros_takes(name.strip("/")):
        register(row)
        unregister(row.key)
    else:
        _refused(row, "is not a ROS topic name")


@pytest.mark.parametrize("name", ["~/depth", "{node}/depth", "depth/{ns}"])
def test_a_topic_with_a_substitution_is_refused(name):
    """``~`` and ``{}`` would put the topic somewhere other than the node's namespace (and
    ``front/~/depth``, a camera's prefixed name, is not a ROS name at all)."""
    _refused(_row(topic=name), "is not a ROS topic name")


def test_an_encoding_neither_ros_nor_the_writers_know_is_refused():
    _refused(_row(encoding="bogus"), "encoding 'bogus'")
    _refused(_row(encoding=""), "encoding ''")
    _refused(_row(encoding="mono16"), "encoding 'mono16'")  # ROS's, not the writers'


def _ros_encoding_names():
    """The names sensor_msgs' image_encodings.hpp declares (the ROS install's header)."""
    import re
    candidates = [REPO / ".venv" / "include", *Path("/opt/ros").glob("*/include")]
    for include in candidates:
        header = include / "sensor_msgs" / "sensor_msgs" / "image_encodings.hpp"
        if header.is_file():
            return set(re.findall(r'const char \w+\[\] = "([^"]+)";', header.read_text()))
    pytest.skip("no sensor_msgs/image_encodings.hpp here")


def test_every_allowed_encoding_is_a_ros_one_the_message_writer_writes():
    from dense_perception.core.conversions import image_fields, image_msg_to_array
    from dense_perception.core.product_table import ENCODINGS

    assert set(ENCODINGS) <= _ros_encoding_names()
    for encoding, (dtype, channels) in ENCODINGS.items():
        shape = (3, 4) if channels == 1 else (3, 4, channels)
        image = np.arange(np.prod(shape)).reshape(shape).astype(dtype)
        fields = image_fields(image, encoding)  # ValueError if it is not the encoding's array
        assert fields["step"] == 4 * channels * np.dtype(dtype).itemsize
        msg = type("Msg", (), {**fields, "data": fields["data"].tobytes()})
        np.testing.assert_array_equal(image_msg_to_array(msg), image)


@pytest.mark.parametrize("encoding, file", [("32FC1", "png"), ("rgb8", "png"),
                                            ("mono8", "png_rgb"), ("mono8", "depth"),
                                            ("32FC3", "ply")])
def test_a_file_form_that_would_change_the_values_is_refused(encoding, file):
    _refused(_row(encoding=encoding, file=file), f"file '{file}' cannot hold {encoding}")


def test_other_misfits_are_refused():
    _refused(_row(key="../up"), "a key is letters")
    _refused(_row(needs=("no_such_product",)), "needs unknown product(s) no_such_product")
    _refused(replace(_row(), message="sensor_msgs/msg/PointCloud2", encoding=""),
             "a computed row is an image")


def test_unregister_leaves_a_built_in_row(monkeypatch):
    with pytest.raises(ValueError, match="was not registered"):
        unregister("depth")
    # also one given a compute step of its own (a built-in row made from finished products)
    colored = PRODUCTS["depth_colored"]
    monkeypatch.setitem(PRODUCTS, "depth_colored", replace(colored, compute=lambda p: None))
    with pytest.raises(ValueError, match="was not registered"):
        unregister("depth_colored")
    assert "depth_colored" in PRODUCTS and "depth" in PRODUCTS
    with pytest.raises(ValueError, match="was not registered"):
        unregister("no_such_product")
