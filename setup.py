# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""ament_python build of dense_perception; also an ordinary pip package (`pip install .`).

The runtime dependencies (with their tested version ranges) live in requirements/runtime.txt, read here,
so `pip install .` and `pip install -r requirements/runtime.txt` cannot drift apart. colcon does not
install them (it builds with --no-deps): on a robot they come from rosdep (package.xml) and pip
(docs/install-on-a-robot.md).
"""

from glob import glob
from pathlib import Path

from setuptools import find_packages, setup

PACKAGE = "dense_perception"
HERE = Path(__file__).resolve().parent


def runtime_requirements() -> list[str]:
    """The requirement lines of requirements/runtime.txt (comments and blank lines dropped)."""
    lines = (HERE / "requirements/runtime.txt").read_text().splitlines()
    return [line.split("#", 1)[0].strip() for line in lines
            if line.split("#", 1)[0].strip()]


setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*", "tools", "tools.*"]),
    package_data={f"{PACKAGE}.core.model": ["data/*"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml", "LICENSE"]),  # Apache-2.0 asks for its text
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml") + glob("config/*.rviz")
         + glob("config/*.json")),
        (f"share/{PACKAGE}/models", glob("models/*.tflite") + glob("models/*.md")),
    ],
    python_requires=">=3.10",  # ROS 2 Humble's Python (Ubuntu 22.04)
    install_requires=["setuptools", *runtime_requirements()],
    zip_safe=True,
    maintainer="dense_perception maintainers",
    maintainer_email="maintainers@dense-perception.dev",
    description="Dense depth, normals, segmentation and point clouds from a camera with LiteRT.",
    license="Apache-2.0",
    tests_require=["pytest"],
    # openvino: exactly the release ai-edge-litert 2.3's OpenVINO plugin links (requirements/npu.txt)
    extras_require={"fleet": ["ray[client]==2.60.0"], "openvino": ["openvino==2026.3.1"],
                    "rerun": ["rerun-sdk==0.41.0; python_version >= '3.11'"]},
    entry_points={
        # colcon puts these in lib/dense_perception/ (setup.cfg), where `ros2 run` looks;
        # pip puts them in the environment's bin/.
        "console_scripts": [
            f"dense_perception_node = {PACKAGE}.ros.node:main",
            f"dense-perception = {PACKAGE}.offline.cli:main",
        ],
    },
)
