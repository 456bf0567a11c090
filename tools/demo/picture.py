# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``make demo-picture``: the README's picture (docs/demo.png) from ``make demo``'s outputs.

One row per demo model folder given (default: the TIPSv2 test model's, which has every
product): the input scene, then each coloured output the node published, each tile labelled
with its topic, scaled to a small height so the PNG stays a few tens of kB.
"""

from __future__ import annotations

import argparse
import sys
from pathlib import Path

import cv2
import numpy as np

REPO = Path(__file__).resolve().parents[2]
TILES = (("input.png", "image (input)"), ("depth_colored.png", "depth/colored"),
         ("normals_colored.png", "normals/colored"),
         ("segmentation_colored.png", "segmentation/colored"))


def picture(folder: Path, height: int = 160) -> np.ndarray:
    """The labelled tiles of one demo output folder, side by side (BGR)."""
    tiles = []
    for name, label in TILES:
        image = cv2.imread(str(folder / name), cv2.IMREAD_COLOR)
        if image is None:
            continue
        width = round(image.shape[1] * height / image.shape[0])
        tile = cv2.resize(image, (width, height), interpolation=cv2.INTER_AREA)
        cv2.rectangle(tile, (0, 0), (width, 18), (0, 0, 0), -1)
        cv2.putText(tile, label, (4, 13), cv2.FONT_HERSHEY_SIMPLEX, 0.4, (255, 255, 255), 1,
                    cv2.LINE_AA)
        tiles.append(tile)
    if not tiles:
        raise SystemExit(f"{folder} has none of {', '.join(n for n, _ in TILES)}: run make demo")
    gap = np.full((height, 4, 3), 255, np.uint8)
    return np.hstack([t for tile in tiles for t in (tile, gap)][:-1])


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("folder", nargs="?", type=Path,
                        default=REPO / "demo_out" / "test_tipsv2_b14_dpt")
    parser.add_argument("--out", type=Path, default=REPO / "docs" / "demo.png")
    args = parser.parse_args(argv)
    cv2.imwrite(str(args.out), picture(args.folder), [cv2.IMWRITE_PNG_COMPRESSION, 9])
    print(f"wrote {args.out} ({args.out.stat().st_size // 1024} kB)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
