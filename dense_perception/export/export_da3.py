"""``dense-perception export-da3``: DA3-Small as a LiteRT file at the camera's own aspect.

    dense-perception export-da3 (--checkpoint PATH_OR_DIR | --random-weights [--seed N])
        (--size WxH | --camera-info-yaml FILE | --aspect 16:9) [--long-side 896]
        [--gpu-clean] [--fp16] [--out da3_small_WxH.tflite]

Builds Depth Anything 3 Small with the official architecture (the ``depth-anything-3``
package, config ``da3-small``), loads the published checkpoint (a ``model.safetensors`` file
or the Hugging Face folder that holds it with ``config.json``), wraps it so that the graph
takes ``[1,3,H,W]`` NCHW ImageNet-normalised RGB and returns depth ``[1,1,H,W]`` (the signature
the node reads), applies the export rewrites of the model card and converts it with
``litert-torch``. A fidelity report (LiteRT vs the official PyTorch model on the same inputs, at
fp32 and fp16 weights; op histogram; file size) is printed and written to
``<out>.report.json``.

Why re-export: DA3 runs at the image's native aspect (longer side 896, both sides multiples of
14). The published file is portrait 504x896; letterboxing another aspect into it costs fidelity
(corr 0.9994 -> 0.977 on the card) and cropping a 16:9 view to 9:16 throws two thirds of it away.

torch, litert-torch and depth-anything-3 live in ``.venv-bench`` (``requirements-torch.txt``
and ``requirements-torch-nodeps.txt``). This module imports them only inside functions; when
they are missing, :func:`run_export_da3` creates that venv and runs itself there.
"""

from __future__ import annotations

import argparse
import copy
import functools
import hashlib
import json
import math
import os
import re
import subprocess
import sys
import tempfile
import time
import warnings
from dataclasses import dataclass
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Sequence

if TYPE_CHECKING:  # pragma: no cover - type hints only
    import numpy as np
    import torch
    from torch import nn

PROG = "dense-perception export-da3"
PATCH = 14
DEFAULT_LONG_SIDE = 896
MODEL_NAME = "da3-small"
IMAGENET_MEAN = (0.485, 0.456, 0.406)
IMAGENET_STD = (0.229, 0.224, 0.225)
EXIT_OK, EXIT_ERROR = 0, 2

REPO = Path(__file__).resolve().parents[2]
VENV = REPO / ".venv-bench"
REQUIREMENTS = REPO / "requirements-torch.txt"
REQUIREMENTS_NODEPS = REPO / "requirements-torch-nodeps.txt"
ENV_MARKER = VENV / ".export-da3-ready"
TORCH_MODULES = ("torch", "litert_torch", "depth_anything_3", "ai_edge_litert", "safetensors")

# Op kinds the model card's GPU-clean build must not contain (see docs/landscape.md).
GPU_UNFRIENDLY_OPS = ("GATHER", "GATHER_ND", "TRANSPOSE_CONV", "BROADCAST_TO", "SELECT_V2")


class ExportError(RuntimeError):
    """A user-facing error: printed as one line, exit status 2."""


# =============================================================================================
# Size rule (no torch needed)
# =============================================================================================


def parse_size(text: str) -> tuple[int, int]:
    """``'896x504'`` -> (896, 504) = (width, height); both must be multiples of 14."""
    m = re.fullmatch(r"\s*(\d+)\s*[xX*]\s*(\d+)\s*", text)
    if not m:
        raise argparse.ArgumentTypeError(f"size '{text}' is not WxH, e.g. 896x504")
    w, h = int(m.group(1)), int(m.group(2))
    bad = [f"{name} {v}" for name, v in (("width", w), ("height", h)) if v < PATCH or v % PATCH]
    if bad:
        raise argparse.ArgumentTypeError(
            f"size {w}x{h}: {', '.join(bad)} not a positive multiple of {PATCH} (the ViT patch); "
            f"use e.g. {_round14(w)}x{_round14(h)}, or --aspect W:H to let the size rule pick")
    return w, h


def parse_aspect(text: str) -> float:
    """``'16:9'``, ``'16/9'`` or ``'1.777'`` -> width / height."""
    m = re.fullmatch(r"\s*(\d+(?:\.\d+)?)\s*[:/]\s*(\d+(?:\.\d+)?)\s*", text)
    try:
        value = float(m.group(1)) / float(m.group(2)) if m else float(text)
    except (ValueError, ZeroDivisionError):
        value = float("nan")
    if not (math.isfinite(value) and value > 0):
        raise argparse.ArgumentTypeError(f"aspect '{text}' is not W:H (e.g. 16:9) or a ratio > 0")
    return value


def read_camera_info_size(path: str | os.PathLike) -> tuple[int, int]:
    """(image_width, image_height) of a ROS camera_info YAML (camera_calibration_parsers)."""
    import yaml

    try:
        data = yaml.safe_load(Path(path).read_text())
    except OSError as exc:
        raise ExportError(f"camera info '{path}' cannot be read ({exc.strerror})") from None
    except yaml.YAMLError as exc:
        raise ExportError(f"camera info '{path}' is not YAML ({exc})") from None
    try:
        w, h = int(data["image_width"]), int(data["image_height"])
    except (TypeError, KeyError, ValueError):
        raise ExportError(f"camera info '{path}' has no integer image_width/image_height "
                          "(expected a ROS camera_info YAML)") from None
    if w < 1 or h < 1:
        raise ExportError(f"camera info '{path}' says {w}x{h}")
    return w, h


def _round14(v: float) -> int:
    return max(PATCH, int(round(v / PATCH)) * PATCH)


