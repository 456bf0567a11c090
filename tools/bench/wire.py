# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``make bench`` (wire rows): what each output costs on a network link, raw against
image_transport's compressed topic, per model and resolution: bytes per frame, the compression
ratio and the encode ms (median), plus the cloud's points and bytes with ``points_voxel_size``.

The bundled test models (DA3 with ``depth_scale_source: fixed`` x2: a 4-9 m scene; TIPSv2:
metric 0.5-4 m) on the sample scene, at the model grid and at the camera's size; and, where
``../shared/real-scenes`` is present, measured NYU Depth v2 depth resized to DA3's 504x280
(real depth edges, which the test models' smooth depth lacks). ROS-free: the encoders are the
node's (``core.compressed`` through ``core.products``). Writes ``bench_out/wire.json``.
"""

from __future__ import annotations

import argparse
import dataclasses
import json
from pathlib import Path
from typing import Any

import cv2
import numpy as np

from dense_perception.core.compressed import CompressionConfig, compressed_depth, jpeg
from dense_perception.core.postprocess import colorize_depth
from dense_perception.core.pipeline import load_pipeline
from dense_perception.core.frame_data import Request
from dense_perception.core.geometry.pointcloud import nearest_per_voxel
from dense_perception.core.products import COMPRESSED, compress_product
from dense_perception.core.settings.table import Settings
from tools.bench.timing import median_ms
from tools.common.scene import make_sample_scene, scene_intrinsics

REPO = Path(__file__).resolve().parents[2]
MODELS = {"da3": REPO / "models" / "test_da3_small.tflite",
          "tipsv2": REPO / "models" / "test_tipsv2_b14_dpt.tflite"}
NYU = REPO.parent / "shared" / "real-scenes" / "nyu"
VOXELS = (0.0, 0.05, 0.1)


def raw_bytes(products: Any, key: str, depth_encoding: str = "32FC1") -> int:
    """The raw topic's data bytes (an Image's data: H x W x channels x bytes per channel)."""
    image = getattr(products, key)
    if key == "depth" and depth_encoding == "16UC1":
        return image.shape[0] * image.shape[1] * 2
    return image.nbytes


def topic_rows(products: Any, runs: int, config: CompressionConfig) -> list[dict]:
    """One row per compressed topic this frame has: raw bytes, compressed bytes, encode ms."""
    rows = []
    for key, (raw_key, codec) in COMPRESSED.items():
        if getattr(products, raw_key) is None:
            continue
        payload = compress_product(products, key, "32FC1", config, None)
        ms = median_ms(lambda key=key: compress_product(products, key, "32FC1", config),
                        runs)
        raw = raw_bytes(products, raw_key)
        rows.append({"topic": key, "codec": codec, "raw_bytes": raw,
                     "compressed_bytes": int(payload.data.size),
                     "ratio": raw / payload.data.size, "encode_ms": ms})
    return rows


def bench_model(kind: str, resolution: str, frame_size: tuple[int, int], runs: int,
                config: CompressionConfig) -> dict:
    """Every compressed topic of one model at one output resolution."""
    width, height = frame_size
    frame = make_sample_scene(width, height)
    k = scene_intrinsics(width, height)
    pconf = {"output_resolution": resolution, "depth_scale_source": "fixed",
             "relative_depth_scale": 2.0} if kind == "da3" else {"output_resolution": resolution}
    pipe = load_pipeline(str(MODELS[kind]), Settings(backend="cpu", **pconf), log=lambda _: None)
    request = Request(depth=True, depth_colored=True, normals=True, normals_colored=True,
                      labels=True, labels_colored=True, points=False)
    products = pipe.process(frame, "rgb8", k, request=request)
    depth = products.depth
    clouds, full = [], None
    for voxel in VOXELS:  # VOXELS[0] is 0: the full cloud, which the others thin
        cpipe = load_pipeline(str(MODELS[kind]),
                              Settings(backend="cpu", **pconf, points_voxel_size=voxel),
                              log=lambda _: None)
        points = cpipe.process(frame, "rgb8", k, request=Request(points=True,
                                                                   points_rgb=True)).points
        full = points if voxel == 0 else full
        ms = median_ms(lambda: nearest_per_voxel(full, voxel), runs) if voxel else 0.0
        clouds.append({"voxel_m": voxel, "points": int(points.size),
                       "bytes": int(points.nbytes), "thin_ms": ms})
    return {"model": kind, "resolution": resolution, "input": f"{width}x{height}",
            "output": f"{depth.shape[1]}x{depth.shape[0]}",
            "depth_range_m": [float(np.nanmin(depth)), float(np.nanmax(depth))],
            "topics": topic_rows(products, runs, config), "cloud": clouds}


def bench_nyu(runs: int, config: CompressionConfig) -> list[dict]:
    """compressedDepth of measured indoor depth (NYU Depth v2, 0.7-10 m) at DA3's 504x280."""
    rows = []
    for path in sorted(NYU.glob("sync_depth_*.png")):
        mm = cv2.imread(str(path), cv2.IMREAD_UNCHANGED)
        depth = cv2.resize(mm, (504, 378), interpolation=cv2.INTER_NEAREST)[49:329]
        depth = depth.astype(np.float32) / 1000.0
        depth[depth == 0] = np.nan
        payload = compressed_depth(depth, "32FC1", config)
        ms = median_ms(lambda: compressed_depth(depth, "32FC1", config), runs)
        view = colorize_depth(depth)  # depth/colored of it, bgr8
        picture = jpeg(view, "bgr8", config)
        rows.append({"scene": path.name, "output": "504x280",
                     "depth_range_m": [float(np.nanmin(depth)), float(np.nanmax(depth))],
                     "raw_bytes": depth.nbytes, "compressed_bytes": int(payload.data.size),
                     "ratio": depth.nbytes / payload.data.size, "encode_ms": ms,
                     "colored_raw_bytes": view.nbytes,
                     "colored_jpeg_bytes": int(picture.data.size)})
    return rows


