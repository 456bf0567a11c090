# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The Foxglove layout of the package's outputs: the colour views of depth, segmentation and
normals, the cloud in a 3D panel, and /diagnostics.

One function writes it for the node and for an offline bag alike:
``config/dense_perception.foxglove.json`` is :func:`foxglove_layout` for the node in the root
namespace (``make docs`` writes it), and ``dense-perception process BAG`` writes
``foxglove_layout.json`` beside its output bag for that bag's topics (its namespace, the
compressed or raw views it holds, the camera's frame, and the odometry frame the clouds
accumulate in when the bag has /tf).
"""

from __future__ import annotations

from typing import Any, Collection

CONFIG_FRAME = "camera_optical_frame"  # the launch file's fixed_frame default
DIAGNOSTICS = "/diagnostics"
# Image panel id -> its view's topic, relative to the namespace (the compressed one first).
VIEWS = {"Image!depth": ("depth/colored/compressed", "depth/colored"),
         "Image!labels": ("segmentation/colored/compressed", "segmentation/colored"),
         "Image!normals": ("normals/colored/compressed", "normals/colored")}
CLOUD, CALIBRATION = "points", "depth/camera_info"
DECAY_S = 30.0  # s an accumulating cloud stays in view (odometry frame)


def _topic(namespace: str, name: str) -> str:
    namespace = namespace.strip("/")
    return f"/{namespace}/{name}" if namespace else f"/{name}"


def _split(panels: list[Any], direction: str) -> Any:
    """Foxglove's binary layout tree of ``panels`` side by side (``row``) or stacked
    (``column``), each the same share."""
    if len(panels) == 1:
        return panels[0]
    return {"first": panels[0], "second": _split(panels[1:], direction),
            "direction": direction, "splitPercentage": round(100 / len(panels))}


def foxglove_layout(namespace: str = "", frame: str = CONFIG_FRAME,
                    topics: Collection[str] | None = None,
                    accumulate_in: str | None = None) -> dict[str, Any]:
    """The layout for outputs in ``namespace``, the 3D panel following ``frame``. ``topics``:
    the topics there are (an offline bag's); each view then shows its compressed topic where
    there is one, else the raw one, and a panel whose topic is absent is left out (None: the
    node's, every view compressed). ``accumulate_in``: a frame (the odometry's) the 3D panel
    follows instead, keeping each cloud :data:`DECAY_S` so they accumulate."""
    have = (lambda t: True) if topics is None else (lambda t: t in topics)
    configs: dict[str, Any] = {}
    calibration = _topic(namespace, CALIBRATION)
    for panel, names in VIEWS.items():
        found = next((_topic(namespace, n) for n in names if have(_topic(namespace, n))), None)
        if found is not None:
            configs[panel] = {"imageMode": {"imageTopic": found, **(
                {"calibrationTopic": calibration} if have(calibration) else {})}}
    cloud = _topic(namespace, CLOUD)
    if have(cloud):
        settings = {"visible": True, "colorField": "rgb", "colorMode": "rgb", "pointSize": 3}
        if accumulate_in:
            settings["decayTime"] = DECAY_S
        configs["3D!cloud"] = {"followTf": accumulate_in or frame,
                               "topics": {cloud: settings}}
    if have(DIAGNOSTICS):
        configs["DiagnosticSummary!health"] = {"minLevel": 0, "pinnedIds": [],
                                               "hardwareIdFilter": "",
                                               "topicToRender": DIAGNOSTICS}
    views = [p for p in VIEWS if p in configs]
    side = [p for p in ("3D!cloud", "DiagnosticSummary!health") if p in configs]
    columns = [_split(c, "column") for c in (views, side) if c]
    return {"configById": configs, "globalVariables": {}, "userNodes": {},
            "playbackConfig": {"speed": 1}, "layout": _split(columns, "row") if columns else ""}

