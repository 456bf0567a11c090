# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Accuracy on real RGB-D frames: ``make eval-real`` writes docs/accuracy.md.

Each frame of ``../shared/real-scenes`` (``tools.eval.real_scenes.FRAMES``) goes through the
project's pipeline (``load_pipeline``, the node's and the offline command's code) with its real
intrinsics; the published depth is compared with the measured depth for each scale source:

* ``ground_plane``: ``camera_height`` = the floor's distance measured on the measured depth (a
  hand-picked floor region and a least-squares plane, ``tools.eval.real_scenes.floor_plane``);
* ``reference_depth``: 1 % of the measured pixels, drawn at random (seed 0), as a sparse,
  LiDAR-like reference;
* ``oracle``: the best single scale, median(truth / depth), what no source can beat on average;
* ``model``: a metric model's own metres (TIPSv2), instead of the three above.

Each scale comes from the frame alone (``per_frame``, as for a folder of photos: no filter).
Figures: AbsRel, delta < 1.25 and the scale error median(depth / truth) - 1, over the pixels
with a measured depth and a published one. Run on another model (DA3, TIPSv2)::

    make eval-real MODEL=path/to/da3_small_504x280_fp16.tflite OUT=accuracy_da3.md

(``MODEL_TYPE=depth EVAL_ARGS='--input-normalization imagenet ...'`` for any other monocular
depth file.)
"""

from __future__ import annotations

import argparse
import sys
import time
from dataclasses import replace
from pathlib import Path

import numpy as np

from dense_perception.core.scale.metric_scale import DepthScaler, ScaleConfig
from dense_perception.core.scale.estimators import ground_plane_scale
from dense_perception.core.pipeline import DensePipeline, load_pipeline
from dense_perception.core.frame_data import Request
from dense_perception.core.settings.table import Settings
from tools.eval.real_scenes import (FASTDEPTH, FRAMES, PYDNET, REAL_SCENES, SOURCES, available,
                                    depth_errors, floor_plane, frame_intrinsics, oracle_scale,
                                    sparse_reference)

REFERENCE_SHARE = 0.01
REFERENCE_SEED = 0
CHECK_SCALE = 3.7   # the arbitrary factor measured depth is divided by for the no-model table


def evaluate_frame(pipelines: dict, frame) -> list[dict]:
    """One row per scale source for ``frame``: its scale (or why none) and its errors."""
    rgb, truth = frame.rgb(), frame.depth()
    k = frame_intrinsics(frame, truth.shape[1], truth.shape[0])
    height = floor_plane(truth, frame).distance
    rows = []
    relative = pipelines["none"].process(rgb, "rgb8", k).depth
    if pipelines["none"].spec.metric_depth:
        rows.append({"source": "model", "scale": 1.0, **depth_errors(truth, relative)})
    else:
        scalers = {"ground_plane": (ScaleConfig("ground_plane", camera_height=height,
                                                per_frame=True), None),
                   "reference_depth": (ScaleConfig("reference_depth", per_frame=True),
                                       sparse_reference(truth, REFERENCE_SHARE, REFERENCE_SEED))}
        for source, (config, reference) in scalers.items():
            pipe = pipelines[source]
            products = pipe.finish(pipe.infer(rgb, "rgb8", Request(), k),
                                   scaler=DepthScaler(config), reference=reference)
            if products.depth is None:
                rows.append({"source": source, "scale": None, "reason": products.scale.reason})
            else:
                rows.append({"source": source, "scale": products.scale.scale,
                             **depth_errors(truth, products.depth)})
    s = oracle_scale(truth, relative)
    rows.append({"source": "oracle", "scale": s, **depth_errors(truth, relative * np.float32(s))})
    for row in rows:
        row["frame"] = frame.name
    return rows


def ground_truth_check(frames) -> list[dict]:
    """The ground-plane source on measured depth / CHECK_SCALE (no model): its own accuracy."""
    rows = []
    for frame in frames:
        truth = frame.depth()
        k = frame_intrinsics(frame, truth.shape[1], truth.shape[0])
        floor = floor_plane(truth, frame)
        est = ground_plane_scale(truth / np.float32(CHECK_SCALE), k, floor.distance)
        rows.append({"frame": frame.name, "height": floor.distance, "rms": floor.rms,
                     "error": None if est.scale is None else est.scale / CHECK_SCALE - 1.0,
                     "reason": est.reason})
    return rows


def _cell(row: dict) -> list[str]:
    if row.get("scale") is None:
        return ["withheld", "-", "-", "-", "-", row.get("reason", "")]
    return [f"{row['scale']:.4g}", f"{row['absrel']:.3f}", f"{row['delta1']:.3f}",
            f"{row['scale_error']:+.1%}", f"{row['coverage']:.0%}", ""]


def summary(rows: list[dict]) -> list[str]:
    """One line per scale source: on how many frames it gave a scale, and how far off."""
    lines = []
    for source in dict.fromkeys(r["source"] for r in rows):
        mine = [r for r in rows if r["source"] == source]
        given = [r for r in mine if r.get("scale") is not None]
        text = f"- `{source}`: a scale on {len(given)} of {len(mine)} frames"
        if given:
            text += (f"; AbsRel {min(r['absrel'] for r in given):.3f}-"
                     f"{max(r['absrel'] for r in given):.3f}, scale error up to "
                     f"{max(abs(r['scale_error']) for r in given):.1%}")
        lines.append(text + ".")
    return lines


def render(model: Path, kind: str, rows: list[dict], checks: list[dict], command: str) -> str:
    """docs/accuracy.md's text."""
    real_model = model.resolve() == PYDNET.resolve()
    lines = [
        "# Accuracy on real frames",
        "",
        f"Generated by `{command}` (`tools/eval/real.py`); do not edit by hand.",
        "",
        "Real RGB-D frames with measured depth, through the same pipeline as the node and "
        "`dense-perception process`, with each frame's real intrinsics. Sources:",
        "",
        f"- NYU frames: {SOURCES['nyu']}; Kinect v1, dense (filled) depth.",
        f"- TUM frame: {SOURCES['tum']}; raw Kinect v1 depth with holes, PrimeSense default "
        "intrinsics.",
        f"- Model: `{model.name}` (model type `{kind}`)" + (
            f": {SOURCES['pydnet']}. A **real trained network**, small and weak (it is here "
            "because it is real, not because it is good): every figure below is from real "
            "pixels through a real model. No figure here comes from random weights."
            if real_model else "."),
        "",
        "Scale sources (each frame's scale from that frame alone, `per_frame`):",
        "",
        "- `ground_plane`: `camera_height` = the floor's distance measured on the measured depth "
        "(a floor region picked by hand per frame and a least-squares plane).",
        f"- `reference_depth`: {REFERENCE_SHARE:.0%} of the measured pixels drawn at random "
        f"(seed {REFERENCE_SEED}), a sparse LiDAR-like reference.",
        "- `oracle`: the best single scale as monocular-depth benchmarks take it, median(truth "
        "/ depth): what is left is the model's own shape error (another scale can lower AbsRel "
        "a little, since the median does not minimise it).",
        "- `model`: a metric model's own metres (TIPSv2).",
        "",
        "AbsRel = mean |d - t| / t; delta1 = share of pixels with max(d/t, t/d) < 1.25; scale "
        "error = median(d / t) - 1; coverage = share of the measured pixels with a published "
        "depth (the default `fit: crop` drops rows the model does not see). `withheld`: the "
        "source gave no scale, so no depth was published, and the reason is the pipeline's own.",
        "",
        "In short:",
        "",
        *summary(rows),
        "",
        "| frame | source | scale | AbsRel | delta1 | scale error | coverage | note |",
        "|---|---|---|---|---|---|---|---|",
    ]
    for row in rows:
        lines.append("| " + " | ".join([row["frame"], row["source"], *_cell(row)]) + " |")
    lines += [
        "",
        "## The ground-plane source on measured depth",
        "",
        f"Measured depth / {CHECK_SCALE} (no model), with the floor's measured distance as "
        "`camera_height`: how well the source itself recovers the factor on real geometry "
        "(`test/test_real_geometry.py` requires within 3 % or withheld).",
        "",
        "| frame | floor distance (m) | floor fit rms (mm) | scale error |",
        "|---|---|---|---|",
    ]
    for c in checks:
        error = "withheld: " + c["reason"] if c["error"] is None else f"{c['error']:+.1%}"
        lines.append(f"| {c['frame']} | {c['height']:.3f} | {1000 * c['rms']:.1f} | {error} |")
    lines += [
        "",
        "## On your own model",
        "",
        "With DA3 or TIPSv2 weights (see `models/README.md`), the same frames and figures:",
        "",
        "```bash",
        "make eval-real MODEL=path/to/da3_small_504x280_fp16.tflite OUT=accuracy_da3.md",
        "make eval-real MODEL=path/to/tipsv2_b14_dpt.tflite OUT=accuracy_tipsv2.md",
        "# any monocular depth .tflite (model_type depth; its settings as tools/eval/real.py "
        "options, e.g. a MiDaS export):",
        "make eval-real MODEL=path/to/midas.tflite MODEL_TYPE=depth OUT=accuracy_midas.md \\",
        "  EVAL_ARGS='--input-normalization imagenet --depth-output-kind inverse_depth'",
        "```",
        "",
        f"The frames are read from `{REAL_SCENES.name}` beside the repository "
        "(`../shared/real-scenes`); `make eval-real` with no `MODEL` evaluates PyD-Net++ and "
        "rewrites this page.",
        "",
    ]
    return "\n".join(lines)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--model", type=Path, default=PYDNET,
                        help="a .tflite (default: PyD-Net++ from ../shared/real-scenes)")
    parser.add_argument("--model-type", default=None,
                        help="auto, da3, tipsv2 or depth (default: depth for PyD-Net++, "
                             "else auto)")
    parser.add_argument("--out", type=Path, default=Path("docs/accuracy.md"))
    parser.add_argument("--frames", nargs="*", default=None,
                        help=f"a subset of {', '.join(f.name for f in FRAMES)}")
    parser.add_argument("--num-threads", type=int, default=2)
    parser.add_argument("--input-normalization", default="unit",
                        help="model type depth: unit, imagenet or custom (see docs/parameters.md)")
    parser.add_argument("--input-mean", type=float, nargs=3, default=(0.0, 0.0, 0.0))
    parser.add_argument("--input-std", type=float, nargs=3, default=(1.0, 1.0, 1.0))
    parser.add_argument("--depth-output", type=int, default=-1,
                        help="model type depth: which output (-1: the first at full resolution)")
    parser.add_argument("--depth-output-kind", default="depth",
                        help="model type depth: depth or inverse_depth")
    args = parser.parse_args(argv)
    if not available():
        print(f"eval-real: {REAL_SCENES} is absent: it holds the real frames and PyD-Net++",
              file=sys.stderr)
        return 2
    kind = args.model_type or ("depth" if args.model.resolve() == PYDNET.resolve() else "auto")
    frames = [f for f in FRAMES if args.frames is None or f.name in args.frames]
    if not frames:
        parser.error(f"no frame named {args.frames}")
    started = time.monotonic()
    settings = Settings(model_type=kind, backend="cpu", num_threads=args.num_threads,
                        output_resolution="input", input_normalization=args.input_normalization,
                        input_mean=args.input_mean, input_std=args.input_std,
                        depth_output=args.depth_output, depth_output_kind=args.depth_output_kind)
    base = load_pipeline(str(args.model), settings)
    # One loaded model, one pipeline per scale source (as tools/bench/frame.py shares a runner).
    pipelines = {source: DensePipeline(base.runner, base.spec,
                                       replace(base.config, depth_scale_source=source))
                 for source in ("none", "ground_plane", "reference_depth")}
    rows = [row for frame in frames for row in evaluate_frame(pipelines, frame)]
    checks = ground_truth_check(frames)
    command = "make eval-real" + ("" if args.model.resolve() == PYDNET.resolve()
                                  else f" MODEL={args.model}")
    text = render(args.model, pipelines["none"].spec.display_name if kind == "auto" else kind,
                  rows, checks, command)
    sequence = REAL_SCENES / "7scenes-redkitchen"
    if args.frames is None and sequence.is_dir() and not base.spec.metric_depth:
        from tools.eval.sequence import sequence_section  # the sequence table
        text = text.rstrip("\n") + "\n\n" + sequence_section(pipelines["none"], sequence)
        from tools.eval.stretches import networks, stretch_section  # every stretch, both nets
        nets = networks(pipelines["none"]) if args.model.resolve() == PYDNET.resolve() else \
            {kind: pipelines["none"]}
        text = text.rstrip("\n") + "\n\n" + stretch_section(nets, args.out.parent)
        from tools.eval.streaks import streak_section  # what the alignment does to the picture
        text = text.rstrip("\n") + "\n\n" + streak_section(nets, args.out.parent)
        from tools.eval.metric_network import metric_section  # FastDepth's own metres
        if FASTDEPTH.is_file():
            text = text.rstrip("\n") + "\n\n" + metric_section(pipelines["none"])
    print(f"eval-real: {len(frames)} frames in {time.monotonic() - started:.1f} s -> {args.out}",
          file=sys.stderr)
    args.out.write_text(text)
    return 0


if __name__ == "__main__":
    sys.exit(main())
