# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The official DA3-Small (``depth-anything-3``, config ``da3-small``) and its checkpoint:
build the network, draw test weights, load the published ``model.safetensors``."""

from __future__ import annotations

import json
import os
import warnings
from pathlib import Path
from typing import Any

import torch
from torch import nn

from .common import MODEL_NAME, PROG, ExportError


def _quiet_da3_import() -> None:
    """The package logs at INFO and omegaconf warns about a deprecated call at import."""
    os.environ.setdefault("DA3_LOG_LEVEL", "WARN")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import depth_anything_3.cfg  # noqa: F401


def build_official_da3(seed: int = 0) -> nn.Module:
    """The official ``DepthAnything3Net`` built from the package's ``da3-small`` config.

    Parameters are torch's default initialisation under ``seed``; call
    :func:`randomise_constant_init` for test weights, or :func:`load_checkpoint`.
    """
    _quiet_da3_import()
    from depth_anything_3.cfg import create_object, load_config
    from depth_anything_3.registry import MODEL_REGISTRY

    torch.manual_seed(seed)
    net = create_object(load_config(MODEL_REGISTRY[MODEL_NAME]))
    return net.eval()


def randomise_constant_init(net: nn.Module, seed: int = 0) -> None:
    """Random test weights for the parameters the architecture initialises to constants.

    pos_embed and cls_token start at zero and LayerNorm/LayerScale at ones: left so, the
    position-embedding bake and the LayerScale fold would be checked against zeros and ones
    only. Drawing them (fixed seed) makes every rewrite act on non-trivial values.
    """
    gen = torch.Generator().manual_seed(seed + 1)
    with torch.no_grad():
        for name, p in net.named_parameters():
            leaf = name.rsplit(".", 1)[-1]
            if leaf in ("pos_embed", "cls_token", "camera_token"):
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))
            elif leaf == "gamma":  # LayerScale: trained DINOv2 values are ~0.1-1
                p.copy_(torch.empty(p.shape).uniform_(0.1, 1.0, generator=gen))
            elif p.ndim == 1 and "norm" in name and leaf == "weight":
                p.copy_(1.0 + 0.1 * torch.randn(p.shape, generator=gen))
            elif p.ndim == 1 and "norm" in name and leaf == "bias":
                p.copy_(0.1 * torch.randn(p.shape, generator=gen))


def checkpoint_file(path: str | os.PathLike) -> Path:
    """The weights file of ``path``: the file itself, or the Hugging Face folder's
    ``model.safetensors`` (its ``config.json``, when present, must name da3-small)."""
    p = Path(path)
    if p.is_file():
        return p
    if not p.is_dir():
        raise ExportError(f"checkpoint '{path}' does not exist")
    config = p / "config.json"
    if config.is_file():
        try:
            name = json.loads(config.read_text()).get("model_name")
        except (json.JSONDecodeError, AttributeError):
            name = None
        if name and name != MODEL_NAME:
            raise ExportError(f"checkpoint folder '{path}' is '{name}' (config.json); this "
                              f"exporter builds {MODEL_NAME} (depth-anything/DA3-SMALL)")
    for candidate in ("model.safetensors", "pytorch_model.bin", "model.pt", "model.pth"):
        if (p / candidate).is_file():
            return p / candidate
    found = sorted(p.glob("*.safetensors"))
    if len(found) == 1:
        return found[0]
    raise ExportError(f"checkpoint folder '{path}' has no model.safetensors (the Hugging Face "
                      "layout of depth-anything/DA3-SMALL: config.json + model.safetensors)")


def read_state_dict(path: Path) -> dict[str, torch.Tensor]:
    """Tensors of a ``.safetensors`` file, or of a torch checkpoint (weights only)."""
    if path.suffix == ".safetensors":
        from safetensors.torch import load_file

        return load_file(str(path), device="cpu")
    obj = torch.load(str(path), map_location="cpu", weights_only=True)
    for key in ("state_dict", "model"):
        if isinstance(obj, dict) and isinstance(obj.get(key), dict):
            obj = obj[key]
    if not isinstance(obj, dict):
        raise ExportError(f"checkpoint '{path}' holds no state dict")
    return obj


def strip_model_prefix(state_dict: dict[str, Any]) -> dict[str, Any]:
    """Card rewrite 1 (load fix): the published checkpoint is the state of the API wrapper
    ``DepthAnything3`` whose network is its attribute ``model``, so every key starts with
    ``model.``; ``DepthAnything3Net`` wants the keys without it."""
    if any(k.startswith("model.") for k in state_dict):
        return {k[len("model."):] if k.startswith("model.") else k: v
                for k, v in state_dict.items()}
    return dict(state_dict)


def load_checkpoint(net: nn.Module, path: str | os.PathLike) -> str:
    """Load DA3-Small weights into ``net``; returns a one-line description.

    Every backbone and head parameter must be present; the camera encoder/decoder (not in
    the exported graph) may be absent.
    """
    file = checkpoint_file(path)
    state = strip_model_prefix(read_state_dict(file))
    missing, unexpected = net.load_state_dict(state, strict=False)
    needed = [k for k in missing if k.startswith(("backbone.", "head."))]
    if needed:
        raise ExportError(f"checkpoint '{file}' lacks {len(needed)} DA3-Small weights (e.g. "
                          f"{', '.join(needed[:3])}); is it depth-anything/DA3-SMALL?")
    if unexpected:
        print(f"{PROG}: note: {len(unexpected)} checkpoint keys not used by DA3-Small "
              f"(e.g. {unexpected[0]})", flush=True)
    return f"checkpoint {file} ({len(state)} tensors)"

