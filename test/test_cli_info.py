# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``dense-perception info`` on the test models, and the offline command's helpers: output
namespaces, image message checks like the node's, and no ROS needed."""

import json
import os
import subprocess
import sys

import numpy as np
import pytest

from support.common import DA3_TEST_MODEL, REPO, TIPS_TEST_MODEL

pytest.importorskip("rosbags")

from dense_perception.offline.inputs import bag_io  # noqa: E402
from dense_perception.core import conversions  # noqa: E402

from support.bag_maker import COLOURS, T, frame_of, header, image_msg  # noqa: E402
from support.common import run_cli as run  # noqa: E402


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

