# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Models for the fp16-vs-fp32 agreement test of ``make test-arm64`` (run in ``.venv-bench``).

Real architectures at tiny input sizes: emulated aarch64 XNNPACK (qemu TCG, fp16 in softfloat)
is very slow here: the test on DA3 at 280x168 did not finish in 20 minutes.

* ``da3_export_70x56_fp16.tflite``: DA3-Small from ``export-da3`` (official architecture,
  random weights, seed 0, CPU rewrites, fp16 weights) at 70x56 (5x4 patches), depth only
  (``--no-confidence``): on so small a grid the random-weight confidence channel is nearly
  flat, and its fp16-vs-fp32 corr (0.997 emulated, smooth input) measures that flatness, not
  fp16 arithmetic (at 504x280 both outputs agree to 0.99996 with XNNPACK's AVX512-FP16
  kernels, ``test_export_da3_model.py``);
* ``da3_export_504x280_fp16.tflite``: the same at DA3's own resolution (``export-da3``'s
  default for 16:9), the file a Pi 5 runs; emulated, its fp16 check takes hours, so
  ``make test-arm64`` runs it only with ``ARM64_FULL=1`` (a real aarch64 machine runs it
  always);
* ``tipsv2_class_56_fp16.tflite``: the TIPSv2-B/14-DPT class of
  ``tools/bench/model_graphs.py`` (ViT-B width: dim 768, 12 heads, 1 register, tanh-GELU;
  three DPT heads with readout, bins depth, unit normals, segmentation logits) at 56x56 with 4 of its 12 blocks (every block tapped)
  and the DPT heads narrowed to 64 features (channels 24/48/96/192; at full width the test
  did not finish in 10 minutes), fp16 weights; its bin logits scaled x200 so that the depth
  is not flat.

Random weights: the outputs mean nothing, the arithmetic is what is compared. Files are
rebuilt when this script or the exporter changes (a stamp next to them).

    .venv-bench/bin/python -m tools.arm64.make_fp16_models --out .cache/arm64-models
"""

from __future__ import annotations

import argparse
import hashlib
import sys
from pathlib import Path

DA3_FILE = "da3_export_70x56_fp16.tflite"
DA3_504_FILE = "da3_export_504x280_fp16.tflite"
TIPS_FILE = "tipsv2_class_56_fp16.tflite"


def fingerprint() -> str:
    """Hash of this script, the exporter and the benchmark model builder."""
    repo = Path(__file__).resolve().parents[2]
    digest = hashlib.sha256()
    bench = repo / "tools" / "bench"
    for path in [Path(__file__).resolve(), bench / "model_graphs.py", bench / "model_check.py",
                 *sorted((repo / "dense_perception" / "export").glob("*.py"))]:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def build_tips_small():
    """TIPSv2-class graph at 56x56: 4 ViT-B blocks, the three heads at a quarter width."""
    import torch

    from tools.bench.model_graphs import DPTConfig, ViTConfig, finish, torch_modules
    from tools.bench.models import SEED

    torch.manual_seed(SEED)
    vit = ViTConfig(image_hw=(56, 56), dim=768, heads=12, registers=1, tanh_gelu=True,
                      depth=4, taps=(0, 1, 2, 3))
    dpt = DPTConfig(features=64, out_channels=(24, 48, 96, 192), readout=True)
    model = finish(torch_modules().TIPSv2Class(vit, dpt))
    # Random bin logits are nearly uniform, so the bins depth would be almost constant and any
    # correlation ill-conditioned (fp16 alone cannot resolve a flat output). Sharper logits
    # spread the depth over the bins' range, as a trained head does.
    with torch.no_grad():
        model.depth.conv3.weight.mul_(200.0)
    return model


def main(argv: list[str] | None = None) -> int:
    """Build both files into ``--out`` unless the stamp says they are current."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=".cache/arm64-models")
    args = parser.parse_args(argv)
    out = Path(args.out)
    stamp = out / "stamp"
    want = fingerprint()
    if stamp.exists() and stamp.read_text().strip() == want \
            and all((out / f).exists() for f in (DA3_FILE, DA3_504_FILE, TIPS_FILE)):
        print(f"arm64 fp16 models in {out} are current")
        return 0
    out.mkdir(parents=True, exist_ok=True)
    from dense_perception.export.export_da3 import export_da3
    from tools.bench.model_check import export, sample_input

    export_da3(70, 56, out / DA3_FILE, seed=0, fp16=True, fidelity=False, confidence=False)
    export_da3(504, 280, out / DA3_504_FILE, seed=0, fp16=True, fidelity=False)
    model = build_tips_small()
    export(model, sample_input((1, 3, 56, 56)), out / TIPS_FILE, fp16=True)
    stamp.write_text(want + "\n")
    print(f"wrote {out / DA3_FILE}, {out / DA3_504_FILE} and {out / TIPS_FILE}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
