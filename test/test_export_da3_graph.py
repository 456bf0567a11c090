# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""``export-da3``'s graph and inputs (torch environment; see support/export_env.py): the size
rule is DA3's own resize, a Hugging Face checkpoint loads, the GPU-clean rewrites are exact,
and ``python -m dense_perception.export`` writes a GPU-clean file end to end."""

from __future__ import annotations

import importlib.util
import json
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from support.common import REPO
from support.export_env import needs_torch, output_names_in_order

from dense_perception.export import common as C
from dense_perception.export import fidelity as F
from dense_perception.export import sizes as S


@pytest.mark.export
@needs_torch
@pytest.mark.timeout(60)
@pytest.mark.parametrize("camera", [(1280, 720), (1920, 1080), (640, 480), (752, 480),
                                    (848, 480), (640, 400), (1280, 800), (720, 1280),
                                    (480, 640), (1000, 999), (504, 100)])
def test_size_rule_is_da3s_upper_bound_resize(camera):
    """The official InputProcessor's two size steps of ``upper_bound_resize`` (process_res 504:
    longest side to 504, then each side to the nearest multiple of 14) on a frame of that size
    give the model size export-da3 picks for the camera."""
    import ast

    import cv2
    from PIL import Image

    # The package's module imports torchvision, imageio, ... (not in .venv-bench) for steps the
    # size does not depend on: its two size methods are taken from its source and run as is.
    spec = importlib.util.find_spec("depth_anything_3")
    source = Path(list(spec.submodule_search_locations)[0]) / "utils" / "io" \
        / "input_processor.py"
    tree = ast.parse(source.read_text())
    cls = next(n for n in tree.body if isinstance(n, ast.ClassDef) and n.name == "InputProcessor")
    methods = [n for n in cls.body if isinstance(n, ast.FunctionDef)
               and n.name in ("_resize_longest_side", "_make_divisible_by_resize")]
    official = type("Official", (), {})()
    namespace = {"cv2": cv2, "np": np, "Image": Image}
    for method in methods:  # the official code, unchanged
        exec(compile(ast.Module(body=[method], type_ignores=[]), str(source), "exec"), namespace)
        setattr(official, method.name, namespace[method.name].__get__(official))

    w, h = camera
    image = official._resize_longest_side(Image.new("RGB", (w, h)), 504)
    image = official._make_divisible_by_resize(image, 14)
    assert S.size_for_image(w, h) == image.size


@pytest.mark.export
@needs_torch
def test_checkpoint_in_hugging_face_layout_is_loaded(tmp_path):
    """config.json + model.safetensors with the API wrapper's ``model.`` key prefix."""
    import torch
    from safetensors.torch import save_file

    from dense_perception.export import graph, official

    source = official.build_official_da3(7)
    official.randomise_constant_init(source, 7)
    folder = tmp_path / "DA3-SMALL"
    folder.mkdir()
    (folder / "config.json").write_text(json.dumps({"model_name": "da3-small"}))
    save_file({f"model.{k}": v.clone().contiguous() for k, v in source.state_dict().items()},
              str(folder / "model.safetensors"))

    model, reference, weights = graph.build_export_model(140, 112, checkpoint=str(folder),
                                                         seed=0)
    assert "model.safetensors" in weights
    for name, value in source.state_dict().items():
        assert torch.equal(reference.net.state_dict()[name], value), name
    x = F.fidelity_inputs(140, 112)["noise"]
    ref = F.torch_outputs(graph.OfficialDepth(source).eval(), [x])[0]
    assert np.array_equal(F.torch_outputs(model, [x])[0], ref)

    (folder / "config.json").write_text(json.dumps({"model_name": "da3-large"}))
    with pytest.raises(C.ExportError, match="da3-large"):
        graph.build_export_model(140, 112, checkpoint=str(folder))


@pytest.mark.export
@needs_torch
def test_gpu_clean_rewrites_are_exact_except_align_corners():
    """Fused-QKV split, LayerScale fold and ConvTranspose-as-conv change nothing; only
    align_corners=False moves the output (see docs/landscape.md)."""
    import torch

    from dense_perception.export import graph, rewrites

    width, height = 280, 168
    cpu, official, _ = graph.build_export_model(width, height, seed=0)
    gpu, _, _ = graph.build_export_model(width, height, seed=0, gpu_clean=True)
    x = F.fidelity_inputs(width, height)["scene"]
    # gpu graph with the resizes switched back to align_corners=True = the exact rewrites only
    gpu.head.align_corners = True
    for module in gpu.head.scratch.modules():
        if hasattr(module, "align_corners"):
            module.align_corners = True
    ref = F.torch_outputs(official, [x])[0]
    assert np.abs(F.torch_outputs(gpu, [x])[0] - ref).max() < 1e-5
    assert np.array_equal(F.torch_outputs(cpu, [x])[0], ref)
    conv_t = official.net.head.resize_layers[0]
    zero_stuff = rewrites.ZeroStuffConvTranspose(conv_t, (12, 20))
    y = torch.randn(1, conv_t.in_channels, 12, 20)
    with torch.no_grad():
        assert torch.allclose(zero_stuff(y), conv_t(y), atol=1e-5)


@pytest.mark.export
@needs_torch
def test_command_line_gpu_clean_small(tmp_path):
    """``python -m dense_perception.export`` end to end: a GPU-clean graph (4D only, no
    TRANSPOSE_CONV / GATHER / BROADCAST_TO) that LiteRT runs like the rewritten PyTorch."""
    out = tmp_path / "gpu.tflite"
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(
        p for p in (str(REPO), os.environ.get("PYTHONPATH")) if p))
    proc = subprocess.run(
        [sys.executable, "-m", "dense_perception.export", "--random-weights",
         "--size", "280x168", "--gpu-clean", "--fp16", "--no-confidence", "--out", str(out)],
        capture_output=True, text=True, env=env, timeout=900)
    assert proc.returncode == 0, proc.stderr[-3000:]
    assert "LiteRT fp32 vs rewritten (conversion)" in proc.stdout
    report = json.loads(Path(str(out) + ".report.json").read_text())
    assert report["outputs"] == {"depth": [1, 1, 168, 280]}  # --no-confidence: the card's
    assert output_names_in_order(out) == ["depth"]
    ops = report["ops"]
    assert ops["max_tensor_rank"] <= 4
    assert all(v == 0 for v in ops["gpu_unfriendly"].values()), ops["gpu_unfriendly"]
    assert report["fidelity"]["litert_fp32_vs_rewritten"]["corr_min"] >= 0.999
    assert report["fidelity"]["fp32_vs_fp16"]["corr_min"] >= 0.999

