"""ament_python build of dense_perception (also installable with pip)."""

from glob import glob

from setuptools import find_packages, setup

PACKAGE = "dense_perception"

setup(
    name=PACKAGE,
    version="0.1.0",
    packages=find_packages(exclude=["test", "test.*", "tools", "tools.*"]),
    package_data={f"{PACKAGE}.core": ["data/*"]},
    data_files=[
        ("share/ament_index/resource_index/packages", [f"resource/{PACKAGE}"]),
        (f"share/{PACKAGE}", ["package.xml"]),
        (f"share/{PACKAGE}/launch", glob("launch/*.launch.py")),
        (f"share/{PACKAGE}/config", glob("config/*.yaml") + glob("config/*.rviz")),
        (f"share/{PACKAGE}/models", glob("models/*.tflite") + glob("models/*.md")),
    ],
    install_requires=["setuptools"],
    zip_safe=True,
    maintainer="dense_perception maintainers",
    maintainer_email="maintainers@dense-perception.dev",
    description="Dense depth, normals, segmentation and point clouds from a camera with LiteRT.",
    license="Apache-2.0",
    tests_require=["pytest"],
    extras_require={"fleet": ["ray[client]==2.60.0"]},
    entry_points={
        "console_scripts": [
            f"dense_perception_node = {PACKAGE}.ros.node:main",
            f"dense-perception = {PACKAGE}.offline.cli:main",
        ],
    },
)
