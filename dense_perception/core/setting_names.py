# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""How a message names a setting: in the caller's own syntax, rendered where it is written.

Core code (the checks in :mod:`.settings.table`, :mod:`.wiring.derived`,
:mod:`.model.depth_network` and :mod:`.scale.metric_scale`) takes a :class:`Syntax` and
writes ``syntax.name("camera_height")`` or ``syntax.example("camera_height", 0.35)``; the
node passes :data:`NODE` (``camera_height``, ``-p camera_height:=0.35``), the offline
command its own (``--camera-height``, ``--camera-height 0.35``; see
``offline/options/settings_args.py``). No message is patched afterwards. This module imports nothing of the package, so any core module may use it.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Callable


@dataclass(frozen=True)
class Syntax:
    """Renders setting names and values for one caller (the node or the command line)."""

    name: Callable[[str], str]              # how the setting is called: 'max_depth'
    phrase: Callable[[str, Any], str]       # a setting with a value, in prose: 'depth_encoding 16UC1'
    example: Callable[[str, Any], str]      # how to set it: '-p camera_height:=0.35'


NODE = Syntax(name=lambda n: n, phrase=lambda n, v: f"{n} {v}",
              example=lambda n, v: f"-p {n}:={v}")