def size_for_aspect(aspect: float, long_side: int = DEFAULT_LONG_SIDE) -> tuple[int, int]:
    """(width, height) for a camera of ``aspect`` (= width / height): the longer side is
    ``long_side``, the other the multiple of 14 whose aspect is closest to the camera's."""
    if long_side < PATCH or long_side % PATCH:
        raise ExportError(f"--long-side {long_side} is not a positive multiple of {PATCH}; "
                          f"use e.g. {_round14(long_side)}")
    short_exact = long_side / aspect if aspect >= 1 else long_side * aspect
    lo = max(PATCH, int(short_exact // PATCH) * PATCH)
    candidates = {lo, min(long_side, lo + PATCH)}

    def error(short: int) -> float:
        w, h = (long_side, short) if aspect >= 1 else (short, long_side)
        return abs(math.log((w / h) / aspect))

    short = min(sorted(candidates), key=error)
    return (long_side, short) if aspect >= 1 else (short, long_side)


def resolve_size(args: argparse.Namespace) -> tuple[int, int]:
    """The model's (width, height) from ``--size`` | ``--camera-info-yaml`` | ``--aspect``."""
    if args.size:
        return args.size
    if args.camera_info_yaml:
        w, h = read_camera_info_size(args.camera_info_yaml)
        return size_for_aspect(w / h, args.long_side)
    return size_for_aspect(args.aspect, args.long_side)


def default_out(width: int, height: int, gpu_clean: bool, fp16: bool) -> str:
    """``da3_small_896x504[_gpu][_fp16].tflite``."""
    suffix = ("_gpu" if gpu_clean else "") + ("_fp16" if fp16 else "")
    return f"da3_small_{width}x{height}{suffix}.tflite"


# =============================================================================================
# The torch environment (.venv-bench): create it, run there
# =============================================================================================


def torch_env_problem() -> str | None:
    """Why this interpreter cannot export (a missing module), or None."""
    import importlib.util

    missing = [m for m in TORCH_MODULES if importlib.util.find_spec(m) is None]
    return f"{', '.join(missing)} not importable in {sys.executable}" if missing else None


def _requirements_digest() -> str:
    h = hashlib.sha256()
    for path in (REQUIREMENTS, REQUIREMENTS_NODEPS):
        h.update(path.read_bytes())
    return h.hexdigest()


def _run(cmd: Sequence[str]) -> None:
    print("+ " + " ".join(str(c) for c in cmd), flush=True)
    if subprocess.call([str(c) for c in cmd]) != 0:
        raise ExportError(f"command failed: {' '.join(str(c) for c in cmd)}")


def ensure_torch_env() -> Path:
    """Create/update ``.venv-bench`` from the requirements files; returns its python.

    ``depth-anything-3`` is installed with ``--no-deps``: its declared dependencies pull
    xformers, open3d and numpy<2, none of which the model code imports.
    """
    if not (REQUIREMENTS.is_file() and REQUIREMENTS_NODEPS.is_file()):
        raise ExportError(f"{REQUIREMENTS.name} not found next to the package ({REPO}); run the "
                          "exporter from a clone of the repository")
    python = VENV / "bin" / "python"
    digest = _requirements_digest()
    if python.exists() and ENV_MARKER.exists() and ENV_MARKER.read_text().strip() == digest:
        return python
    print(f"{PROG}: setting up the torch environment in {VENV} (torch, litert-torch, "
          "depth-anything-3; a few minutes, once)", flush=True)
    if not python.exists():
        _run([sys.executable, "-m", "venv", VENV])
    _run([python, "-m", "pip", "install", "-q", "-r", REQUIREMENTS])
    _run([python, "-m", "pip", "install", "-q", "--no-deps", "-r", REQUIREMENTS_NODEPS])
    ENV_MARKER.write_text(digest + "\n")
    return python


def run_in_torch_env(argv: Sequence[str]) -> int:
    """Run ``python -m dense_perception.export.export_da3 ARGV`` under ``.venv-bench``."""
    python = ensure_torch_env()
    # (a venv's python is a symlink to the base interpreter: compare prefixes, not executables)
    if Path(sys.prefix).resolve() == VENV.resolve() or os.environ.get("_DA3_EXPORT_REEXEC"):
        raise ExportError(f"{torch_env_problem()} even after installing {REQUIREMENTS.name}")
    env = dict(os.environ, _DA3_EXPORT_REEXEC="1")
    env["PYTHONPATH"] = os.pathsep.join(p for p in (str(REPO), env.get("PYTHONPATH")) if p)
    cmd = [str(python), "-m", "dense_perception.export.export_da3", *argv]
    print(f"{PROG}: torch is not in this interpreter; running in {VENV.name}: "
          + " ".join(cmd[1:]), flush=True)
    return subprocess.call(cmd, env=env)


# =============================================================================================
# The official DA3-Small and its checkpoint
# =============================================================================================


def _quiet_da3_import() -> None:
    """The package logs at INFO and omegaconf warns about a deprecated call at import."""
    os.environ.setdefault("DA3_LOG_LEVEL", "WARN")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        import depth_anything_3.cfg  # noqa: F401


def build_official_da3(seed: int = 0) -> "nn.Module":
    """The official ``DepthAnything3Net`` built from the package's ``da3-small`` config.

    Parameters are torch's default initialisation under ``seed``; call
    :func:`randomise_constant_init` for test weights, or :func:`load_checkpoint`.
    """
    import torch

    _quiet_da3_import()
    from depth_anything_3.cfg import create_object, load_config
    from depth_anything_3.registry import MODEL_REGISTRY

    torch.manual_seed(seed)
    net = create_object(load_config(MODEL_REGISTRY[MODEL_NAME]))
    return net.eval()


def randomise_constant_init(net: "nn.Module", seed: int = 0) -> None:
    """Random test weights for the parameters the architecture initialises to constants.

    pos_embed and cls_token start at zero and LayerNorm/LayerScale at ones: left so, the
    position-embedding bake and the LayerScale fold would be checked against zeros and ones
    only. Drawing them (fixed seed) makes every rewrite act on non-trivial values.
    """
    import torch

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


def read_state_dict(path: Path) -> dict[str, "torch.Tensor"]:
    """Tensors of a ``.safetensors`` file, or of a torch checkpoint (weights only)."""
    import torch

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


def load_checkpoint(net: "nn.Module", path: str | os.PathLike) -> str:
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


# =============================================================================================
# Export rewrites (each one a function; see the model card's list)
# =============================================================================================


def bake_pos_embed(vit: "nn.Module", height: int, width: int) -> "torch.Tensor":
    """Card rewrite 5: the ViT position embedding interpolated once, for this size.

    DINOv2 bicubically resizes its 37x37 table to the patch grid at every call. On a constant
    that is wasted work, and the converter turns it into GATHER_ND on desktop and a
    RESIZE_BILINEAR with no runtime input on device. The official function is called here, so
    the baked table is exactly what the model computes. Returns [1, 1 + N, C]."""
    import torch

    n = (height // PATCH) * (width // PATCH)
    tokens = torch.zeros(1, 1 + n, vit.embed_dim)
    with torch.no_grad():
        # Official argument order: prepare_tokens_with_masks unpacks (B, S, C, H, W) into
        # names (w, h), i.e. it passes the height first.
        return vit.interpolate_pos_encoding(tokens, height, width).detach().clone()


def rope_tables(vit: "nn.Module", height: int, width: int
                ) -> dict[str, tuple["torch.Tensor", "torch.Tensor"]]:
    """Card rewrite 2: RoPE with its maximum position as a constant, as constant tables.

    ``RotaryPositionEmbedding2D`` sizes its frequency table with
    ``int(positions.max()) + 1`` - a data-dependent Python int that torch.export cannot trace -
    and then gathers rows per token (F.embedding -> GATHER). The positions are fixed by the
    grid, so the maximum is computed here and the gathered cos/sin rows become constants.

    Returns {"local": (cos, sin), "global": (cos, sin)}, each [1, 1, 1 + N, head_dim]: the
    y-half and x-half tables side by side, the sin sign of :func:`rotate_halves` folded in.
    Local blocks see the patch grid positions; global blocks of a single view see
    ``pos_nodiff`` (every patch at the same position), exactly as the official code.
    """
    import torch

    rope = vit.rope
    head_dim = vit.embed_dim // vit.num_heads
    half = head_dim // 2  # features per spatial axis
    pos, pos_nodiff = vit._prepare_rope(1, 1, height, width, torch.device("cpu"))
    out = {}
    for kind, positions in (("local", pos), ("global", pos_nodiff)):
        positions = positions.reshape(-1, 2).long()
        max_position = int(positions.max()) + 1  # the constant (card rewrite 2)
        cos, sin = rope._compute_frequency_components(half, max_position, torch.device("cpu"),
                                                      torch.float32)
        cos_yx = torch.cat([cos[positions[:, 0]], cos[positions[:, 1]]], dim=-1)
        sin_yx = torch.cat([sin[positions[:, 0]], sin[positions[:, 1]]], dim=-1)
        # rotate_halves() returns (x2, x1) per axis half instead of (-x2, x1): the minus moves
        # into the first quarter of each half of the sin table.
        sign = torch.ones(head_dim)
        sign[: half // 2] = -1
        sign[half: half + half // 2] = -1
        out[kind] = (cos_yx[None, None].contiguous(), (sin_yx * sign)[None, None].contiguous())
    return out


def rotate_halves(x: "torch.Tensor") -> "torch.Tensor":
    """RoPE's rotate-half on the y and x halves of the head dim, without the sign (see
    :func:`rope_tables`): [a1 a2 | b1 b2] -> [a2 a1 | b2 b1]."""
    import torch

    q = x.shape[-1] // 4
    return torch.cat([x[..., q:2 * q], x[..., :q], x[..., 3 * q:], x[..., 2 * q:3 * q]], dim=-1)


def insert_camera_token(x: "torch.Tensor", token: "torch.Tensor") -> "torch.Tensor":
    """Card rewrite 9: ``x[:, :, 0] = cam_token`` as a concatenation.

    The official in-place index assignment becomes SELECT_V2/SCATTER-like ops (and mutates a
    tensor that torch.export must then functionalise); replacing token 0 is a cat."""
    import torch

    return torch.cat([token.expand(x.shape[0], 1, x.shape[-1]), x[:, 1:]], dim=1)


def bake_uv_pos_embed(head: "nn.Module", channels: int, grid_h: int, grid_w: int,
                      height: int, width: int) -> tuple["torch.Tensor", "torch.Tensor"]:
    """The DPT head's UV sin-cos embedding as two small constants (exact).

    ``DualDPT._add_pos_embed`` rebuilds a [C, h, w] sin/cos grid at every call (linspace,
    meshgrid, einsum, sin, cos, expand -> BROADCAST_TO). Baked whole, the last one is a
    [1, 32, H, W] constant (58 MB at 896x504). But its first C/2 channels depend only on the
    column and the last C/2 only on the row, so it is kept as cols [1, C/2, 1, w] and rows
    [1, C/2, h, 1], added by :func:`add_uv_pos_embed`. (The card disables the last of these
    embeddings instead - not exact; this keeps it.)"""
    import torch

    with torch.no_grad():
        pe = head._add_pos_embed(torch.zeros(1, channels, grid_h, grid_w), width, height)
    c2 = channels // 2
    cols = pe[:, :c2, :1, :].clone()
    rows = pe[:, c2:, :, :1].clone()
    if not torch.equal(torch.cat([cols.expand(-1, -1, grid_h, -1),
                                  rows.expand(-1, -1, -1, grid_w)], dim=1), pe):
        raise AssertionError("DPT UV embedding is not separable; the package changed")
    return cols, rows


def add_uv_pos_embed(x: "torch.Tensor", cols: "torch.Tensor", rows: "torch.Tensor"
                     ) -> "torch.Tensor":
    """``x + pe`` from the separable parts of :func:`bake_uv_pos_embed`: a broadcast ADD on
    each channel half. (``x + cols_padded + rows_padded`` would be simpler, but the converter
    folds the two constants back into the full-size one.)"""
    import torch

    c2 = cols.shape[1]
    return torch.cat([x[:, :c2] + cols, x[:, c2:] + rows], dim=1)


def split_fused_qkv(attn: "nn.Module") -> tuple["nn.Module", "nn.Module", "nn.Module"]:
    """Card rewrite 3 (GPU-clean): the fused QKV Linear as three Linears.

    The official attention reshapes qkv to 5D [B, N, 3, heads, d] and permutes it; the mobile
    GPU delegate rejects >4D RESHAPE/TRANSPOSE. Three Linears give 4D q, k, v (exact)."""
    from torch import nn

    dim = attn.qkv.in_features
    parts = []
    for i in range(3):
        lin = nn.Linear(dim, dim, bias=attn.qkv.bias is not None)
        lin.weight.data.copy_(attn.qkv.weight.data[i * dim:(i + 1) * dim])
        if attn.qkv.bias is not None:
            lin.bias.data.copy_(attn.qkv.bias.data[i * dim:(i + 1) * dim])
        parts.append(lin)
    return parts[0], parts[1], parts[2]


def fold_layerscale(linear: "nn.Module", layer_scale: "nn.Module") -> None:
    """Card rewrite 4 (GPU-clean): LayerScale ``gamma`` folded into the preceding Linear.

    ``y * gamma`` after ``attn.proj`` / ``mlp.fc2`` is a broadcast MUL on which the GPU
    delegate mis-lays-out the token dim (fully_connected {1,1,N,C} vs {N,1,1,C}). Scaling the
    Linear's output rows by gamma is the same function (exact up to rounding)."""
    import torch

    gamma = layer_scale.gamma.detach()
    with torch.no_grad():
        linear.weight.mul_(gamma[:, None])
        if linear.bias is not None:
            linear.bias.mul_(gamma)


def set_align_corners_false(head: "nn.Module") -> None:
    """Card rewrite 7 (GPU-clean, NOT exact): bilinear resizes with ``align_corners=False``.

    The mobile GPU bans RESIZE_BILINEAR with align_corners=True. This is the only non-exact
    rewrite: it shifts the DPT upsampling by a fraction of a pixel (the card's residual ~0.05 %,
    corr 0.99948)."""
    for module in head.modules():
        if hasattr(module, "align_corners"):
            module.align_corners = False


@functools.cache
def _torch_modules() -> SimpleNamespace:
    """nn.Module classes of the export graph (defined lazily: importing needs no torch)."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    class ZeroStuffConvTranspose(nn.Module):
        """Card rewrite 6 (GPU-clean): ``ConvTranspose2d(k=s, stride=s)`` as zero-stuffing +
        ``Conv2d``. The Pixel-8a GPU rejects TRANSPOSE_CONV and conv + depth-to-space needs
        >4D. Nearest-upsample x top-left mask puts each input pixel at the corner of its s x s
        cell; a stride-1 conv with the flipped kernel, padded s-1 top/left, spreads it over the
        cell: exactly the transposed conv (~1e-7)."""

        def __init__(self, conv_t: nn.ConvTranspose2d, in_hw: tuple[int, int]):
            super().__init__()
            s = conv_t.stride[0]
            if (tuple(conv_t.kernel_size) != (s, s) or tuple(conv_t.stride) != (s, s)
                    or tuple(conv_t.padding) != (0, 0) or conv_t.groups != 1
                    or tuple(conv_t.output_padding) != (0, 0)):
                raise ValueError(f"cannot rewrite {conv_t}: needs kernel == stride, no padding")
            self.s = s
            self.conv = nn.Conv2d(conv_t.in_channels, conv_t.out_channels, s, bias=True)
            with torch.no_grad():
                self.conv.weight.copy_(conv_t.weight.transpose(0, 1).flip(2, 3))
                self.conv.bias.copy_(conv_t.bias)
            mask = torch.zeros(1, 1, s * in_hw[0], s * in_hw[1])
            mask[..., ::s, ::s] = 1.0
            self.register_buffer("mask", mask)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            z = F.interpolate(x, scale_factor=self.s, mode="nearest") * self.mask
            return self.conv(F.pad(z, (self.s - 1, 0, self.s - 1, 0)))

    class Attention(nn.Module):
        """DINOv2 attention (+ qk-norm, + 2D RoPE from constant tables)."""

        def __init__(self, attn: nn.Module, rope: tuple[torch.Tensor, torch.Tensor] | None,
                     gpu_clean: bool):
            super().__init__()
            self.heads = attn.num_heads
            self.split = gpu_clean
            if gpu_clean:
                self.q, self.k, self.v = split_fused_qkv(attn)
            else:
                self.qkv = attn.qkv
            self.q_norm, self.k_norm, self.proj = attn.q_norm, attn.k_norm, attn.proj
            self.has_rope = rope is not None
            if rope is not None:
                self.register_buffer("rope_cos", rope[0])
                self.register_buffer("rope_sin", rope[1])

        def _heads(self, t: torch.Tensor) -> torch.Tensor:
            b, n, c = t.shape
            return t.reshape(b, n, self.heads, c // self.heads).permute(0, 2, 1, 3)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, n, c = x.shape
            if self.split:
                q, k, v = self._heads(self.q(x)), self._heads(self.k(x)), self._heads(self.v(x))
            else:  # the official 5D layout
                qkv = self.qkv(x).reshape(b, n, 3, self.heads, c // self.heads)
                qkv = qkv.permute(2, 0, 3, 1, 4)
                q, k, v = qkv[0], qkv[1], qkv[2]
            q, k = self.q_norm(q), self.k_norm(k)
            if self.has_rope:
                q = q * self.rope_cos + rotate_halves(q) * self.rope_sin
                k = k * self.rope_cos + rotate_halves(k) * self.rope_sin
            x = F.scaled_dot_product_attention(q, k, v)
            return self.proj(x.transpose(1, 2).reshape(b, n, c))

    class Block(nn.Module):
        """Pre-norm transformer block; LayerScale kept as a MUL or folded (GPU-clean)."""

        def __init__(self, block: nn.Module, rope: tuple[torch.Tensor, torch.Tensor] | None,
                     gpu_clean: bool, is_global: bool):
            super().__init__()
            self.is_global = is_global
            self.norm1, self.norm2, self.mlp = block.norm1, block.norm2, block.mlp
            self.attn = Attention(block.attn, rope, gpu_clean)
            self.ls1, self.ls2 = block.ls1, block.ls2
            if gpu_clean and isinstance(block.ls1, nn.Module) and hasattr(block.ls1, "gamma"):
                fold_layerscale(self.attn.proj, block.ls1)
                fold_layerscale(self.mlp.fc2, block.ls2)
                self.ls1, self.ls2 = nn.Identity(), nn.Identity()

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = x + self.ls1(self.attn(self.norm1(x)))
            return x + self.ls2(self.mlp(self.norm2(x)))

    class DepthHead(nn.Module):
        """DualDPT's main (depth) branch only: the ray/aux branch and the confidence channel
        are not part of the output, so they are not in the graph."""

        def __init__(self, head: nn.Module, height: int, width: int, gpu_clean: bool):
            super().__init__()
            self.h, self.w = height, width
            self.ph, self.pw = height // head.patch_size, width // head.patch_size
            self.norm, self.projects, self.scratch = head.norm, head.projects, head.scratch
            self.use_pos_embed = head.pos_embed
            self.align_corners = not gpu_clean
            if gpu_clean:
                set_align_corners_false(head)
            resize = []
            for layer in head.resize_layers:
                if gpu_clean and isinstance(layer, nn.ConvTranspose2d):
                    layer = ZeroStuffConvTranspose(layer, (self.ph, self.pw))
                resize.append(layer)
            self.resize_layers = nn.ModuleList(resize)
            if self.use_pos_embed:
                for i, proj in enumerate(head.projects):
                    cols, rows = bake_uv_pos_embed(head, proj.out_channels, self.ph, self.pw,
                                                   height, width)
                    self.register_buffer(f"pe_cols{i}", cols)
                    self.register_buffer(f"pe_rows{i}", rows)
                final_c = head.scratch.output_conv1.out_channels
                cols, rows = bake_uv_pos_embed(head, final_c, height, width, height, width)
                self.register_buffer("pe_cols_out", cols)
                self.register_buffer("pe_rows_out", rows)

        def forward(self, feats: list[torch.Tensor]) -> torch.Tensor:
            s = self.scratch
            levels = []
            for i, f in enumerate(feats):
                x = self.norm(f)
                x = x.permute(0, 2, 1).reshape(x.shape[0], x.shape[-1], self.ph, self.pw)
                x = self.projects[i](x)
                if self.use_pos_embed:
                    x = add_uv_pos_embed(x, getattr(self, f"pe_cols{i}"),
                                         getattr(self, f"pe_rows{i}"))
                levels.append(self.resize_layers[i](x))
            l1, l2, l3, l4 = (s.layer1_rn(levels[0]), s.layer2_rn(levels[1]),
                              s.layer3_rn(levels[2]), s.layer4_rn(levels[3]))
            out = s.refinenet4(l4, size=l3.shape[2:])
            out = s.refinenet3(out, l3, size=l2.shape[2:])
            out = s.refinenet2(out, l2, size=l1.shape[2:])
            out = s.refinenet1(out, l1)
            out = s.output_conv1(out)
            out = F.interpolate(out, (self.h, self.w), mode="bilinear",
                                align_corners=self.align_corners)
            if self.use_pos_embed:
                out = add_uv_pos_embed(out, self.pe_cols_out, self.pe_rows_out)
            logits = s.output_conv2(out)
            return torch.exp(logits[:, :1])  # DualDPT "exp" activation of the depth channel

    class DA3DepthExport(nn.Module):
        """DA3-Small as exported: [1,3,H,W] ImageNet-normalised RGB -> depth [1,1,H,W].

        One view (B = S = 1), no camera conditioning: the official forward with the
        multi-view machinery and the unused heads dropped, and the card's rewrites applied."""

        def __init__(self, net: nn.Module, height: int, width: int, gpu_clean: bool):
            super().__init__()
            vit = net.backbone.pretrained
            if (height % PATCH) or (width % PATCH):
                raise ValueError(f"{width}x{height} is not a multiple of {PATCH}")
            self.height, self.width = height, width
            self.patch_embed, self.norm = vit.patch_embed, vit.norm
            self.cls_token = vit.cls_token
            self.register_buffer("pos_embed", bake_pos_embed(vit, height, width))
            self.alt_start = vit.alt_start
            self.out_layers = tuple(net.backbone.out_layers)
            self.cat_token = vit.cat_token
            if vit.alt_start != -1:
                self.register_buffer("camera_token", vit.camera_token[:, :1].detach().clone())
            tables = rope_tables(vit, height, width) if vit.rope is not None else None
            blocks = []
            for i, blk in enumerate(vit.blocks):
                is_global = vit.alt_start != -1 and i >= vit.alt_start and i % 2 == 1
                use_rope = tables is not None and i >= vit.rope_start
                rope = tables["global" if is_global else "local"] if use_rope else None
                blocks.append(Block(blk, rope, gpu_clean, is_global))
            self.blocks = nn.ModuleList(blocks)
            self.head = DepthHead(net.head, height, width, gpu_clean)

        def forward(self, image: torch.Tensor) -> torch.Tensor:
            x = self.patch_embed(image)
            x = torch.cat([self.cls_token.expand(x.shape[0], -1, -1), x], dim=1)
            x = x + self.pos_embed
            local_x = x
            feats = []
            for i, blk in enumerate(self.blocks):
                if i == self.alt_start:
                    x = insert_camera_token(x, self.camera_token)
                x = blk(x)
                if not blk.is_global:
                    local_x = x
                if i in self.out_layers:
                    out = torch.cat([local_x, self.norm(x)], dim=-1) if self.cat_token \
                        else self.norm(x)
                    feats.append(out[:, 1:])
            return self.head(feats)

    class OfficialDepth(nn.Module):
        """The reference: the official ``DepthAnything3Net.forward`` on one view, depth only."""

        def __init__(self, net: nn.Module):
            super().__init__()
            self.net = net

        def forward(self, image: torch.Tensor) -> torch.Tensor:
            out = self.net(image[:, None])
            return out["depth"].reshape(image.shape[0], 1, *image.shape[-2:])

    return SimpleNamespace(DA3DepthExport=DA3DepthExport, OfficialDepth=OfficialDepth,
                           ZeroStuffConvTranspose=ZeroStuffConvTranspose)


CPU_REWRITES = (
    "checkpoint 'model.' key-prefix strip (when loading a checkpoint)",
    "RoPE max position as a constant; cos/sin rows baked per token (no GATHER)",
    "ViT pos_embed bicubic interpolation baked for this size",
    "camera-token insertion x[:, :, 0] = token as torch.cat",
    "DPT UV pos-embed baked as separable constants (exact; card disables the last one)",
    "depth branch only (ray/aux branch, confidence and camera decoder not exported)",
)
GPU_REWRITES = (
    "fused QKV -> 3 Linears, 4D attention (no 5D RESHAPE/TRANSPOSE)",
    "LayerScale gamma folded into attn.proj / mlp.fc2",
    "ConvTranspose2d(k=s, stride=s) -> zero-stuff + Conv2d",
    "DPT bilinear resizes align_corners=True -> False (not exact)",
)


def build_export_model(width: int, height: int, *, checkpoint: str | None = None,
                       seed: int = 0, gpu_clean: bool = False
                       ) -> tuple["nn.Module", "nn.Module", str]:
    """(export module, official reference module, weights description) for DA3-Small.

    The export module is built from a deep copy, so folding weights never touches the
    reference. Without ``checkpoint`` the weights are random (``seed``)."""
    import torch

    net = build_official_da3(seed)
    if checkpoint:
        weights = load_checkpoint(net, checkpoint)
    else:
        randomise_constant_init(net, seed)
        weights = f"random (seed {seed})"
    for p in net.parameters():
        p.requires_grad_(False)
    parts = _torch_modules()
    with torch.no_grad():
        model = parts.DA3DepthExport(copy.deepcopy(net), height, width, gpu_clean).eval()
    return model, parts.OfficialDepth(net).eval(), weights


# =============================================================================================
# Conversion
# =============================================================================================


def convert(model: "nn.Module", sample: "torch.Tensor") -> bytes:
    """litert-torch conversion with fp32 weights and float32 I/O; the flatbuffer bytes."""
    import litert_torch

    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        edge = litert_torch.convert(model.eval(), (sample,))
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "model.tflite"
        edge.export(str(path))
        return path.read_bytes()


def to_fp16_weights(model_bytes: bytes) -> bytes:
    """fp16 weights (float32 I/O and compute): the ai-edge-quantizer FLOAT_CAST recipe that
    litert-torch applies for ``full_fp16_recipe``, run on the already converted graph."""
    from litert_torch.generative.quantize import quant_recipes
    from litert_torch.quantize import translate_recipe

    recipe = translate_recipe.translate_to_ai_edge_recipe(
        quant_recipes.full_fp16_recipe().generative_recipe)
    return bytes(translate_recipe.quantize_model(model_bytes, recipe))


def write_atomic(path: Path, data: bytes) -> None:
    """Write under a temporary name, then rename: no truncated model on interruption."""
    path.parent.mkdir(parents=True, exist_ok=True)
    tmp = path.with_name(path.name + ".part")
    tmp.write_bytes(data)
    os.replace(tmp, path)


# =============================================================================================
# Fidelity and graph report
# =============================================================================================


def fidelity_inputs(width: int, height: int, seed: int = 0) -> dict[str, "np.ndarray"]:
    """A few [1,3,H,W] ImageNet-normalised inputs: noise, a synthetic scene, a checkerboard."""
    import numpy as np

    rng = np.random.default_rng(seed)
    yy, xx = np.mgrid[0:height, 0:width].astype(np.float32)
    # scene: sky gradient over a floor gradient, a few boxes and a disc
    scene = np.empty((height, width, 3), np.float32)
    horizon = int(height * 0.45)
    scene[:horizon] = np.array([120, 170, 230]) * (0.6 + 0.4 * yy[:horizon, :, None] / horizon)
    scene[horizon:] = np.array([110, 90, 70]) * (0.5 + yy[horizon:, :, None] / height)
    for _ in range(5):
        x0, y0 = rng.integers(0, width * 3 // 4), rng.integers(height // 4, height * 3 // 4)
        w, h = rng.integers(width // 12, width // 4), rng.integers(height // 8, height // 3)
        scene[y0:y0 + h, x0:x0 + w] = rng.integers(0, 256, 3)
    disc = (xx - width * 0.7) ** 2 + (yy - height * 0.35) ** 2 < (min(width, height) * 0.12) ** 2
    scene[disc] = (240, 200, 60)
    checker = (((xx // 28) + (yy // 28)) % 2)[..., None] * np.array([200, 200, 200]) + 30
    noise = rng.normal(0, 1, (1, 3, height, width)).astype(np.float32)
    return {"noise": noise, "scene": normalise_rgb(scene), "checker": normalise_rgb(checker)}


def normalise_rgb(rgb: "np.ndarray") -> "np.ndarray":
    """H x W x 3 RGB in 0..255 -> [1,3,H,W] float32, ImageNet-normalised (the node's input)."""
    import numpy as np

    x = (np.asarray(rgb, np.float32) / 255.0 - np.array(IMAGENET_MEAN, np.float32)) \
        / np.array(IMAGENET_STD, np.float32)
    return np.ascontiguousarray(x.transpose(2, 0, 1)[None], dtype=np.float32)


def compare(reference: "np.ndarray", other: "np.ndarray") -> dict[str, float]:
    """Pearson correlation and max abs difference."""
    import numpy as np

    a, b = np.ravel(reference).astype(np.float64), np.ravel(other).astype(np.float64)
    corr = float(np.corrcoef(a, b)[0, 1]) if a.std() > 0 and b.std() > 0 else float("nan")
    return {"corr": corr, "max_abs_diff": float(np.max(np.abs(a - b)))}


def run_litert(model_bytes: bytes, inputs: Sequence["np.ndarray"]) -> list["np.ndarray"]:
    """Run the flatbuffer with the LiteRT Interpreter (CPU, XNNPACK) on each input."""
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_content=model_bytes)
    interp.allocate_tensors()
    inp, out = interp.get_input_details()[0], interp.get_output_details()[0]
    results = []
    for x in inputs:
        interp.set_tensor(inp["index"], x)
        interp.invoke()
        results.append(interp.get_tensor(out["index"]).copy())
    return results


def litert_signature(model_bytes: bytes) -> tuple[list[list[int]], list[list[int]]]:
    """Input and output shapes as LiteRT reports them."""
    from ai_edge_litert.interpreter import Interpreter

    interp = Interpreter(model_content=model_bytes)
    return ([list(map(int, d["shape"])) for d in interp.get_input_details()],
            [list(map(int, d["shape"])) for d in interp.get_output_details()])


def op_histogram(model_bytes: bytes) -> dict[str, Any]:
    """Operator counts by name, the largest tensor rank and the fp16 weight count, read from
    the flatbuffer (``ai_edge_litert.schema_py_generated``)."""
    from ai_edge_litert import schema_py_generated as fb

    names = {v: k for k, v in vars(fb.BuiltinOperator).items() if not k.startswith("_")}
    model = fb.Model.GetRootAs(model_bytes, 0)
    hist: dict[str, int] = {}
    max_rank, fp16 = 0, 0
    for s in range(model.SubgraphsLength()):
        graph = model.Subgraphs(s)
        for i in range(graph.OperatorsLength()):
            code = model.OperatorCodes(graph.Operators(i).OpcodeIndex())
            op = max(code.BuiltinCode(), code.DeprecatedBuiltinCode())
            name = names.get(op, str(op))
            if name == "CUSTOM":
                name = f"CUSTOM:{code.CustomCode().decode()}"
            hist[name] = hist.get(name, 0) + 1
        for t in range(graph.TensorsLength()):
            tensor = graph.Tensors(t)
            max_rank = max(max_rank, tensor.ShapeLength())
            fp16 += tensor.Type() == fb.TensorType.FLOAT16
    hist = dict(sorted(hist.items(), key=lambda kv: (-kv[1], kv[0])))
    return {"histogram": hist, "total": sum(hist.values()), "max_tensor_rank": max_rank,
            "fp16_tensors": fp16,
            "gpu_unfriendly": {k: hist.get(k, 0) for k in GPU_UNFRIENDLY_OPS}}


def torch_outputs(module: "nn.Module", inputs: Sequence["np.ndarray"]) -> list["np.ndarray"]:
    """Run a torch module on each numpy input."""
    import torch

    with torch.no_grad():
        return [module(torch.from_numpy(x)).numpy() for x in inputs]


def _summarise(pairs: list[dict[str, float]], names: Sequence[str]) -> dict[str, Any]:
    return {"corr_min": min(p["corr"] for p in pairs),
            "max_abs_diff": max(p["max_abs_diff"] for p in pairs),
            "per_input": {n: p for n, p in zip(names, pairs)}}


def measure_fidelity(official: "nn.Module", model: "nn.Module", fp32_bytes: bytes,
                     fp16_bytes: bytes, width: int, height: int, seed: int = 0
                     ) -> dict[str, Any]:
    """LiteRT (fp32 and fp16 weights) and the rewritten torch graph vs the official model."""
    inputs = fidelity_inputs(width, height, seed)
    names, xs = list(inputs), list(inputs.values())
    ref = torch_outputs(official, xs)
    rewritten = torch_outputs(model, xs)
    lite32 = run_litert(fp32_bytes, xs)
    lite16 = run_litert(fp16_bytes, xs)
    return {
        "reference": "official DepthAnything3Net.forward (PyTorch, fp32), depth of one view",
        "inputs": names,
        "reference_range": [float(min(r.min() for r in ref)), float(max(r.max() for r in ref))],
        "torch_rewritten": _summarise([compare(r, o) for r, o in zip(ref, rewritten)], names),
        "litert_fp32": _summarise([compare(r, o) for r, o in zip(ref, lite32)], names),
        "litert_fp16": _summarise([compare(r, o) for r, o in zip(ref, lite16)], names),
        "litert_fp32_vs_rewritten": _summarise([compare(r, o) for r, o in
                                                zip(rewritten, lite32)], names),
        "fp32_vs_fp16": _summarise([compare(a, b) for a, b in zip(lite32, lite16)], names),
    }


FIDELITY_LINES = (
    ("torch_rewritten", "rewritten PyTorch vs official"),
    ("litert_fp32", "LiteRT fp32 weights vs official"),
    ("litert_fp16", "LiteRT fp16 weights vs official"),
    ("litert_fp32_vs_rewritten", "LiteRT fp32 vs rewritten (conversion)"),
    ("fp32_vs_fp16", "LiteRT fp32 vs fp16 weights"),
)


def format_report(report: dict[str, Any]) -> str:
    """The report as a few human-readable lines."""
    lines = [f"{report['file']}: {report['size_mb']:.1f} MB, {report['weights_dtype']} weights, "
             f"input {report['input_shape']} -> output {report['output_shape']}, "
             f"{'GPU-clean' if report['gpu_clean'] else 'CPU'} build, weights {report['weights']}"]
    fid = report.get("fidelity")
    if fid:
        lines.append(f"fidelity vs {fid['reference']} on {len(fid['inputs'])} inputs "
                     f"({', '.join(fid['inputs'])}); depth range {fid['reference_range'][0]:.4g}"
                     f"..{fid['reference_range'][1]:.4g}:")
        for key, label in FIDELITY_LINES:
            lines.append(f"  {label:<38} corr {fid[key]['corr_min']:.6f} (min)   "
                         f"max abs diff {fid[key]['max_abs_diff']:.3g}")
    ops = report["ops"]
    top = ", ".join(f"{k} {v}" for k, v in list(ops["histogram"].items())[:12])
    bad = ", ".join(f"{k} {v}" for k, v in ops["gpu_unfriendly"].items())
    lines.append(f"ops: {ops['total']} ({top}, ...); max tensor rank {ops['max_tensor_rank']}")
    lines.append(f"GPU-unfriendly op counts: {bad}")
    t = report["timing_s"]
    lines.append("time: " + ", ".join(f"{k} {v:.0f} s" for k, v in t.items()))
    return "\n".join(lines)


# =============================================================================================
# The command
# =============================================================================================


@dataclass
class ExportResult:
    """What :func:`export_da3` wrote."""

    path: Path
    report_path: Path
    report: dict[str, Any]


def export_da3(width: int, height: int, out: str | os.PathLike, *,
               checkpoint: str | None = None, seed: int = 0, gpu_clean: bool = False,
               fp16: bool = False, fidelity: bool = True, log=print) -> ExportResult:
    """Build, convert, check and write DA3-Small at ``width`` x ``height``."""
    import torch

    out = Path(out)
    timing: dict[str, float] = {}
    t0 = time.perf_counter()
    log(f"{PROG}: building DA3-Small ({MODEL_NAME}) at {width}x{height} "
        f"({'GPU-clean' if gpu_clean else 'CPU'} rewrites)")
    model, official, weights = build_export_model(width, height, checkpoint=checkpoint,
                                                  seed=seed, gpu_clean=gpu_clean)
    timing["build"] = time.perf_counter() - t0

    t0 = time.perf_counter()
    log(f"{PROG}: converting with litert-torch (minutes for ViT-S at {width}x{height})")
    sample = torch.from_numpy(fidelity_inputs(width, height, seed)["scene"])
    fp32_bytes = convert(model, sample)
    timing["convert"] = time.perf_counter() - t0
    t0 = time.perf_counter()
    fp16_bytes = to_fp16_weights(fp32_bytes)
    timing["fp16_weights"] = time.perf_counter() - t0
    data = fp16_bytes if fp16 else fp32_bytes
    inputs, outputs = litert_signature(data)
    expected_in, expected_out = [[1, 3, height, width]], [[1, 1, height, width]]
    if inputs != expected_in or outputs != expected_out:
        raise ExportError(f"converted signature {inputs} -> {outputs}, expected "
                          f"{expected_in} -> {expected_out}")
    write_atomic(out, data)
    report: dict[str, Any] = {
        "file": str(out), "size_bytes": len(data), "size_mb": len(data) / 1e6,
        "model": MODEL_NAME, "weights": weights, "weights_dtype": "fp16" if fp16 else "fp32",
        "input_shape": inputs[0], "output_shape": outputs[0],
        "input": "RGB, NCHW, float32, (x/255 - mean) / std with ImageNet mean/std",
        "gpu_clean": gpu_clean,
        "rewrites": list(CPU_REWRITES) + (list(GPU_REWRITES) if gpu_clean else []),
        "ops": op_histogram(data),
    }
    if fidelity:
        t0 = time.perf_counter()
        log(f"{PROG}: measuring fidelity (official PyTorch vs LiteRT fp32 / fp16)")
        report["fidelity"] = measure_fidelity(official, model, fp32_bytes, fp16_bytes,
                                              width, height, seed)
        timing["fidelity"] = time.perf_counter() - t0
    report["timing_s"] = timing
    report_path = out.with_name(out.name + ".report.json")
    report_path.write_text(json.dumps(report, indent=2) + "\n")
    return ExportResult(out, report_path, report)


def add_export_da3_arguments(parser: argparse.ArgumentParser) -> argparse.ArgumentParser:
    """The options of ``export-da3`` (shared by the subcommand and ``python -m``)."""
    weights = parser.add_mutually_exclusive_group(required=True)
    weights.add_argument("--checkpoint", metavar="PATH_OR_DIR",
                         help="DA3-Small weights: model.safetensors, or the Hugging Face folder "
                         "of depth-anything/DA3-SMALL (config.json + model.safetensors)")
    weights.add_argument("--random-weights", action="store_true",
                         help="random weights (tests, speed checks): the output is meaningless")
    parser.add_argument("--seed", type=int, default=0, help="seed of --random-weights and of "
                        "the fidelity inputs (default 0)")
    size = parser.add_mutually_exclusive_group(required=True)
    size.add_argument("--size", type=parse_size, metavar="WxH",
                      help="model input size, both multiples of 14, e.g. 896x504")
    size.add_argument("--camera-info-yaml", metavar="FILE",
                      help="ROS camera_info YAML: its image_width/image_height give the aspect")
    size.add_argument("--aspect", type=parse_aspect, metavar="W:H", help="camera aspect, "
                      "e.g. 16:9 or 4:3")
    parser.add_argument("--long-side", type=int, default=DEFAULT_LONG_SIDE,
                        help="longer model side for --aspect/--camera-info-yaml (multiple of 14; "
                        f"default {DEFAULT_LONG_SIDE})")
    parser.add_argument("--gpu-clean", action="store_true",
                        help="also apply the mobile-GPU rewrites of the model card (fused-QKV "
                        "split, LayerScale fold, ConvTranspose as zero-stuff + conv, "
                        "align_corners=False - the last one is not exact)")
    parser.add_argument("--fp16", action="store_true",
                        help="write fp16 weights (float32 I/O), like the published file")
    parser.add_argument("--out", "-o", help="output .tflite (default: da3_small_WxH[_gpu]"
                        "[_fp16].tflite); the report goes to <out>.report.json")
    parser.add_argument("--no-fidelity", action="store_true",
                        help="skip the fidelity measurement (faster)")
    parser.set_defaults(func=run_export_da3)
    return parser


def add_export_da3_parser(subparsers: Any) -> argparse.ArgumentParser:
    """Register ``export-da3`` on a ``dense-perception`` subparsers object."""
    parser = subparsers.add_parser(
        "export-da3", help="re-export DA3-Small to LiteRT at your camera's aspect",
        description="Build DA3-Small (official architecture), load its checkpoint, convert it "
        "with litert-torch at the camera's aspect ([1,3,H,W] -> [1,1,H,W]) and report its "
        "fidelity against PyTorch. Installs its torch environment (.venv-bench) when needed.")
    return add_export_da3_arguments(parser)


def argv_from_args(args: argparse.Namespace) -> list[str]:
    """The ``export-da3`` options of ``args`` as command-line words (to run elsewhere)."""
    argv: list[str] = []
    if args.checkpoint:
        argv += ["--checkpoint", str(Path(args.checkpoint).resolve())]
    else:
        argv += ["--random-weights"]
    argv += ["--seed", str(args.seed)]
    if args.size:
        argv += ["--size", f"{args.size[0]}x{args.size[1]}"]
    elif args.camera_info_yaml:
        argv += ["--camera-info-yaml", str(Path(args.camera_info_yaml).resolve())]
    else:
        argv += ["--aspect", repr(args.aspect)]
    argv += ["--long-side", str(args.long_side)]
    argv += [flag for flag, on in (("--gpu-clean", args.gpu_clean), ("--fp16", args.fp16),
                                   ("--no-fidelity", args.no_fidelity)) if on]
    if args.out:
        argv += ["--out", str(Path(args.out).resolve())]
    return argv


def run_export_da3(args: argparse.Namespace) -> int:
    """The ``export-da3`` command; returns the exit status (errors: one line, status 2)."""
    try:
        width, height = resolve_size(args)
        out = args.out or default_out(width, height, args.gpu_clean, args.fp16)
        if torch_env_problem():
            if not args.out:
                args.out = str(Path(out).resolve())
            return run_in_torch_env(argv_from_args(args))
        result = export_da3(width, height, out, checkpoint=args.checkpoint, seed=args.seed,
                            gpu_clean=args.gpu_clean, fp16=args.fp16,
                            fidelity=not args.no_fidelity)
    except (ExportError, ValueError) as exc:
        print(f"{PROG}: error: {exc}", file=sys.stderr)
        return EXIT_ERROR
    print(format_report(result.report))
    print(f"wrote {result.path} and {result.report_path}")
    return EXIT_OK


def main(argv: Sequence[str] | None = None) -> int:
    """``python -m dense_perception.export.export_da3``."""
    parser = argparse.ArgumentParser(prog="python -m dense_perception.export.export_da3",
                                     description=__doc__.split("\n\n")[0])
    add_export_da3_arguments(parser)
    return run_export_da3(parser.parse_args(argv))


if __name__ == "__main__":
    sys.exit(main())