def table(results: dict) -> str:
    lines = ["model   grid    input      output     topic                       raw KB   "
             "sent KB  ratio  encode ms"]
    for r in results["models"]:
        for t in r["topics"]:
            lines.append(f"{r['model']:<7} {r['resolution']:<7} {r['input']:<10} "
                         f"{r['output']:<10} {t['topic']:<27} {t['raw_bytes'] / 1000:7.1f} "
                         f"{t['compressed_bytes'] / 1000:8.1f} {t['ratio']:6.1f} "
                         f"{t['encode_ms']:9.2f}")
        lines.append(f"{'':<37} points (stride 2, rgb): " + ", ".join(
            f"voxel {c['voxel_m']:g} m: {c['points']} pts {c['bytes'] / 1000:.0f} KB"
            + (f" ({c['thin_ms']:.1f} ms)" if c["voxel_m"] else "")
            for c in r["cloud"]))
    for n in results["nyu"]:
        lines.append(f"{'real':<7} {'-':<7} {'NYU':<10} {n['output']:<10} "
                     f"{'depth_compressed ' + n['scene'][11:16]:<27} {n['raw_bytes'] / 1000:7.1f} "
                     f"{n['compressed_bytes'] / 1000:8.1f} {n['ratio']:6.1f} "
                     f"{n['encode_ms']:9.2f}   (its depth/colored: "
                     f"{n['colored_raw_bytes'] / 1000:.1f} -> "
                     f"{n['colored_jpeg_bytes'] / 1000:.1f} KB)")
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--runs", type=int, default=5, help="encodes timed per topic (median)")
    parser.add_argument("--out", default="bench_out/wire.json")
    args = parser.parse_args(argv)
    config = CompressionConfig()
    cases = [("da3", "model", (1280, 720)), ("da3", "input", (1280, 720)),
             ("da3", "input", (504, 280)), ("tipsv2", "model", (1280, 720)),
             ("tipsv2", "input", (1280, 720))]
    results = {"config": dataclasses.asdict(config),
               "models": [bench_model(kind, res, size, args.runs, config)
                          for kind, res, size in cases],
               "nyu": bench_nyu(args.runs, config) if NYU.is_dir() else []}
    Path(args.out).parent.mkdir(parents=True, exist_ok=True)
    Path(args.out).write_text(json.dumps(results, indent=1))
    print(table(results))
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
