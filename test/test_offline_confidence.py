# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception process`` writes DA3's confidence like its depth: a bag topic
(``<namespace>/depth/confidence``, 32FC1) or ``depth_confidence/<stem>.npy``."""

import cv2
import numpy as np
import pytest

from support.common import DA3_CONFIDENCE_TEST_MODEL, DA3_TEST_MODEL
from support.common import run_cli as run

pytest.importorskip("rosbags")

from support.bag_maker import COLOURS, frame_of, read_bag, write_bag  # noqa: E402
from support.model_truth import da3_confidence_of  # noqa: E402

from dense_perception.core import conversions  # noqa: E402
from dense_perception.offline.inputs import bag_io  # noqa: E402

pytestmark = pytest.mark.timeout(120)


def confidence_of(rgb):
    """The DA3 confidence test model's confidence for one colour (model_truth's law)."""
    return float(da3_confidence_of(np.asarray(rgb, np.float64)))


def test_bag_gets_a_depth_confidence_topic_beside_depth(tmp_path, capsys):
    src = write_bag(tmp_path / "in", "mcap", frames=3)
    out = tmp_path / "out"
    code, _, stderr = run(["process", src, "--model", DA3_CONFIDENCE_TEST_MODEL, "--backend",
                           "cpu", "--out", out, "--outputs", "depth,depth_confidence"], capsys)
    assert code == 0, stderr
    msgs, types = read_bag(out)
    assert types["/cam/depth/confidence"] == bag_io.IMAGE
    depth = msgs["/cam/depth/image"]
    confidence = msgs["/cam/depth/confidence"]
    assert len(confidence) == len(depth) == 3
    for i, ((t, msg), (t_depth, depth_msg)) in enumerate(zip(confidence, depth)):
        assert t == t_depth and msg.header.stamp == depth_msg.header.stamp
        assert msg.header.frame_id == depth_msg.header.frame_id
        assert msg.encoding == "32FC1" and (msg.width, msg.height) == (depth_msg.width,
                                                                       depth_msg.height)
        values = conversions.image_msg_to_array(msg)
        np.testing.assert_allclose(values, confidence_of(COLOURS[i]), rtol=1e-5)


def test_images_get_depth_confidence_npy_files(tmp_path, capsys):
    folder = tmp_path / "shots"
    folder.mkdir()
    for i in range(2):
        cv2.imwrite(str(folder / f"s{i}.png"), frame_of(COLOURS[i])[:, :, ::-1].copy())
    out = tmp_path / "out"
    code, _, stderr = run(["process", folder, "--model", DA3_CONFIDENCE_TEST_MODEL,
                           "--backend", "cpu", "--out", out], capsys)
    assert code == 0, stderr
    for i in range(2):
        values = np.load(out / "depth_confidence" / f"s{i}.npy")
        depth = np.load(out / "depth" / f"s{i}.npy")
        assert values.dtype == np.float32 and values.shape == depth.shape
        np.testing.assert_allclose(values, confidence_of(COLOURS[i]), rtol=1e-5)


def test_card_style_da3_writes_no_confidence(tmp_path, capsys):
    image = tmp_path / "one.png"
    cv2.imwrite(str(image), frame_of(COLOURS[0])[:, :, ::-1].copy())
    code, _, stderr = run(["process", image, "--model", DA3_TEST_MODEL, "--backend", "cpu",
                           "--out", tmp_path / "out"], capsys)
    assert code == 0, stderr
    assert (tmp_path / "out" / "depth" / "one.npy").exists()
    assert not (tmp_path / "out" / "depth_confidence").exists()
    code, _, stderr = run(["process", image, "--model", DA3_TEST_MODEL, "--backend", "cpu",
                           "--out", tmp_path / "out2", "--outputs", "depth_confidence"], capsys)
    assert code != 0 and "has no depth_confidence output" in stderr
