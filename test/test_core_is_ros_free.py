"""The core modules import without ROS: none of them pulls in rclpy or ROS message packages."""

import subprocess
import sys

CORE = ["models", "fit", "intrinsics", "preprocess", "runner", "postprocess", "pointcloud",
        "timing", "pipeline", "tflite_file", "conversions", "parameters",
        # the offline command works without a ROS install
        "cli", "bagio", "fileio"]


def test_core_modules_do_not_import_ros():
    code = ("import sys\n"
            + "".join(f"import dense_perception.{m}\n" for m in CORE)
            + "bad = sorted(m for m in sys.modules if m.split('.')[0] in "
              "('rclpy', 'sensor_msgs', 'std_msgs', 'diagnostic_msgs', 'builtin_interfaces'))\n"
              "print(','.join(bad))\n")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == ""
