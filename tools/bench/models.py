"""Benchmark ``.tflite`` stand-ins with the architecture and compute of the real models.

The real files (``da3_small_gpu_fp16.tflite`` and ``tipsv2_b14_dpt_fp16.tflite``, see the
model cards) cannot be downloaded here, so this module re-creates their architecture class
with random weights (``torch.manual_seed(0)``) and converts them with ``litert-torch`` to
``.tflite`` files with fp16 weights and float32 I/O, like the real ones. The outputs are
meaningless; shapes, operator mix and compute are what matter for speed figures.

* ``da3_class.tflite``: DA3-Small itself, built by ``export_da3`` from the official
  architecture (depth-anything-3 package) with the card's GPU-clean rewrites, on
  ``[1,3,896,504]`` -> depth ``[1,1,896,504]``. Input: ImageNet-normalised RGB, NCHW.
* ``tipsv2_class.tflite``: ViT-B/14 (12 blocks, dim 768, 12 heads, 1 cls + 1 register token)
  on ``[1,3,448,448]`` (32x32 = 1024 patch tokens), three DPT heads (features 256, reassemble
  channels 96/192/384/768) -> depth ``[1,1,448,448]``, normals ``[1,3,448,448]``,
  segmentation logits ``[1,150,256,256]`` (in that order). Input: RGB in [0, 1], NCHW.

The graphs follow the GPU-clean rewrites listed on the cards: q/k/v as three Linears with 4D
attention, no 5D tensors, constant (pre-interpolated) position embeddings, LayerScale folded
away, ``ConvTranspose2d(k=s, stride=s)`` as zero-stuffing + ``Conv2d``, bilinear resizes with
``align_corners=False``, the DPT readout as ``patch @ W_a + cls @ W_b`` and tanh-GELU written
out elementwise for TIPSv2.

torch and litert-torch live in a separate environment, so this module imports them only
inside functions and stays importable without them::

    make bench     # sets up .venv-bench (requirements/torch*.txt), builds, then measures
    .venv-bench/bin/python -m tools.bench.models --out .cache/bench_models
"""

from __future__ import annotations

import argparse
import functools
import math
import os
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from types import SimpleNamespace
from typing import TYPE_CHECKING, Any, Callable, Sequence

if TYPE_CHECKING:  # pragma: no cover - typing only
    import torch
    from torch import nn

SEED = 0
MIN_CORRELATION = 0.99  # fp16 weights vs the fp32 torch model, per output

DA3_INPUT = (1, 3, 896, 504)
DA3_OUTPUTS = ((1, 1, 896, 504),)
TIPS_INPUT = (1, 3, 448, 448)
TIPS_OUTPUTS = ((1, 1, 448, 448), (1, 3, 448, 448), (1, 150, 256, 256))


@dataclass(frozen=True)
class ViTConfig:
    """Shape of a DINOv2-style ViT backbone."""

    image_hw: tuple[int, int]
    patch: int = 14
    dim: int = 384
    depth: int = 12
    heads: int = 6
    mlp_ratio: int = 4
    registers: int = 0
    taps: tuple[int, ...] = (2, 5, 8, 11)  # 0-based: after blocks 3, 6, 9 and 12
    tanh_gelu: bool = False

    @property
    def grid(self) -> tuple[int, int]:
        """Patch-token grid (rows, columns)."""
        return self.image_hw[0] // self.patch, self.image_hw[1] // self.patch


@dataclass(frozen=True)
class DPTConfig:
    """Channel sizes of one DPT head (reassemble + 4 fusion blocks)."""

    features: int
    out_channels: tuple[int, int, int, int]
    readout: bool = False  # project cls into the patch tokens (patch @ W_a + cls @ W_b)


@dataclass(frozen=True)
class BenchModelSpec:
    """A benchmark model: how to build it, its input and the output shapes it must have."""

    name: str
    filename: str
    build: Callable[[], "nn.Module"]
    input_shape: tuple[int, ...]
    output_shapes: tuple[tuple[int, ...], ...]


@dataclass
class BuildReport:
    """What ``main`` prints for one model."""

    name: str
    path: Path
    macs: float | None = None
    params: int | None = None
    convert_s: float | None = None
    fp16: bool | None = None
    skipped: bool = False
    reference: list[Any] = field(default_factory=list, repr=False)


# --------------------------------------------------------------------------------------------
# torch building blocks (defined lazily so that importing this module needs no torch)
# --------------------------------------------------------------------------------------------


@functools.cache
def _nn() -> SimpleNamespace:
    """Define the torch modules on first use and return them as a namespace."""
    import torch
    import torch.nn.functional as F
    from torch import nn

    from dense_perception.export.rewrites import ZeroStuffConvTranspose

    def zero_stuff_upsample(channels: int, scale: int, grid: tuple[int, int]) -> nn.Module:
        """``ConvTranspose2d(k=s, stride=s)`` as the GPU-clean zero-stuff + Conv2d."""
        return ZeroStuffConvTranspose(nn.ConvTranspose2d(channels, channels, scale, scale), grid)

    def gelu_tanh(x: torch.Tensor) -> torch.Tensor:
        """tanh-GELU written out elementwise (the TIPSv2 file has no GELU/ERF op)."""
        inner = math.sqrt(2.0 / math.pi) * (x + 0.044715 * x * x * x)
        return 0.5 * x * (1.0 + torch.tanh(inner))

    def act(tanh: bool) -> Callable[[torch.Tensor], torch.Tensor]:
        """The MLP activation: elementwise tanh-GELU or the exact (erf) GELU op."""
        return gelu_tanh if tanh else F.gelu

    class Attention(nn.Module):
        """Multi-head self-attention with q/k/v as three Linears and only 4D tensors."""

        def __init__(self, dim: int, heads: int):
            super().__init__()
            self.heads = heads
            self.head_dim = dim // heads
            self.scale = self.head_dim ** -0.5
            self.q, self.k, self.v = nn.Linear(dim, dim), nn.Linear(dim, dim), nn.Linear(dim, dim)
            self.proj = nn.Linear(dim, dim)  # LayerScale folded in (as on the real files)

        def split(self, x: torch.Tensor) -> torch.Tensor:
            """[1, N, C] -> [1, heads, N, head_dim]."""
            b, n, _ = x.shape
            return x.reshape(b, n, self.heads, self.head_dim).transpose(1, 2)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            b, n, c = x.shape
            q, k, v = self.split(self.q(x)), self.split(self.k(x)), self.split(self.v(x))
            attn = torch.softmax(torch.matmul(q * self.scale, k.transpose(-2, -1)), dim=-1)
            out = torch.matmul(attn, v).transpose(1, 2).reshape(b, n, c)
            return self.proj(out)

    class Block(nn.Module):
        """Pre-norm transformer block (LayerScale folded away)."""

        def __init__(self, cfg: ViTConfig):
            super().__init__()
            self.norm1 = nn.LayerNorm(cfg.dim, eps=1e-6)
            self.attn = Attention(cfg.dim, cfg.heads)
            self.norm2 = nn.LayerNorm(cfg.dim, eps=1e-6)
            self.fc1 = nn.Linear(cfg.dim, cfg.dim * cfg.mlp_ratio)
            self.fc2 = nn.Linear(cfg.dim * cfg.mlp_ratio, cfg.dim)
            self.act = act(cfg.tanh_gelu)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = x + self.attn(self.norm1(x))
            return x + self.fc2(self.act(self.fc1(self.norm2(x))))

    class ViT(nn.Module):
        """DINOv2-style ViT returning normed (patch tokens, cls token) at the tapped blocks."""

        def __init__(self, cfg: ViTConfig):
            super().__init__()
            self.cfg = cfg
            rows, cols = cfg.grid
            self.patch_embed = nn.Conv2d(3, cfg.dim, cfg.patch, stride=cfg.patch)
            self.cls_token = nn.Parameter(torch.randn(1, 1, cfg.dim) * 0.02)
            # Position embedding already at this grid (baked constant, no runtime interpolate).
            self.pos_embed = nn.Parameter(torch.randn(1, 1 + rows * cols, cfg.dim) * 0.02)
            self.registers = (nn.Parameter(torch.randn(1, cfg.registers, cfg.dim) * 0.02)
                              if cfg.registers else None)
            self.blocks = nn.ModuleList(Block(cfg) for _ in range(cfg.depth))
            self.norm = nn.LayerNorm(cfg.dim, eps=1e-6)

        def forward(self, image: torch.Tensor) -> list[tuple[torch.Tensor, torch.Tensor]]:
            x = self.patch_embed(image).flatten(2).transpose(1, 2)  # [1, N, C]
            x = torch.cat([self.cls_token, x], dim=1) + self.pos_embed
            skip = 1
            if self.registers is not None:
                x = torch.cat([x[:, :1], self.registers, x[:, 1:]], dim=1)
                skip += self.cfg.registers
            taps = []
            for i, block in enumerate(self.blocks):
                x = block(x)
                if i in self.cfg.taps:
                    y = self.norm(x)
                    taps.append((y[:, skip:], y[:, :1]))
            return taps

    class Reassemble(nn.Module):
        """DPT reassemble: tokens -> maps at 4x, 2x, 1x and 1/2 of the patch grid."""

        def __init__(self, dim: int, grid: tuple[int, int], cfg: DPTConfig):
            super().__init__()
            self.grid = grid
            oc = cfg.out_channels
            self.readout_patch = (nn.ModuleList(nn.Linear(dim, dim) for _ in oc)
                                  if cfg.readout else None)
            self.readout_cls = (nn.ModuleList(nn.Linear(dim, dim, bias=False) for _ in oc)
                                if cfg.readout else None)
            self.project = nn.ModuleList(nn.Conv2d(dim, c, 1) for c in oc)
            self.resize = nn.ModuleList([
                zero_stuff_upsample(oc[0], 4, grid),
                zero_stuff_upsample(oc[1], 2, grid),
                nn.Identity(),
                nn.Conv2d(oc[3], oc[3], 3, stride=2, padding=1),
            ])
            self.act = gelu_tanh

        def forward(self, taps: list[tuple[torch.Tensor, torch.Tensor]]) -> list[torch.Tensor]:
            maps = []
            for i, (patch, cls) in enumerate(taps):
                if self.readout_patch is not None:
                    patch = self.act(self.readout_patch[i](patch) + self.readout_cls[i](cls))
                x = patch.transpose(1, 2).reshape(1, patch.shape[2], *self.grid)
                maps.append(self.resize[i](self.project[i](x)))
            return maps

    class ResidualConvUnit(nn.Module):
        """DPT residual unit: relu-conv3x3-relu-conv3x3 + skip."""

        def __init__(self, features: int):
            super().__init__()
            self.conv1 = nn.Conv2d(features, features, 3, padding=1)
            self.conv2 = nn.Conv2d(features, features, 3, padding=1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return x + self.conv2(F.relu(self.conv1(F.relu(x))))

    class FusionBlock(nn.Module):
        """DPT feature fusion: (+ residual unit of the skip), residual unit, bilinear up, 1x1."""

        def __init__(self, features: int, has_skip: bool):
            super().__init__()
            self.skip_unit = ResidualConvUnit(features) if has_skip else None
            self.unit = ResidualConvUnit(features)
            self.out_conv = nn.Conv2d(features, features, 1)

        def forward(self, x: torch.Tensor, skip: torch.Tensor | None,
                    size: tuple[int, int]) -> torch.Tensor:
            if self.skip_unit is not None and skip is not None:
                x = x + self.skip_unit(skip)
            x = F.interpolate(self.unit(x), size=size, mode="bilinear", align_corners=False)
            return self.out_conv(x)

    class DPTNeck(nn.Module):
        """Reassemble + 3x3 'layer_rn' convs + 4 fusion blocks -> one map at 8x the grid."""

        def __init__(self, dim: int, grid: tuple[int, int], cfg: DPTConfig):
            super().__init__()
            self.reassemble = Reassemble(dim, grid, cfg)
            self.layer_rn = nn.ModuleList(
                nn.Conv2d(c, cfg.features, 3, padding=1, bias=False) for c in cfg.out_channels)
            self.fusion = nn.ModuleList(FusionBlock(cfg.features, i < 3) for i in range(4))

        def forward(self, taps: list[tuple[torch.Tensor, torch.Tensor]]) -> torch.Tensor:
            maps = [rn(m) for rn, m in zip(self.layer_rn, self.reassemble(taps))]
            x = self.fusion[3](maps[3], None, maps[2].shape[-2:])
            x = self.fusion[2](x, maps[2], maps[1].shape[-2:])
            x = self.fusion[1](x, maps[1], maps[0].shape[-2:])
            h, w = maps[0].shape[-2:]
            return self.fusion[0](x, maps[0], (2 * h, 2 * w))

    class DepthHead(nn.Module):
        """conv3x3 -> bilinear to full res -> conv3x3 -> ReLU -> 1x1 (-> optional bins)."""

        def __init__(self, features: int, out_hw: tuple[int, int], out_channels: int = 1,
                     hidden: int = 32, bins: int = 0, final_relu: bool = True):
            super().__init__()
            self.out_hw = out_hw
            self.conv1 = nn.Conv2d(features, features // 2, 3, padding=1)
            self.conv2 = nn.Conv2d(features // 2, hidden, 3, padding=1)
            self.conv3 = nn.Conv2d(hidden, bins or out_channels, 1)
            self.final_relu = final_relu
            if final_relu:  # random weights: keep the output above 0 so it is not all zeros
                nn.init.constant_(self.conv3.bias, 1.0)
            self.bins = None
            if bins:  # classification-bins depth: relu(l) / sum relu(l), weighted bin centres
                self.bins = nn.Conv2d(bins, 1, 1, bias=False)
                centres = torch.linspace(1e-3, 10.0, bins).reshape(1, bins, 1, 1)
                self.bins.weight.data.copy_(centres)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            x = F.interpolate(self.conv1(x), size=self.out_hw, mode="bilinear",
                              align_corners=False)
            x = self.conv3(F.relu(self.conv2(x)))
            if self.bins is not None:
                x = F.relu(x) + 0.1
                return self.bins(x / x.sum(dim=1, keepdim=True))
            return F.relu(x) if self.final_relu else x

    class NormalsHead(nn.Module):
        """Depth-style head with 3 outputs normalised to unit vectors."""

        def __init__(self, features: int, out_hw: tuple[int, int]):
            super().__init__()
            self.head = DepthHead(features, out_hw, out_channels=3, final_relu=False)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            n = self.head(x)
            return n * torch.rsqrt((n * n).sum(dim=1, keepdim=True) + 1e-6)

    class SegHead(nn.Module):
        """DPT segmentation head at the neck's native grid: conv3x3-BN-ReLU-conv1x1."""

        def __init__(self, features: int, classes: int):
            super().__init__()
            self.conv = nn.Conv2d(features, features, 3, padding=1, bias=False)
            self.bn = nn.BatchNorm2d(features)
            self.cls = nn.Conv2d(features, classes, 1)

        def forward(self, x: torch.Tensor) -> torch.Tensor:
            return self.cls(F.relu(self.bn(self.conv(x))))

    class TIPSv2Class(nn.Module):
        """ViT-B/14 + three DPT heads: depth, normals, segmentation logits (in that order)."""

        def __init__(self, vit: ViTConfig, dpt: DPTConfig, classes: int = 150):
            super().__init__()
            self.backbone = ViT(vit)
            self.depth_neck = DPTNeck(vit.dim, vit.grid, dpt)
            self.normals_neck = DPTNeck(vit.dim, vit.grid, dpt)
            self.seg_neck = DPTNeck(vit.dim, vit.grid, dpt)
            self.depth = DepthHead(dpt.features, vit.image_hw, bins=256, final_relu=False)
            self.normals = NormalsHead(dpt.features, vit.image_hw)
            self.seg = SegHead(dpt.features, classes)

        def forward(self, image: torch.Tensor) -> tuple[torch.Tensor, torch.Tensor, torch.Tensor]:
            taps = self.backbone(image)
            return (self.depth(self.depth_neck(taps)),
                    self.normals(self.normals_neck(taps)),
                    self.seg(self.seg_neck(taps)))

    return SimpleNamespace(TIPSv2Class=TIPSv2Class)


# --------------------------------------------------------------------------------------------
# the two models
# --------------------------------------------------------------------------------------------


def _finish(model: "nn.Module") -> "nn.Module":
    """Randomise the BatchNorm statistics a little and switch to eval mode."""
    import torch

    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    return model.eval()


def build_da3_class() -> "nn.Module":
    """DA3-Small itself (the official architecture from the depth-anything-3 package, random
    weights) as ``export-da3 --gpu-clean --no-confidence`` builds it at 504x896: the graph of
    the real file (depth only)."""
    from dense_perception.export.graph import build_export_model

    height, width = DA3_INPUT[2:]
    return build_export_model(width, height, seed=SEED, gpu_clean=True, confidence=False)[0]


def build_tipsv2_class() -> "nn.Module":
    """TIPSv2-B/14-DPT class: ViT-B/14 (1 cls + 1 register) at 448x448 + 3 DPT heads."""
    import torch

    torch.manual_seed(SEED)
    vit = ViTConfig(image_hw=TIPS_INPUT[2:], dim=768, heads=12, registers=1, tanh_gelu=True)
    dpt = DPTConfig(features=256, out_channels=(96, 192, 384, 768), readout=True)
    return _finish(_nn().TIPSv2Class(vit, dpt))


SPECS: tuple[BenchModelSpec, ...] = (
    BenchModelSpec("da3", "da3_class.tflite", build_da3_class, DA3_INPUT, DA3_OUTPUTS),
    BenchModelSpec("tipsv2", "tipsv2_class.tflite", build_tipsv2_class, TIPS_INPUT,
                   TIPS_OUTPUTS),
)


# --------------------------------------------------------------------------------------------
# measuring, converting, checking
# --------------------------------------------------------------------------------------------


def sample_input(shape: Sequence[int]) -> "torch.Tensor":
    """A fixed random float32 input of ``shape``."""
    import torch

    return torch.randn(*shape, generator=torch.Generator().manual_seed(SEED))


def count_macs(model: "nn.Module", sample: "torch.Tensor") -> float:
    """Multiply-accumulates of one forward pass (FlopCounterMode FLOPs / 2)."""
    import torch
    from torch.utils.flop_counter import FlopCounterMode

    counter = FlopCounterMode(display=False)
    with torch.no_grad(), counter:
        model(sample)
    return counter.get_total_flops() / 2.0


def count_params(model: "nn.Module") -> int:
    """Number of parameters."""
    return sum(p.numel() for p in model.parameters())


def torch_outputs(model: "nn.Module", sample: "torch.Tensor",
                  shapes: Sequence[Sequence[int]]) -> list[Any]:
    """Run torch once, check the output shapes and their order, return them as numpy."""
    from dense_perception.export.fidelity import torch_forward

    outs = torch_forward(model, sample.numpy())
    got = [tuple(o.shape) for o in outs]
    if got != [tuple(s) for s in shapes]:
        raise AssertionError(f"torch outputs {got}, expected {list(shapes)}")
    return outs


def correlations(reference: Sequence[Any], outputs: Sequence[Any]) -> list[float]:
    """Pearson correlation of each converted output with the torch output."""
    from dense_perception.export.fidelity import compare

    return [compare(a, b)["corr"] for a, b in zip(reference, outputs)]


def export(model: "nn.Module", sample: "torch.Tensor", path: str | os.PathLike,
           fp16: bool = True) -> bool:
    """Convert ``model`` to a ``.tflite`` at ``path``; returns True when the weights are fp16.

    Inputs and outputs stay float32. When the fp16 weight cast fails, the file keeps fp32
    weights and a warning is printed. The file is written atomically (no truncated model).
    """
    from dense_perception.export.convert import convert, to_fp16_weights, write_atomic

    data = convert(model, sample)
    used_fp16 = fp16
    if fp16:
        try:
            data = to_fp16_weights(data)
        except Exception as exc:  # noqa: BLE001 - any quantizer failure -> keep fp32
            print(f"WARNING: fp16 weights failed ({type(exc).__name__}: {exc}); "
                  "writing fp32 weights instead", file=sys.stderr)
            used_fp16 = False
    write_atomic(Path(path), data)
    return used_fp16


@dataclass
class RuntimeCheck:
    """What the LiteRT interpreter says about a converted file."""

    inputs: list[tuple[int, ...]]
    outputs: list[tuple[int, ...]]
    io_dtypes: list[str]
    fp16_tensors: int
    partitions: int
    ops_outside_delegate: dict[str, int]
    load_s: float
    invoke_ms: list[float]
    outputs_data: list[Any] = field(default_factory=list, repr=False)


def delegate_coverage(interp: Any) -> tuple[int, dict[str, int]]:
    """Delegate partitions and the ops the interpreter runs outside them (by op name).

    After ``allocate_tensors`` the node list holds the model's ops followed by one
    ``DELEGATE`` node per partition (here: XNNPACK); it does not say which ops a partition
    took over. Walking back from the model outputs through the producers of each tensor,
    with a delegate node standing for everything it replaced, reaches exactly the ops that
    still run as TFLite builtin kernels.
    """
    ops = interp._get_ops_details()  # noqa: SLF001 - no public view of the execution plan
    delegates = [op for op in ops if op["op_name"] == "DELEGATE"]
    producer: dict[int, dict] = {}
    for op in ops:  # delegate nodes come last, so they win for the tensors they produce
        for t in op["outputs"]:
            producer[int(t)] = op
    seen: set[int] = set()
    leftover: dict[str, int] = {}
    stack = [int(d["index"]) for d in interp.get_output_details()]
    while stack:
        op = producer.get(stack.pop())
        if op is None or op["index"] in seen:
            continue
        seen.add(op["index"])
        if op["op_name"] != "DELEGATE":
            leftover[op["op_name"]] = leftover.get(op["op_name"], 0) + 1
        stack.extend(int(t) for t in op["inputs"] if t >= 0)
    return len(delegates), leftover


def check_runtime(path: str | os.PathLike, x: Any, threads: int = 2,
                  runs: int = 3) -> RuntimeCheck:
    """Load ``path`` in the LiteRT Interpreter (XNNPACK), run ``x``, time 1 + ``runs`` invokes."""
    import numpy as np
    from ai_edge_litert.interpreter import Interpreter

    from dense_perception.export.convert import op_histogram

    start = time.perf_counter()
    interp = Interpreter(model_path=str(path), num_threads=threads)
    interp.allocate_tensors()
    load_s = time.perf_counter() - start
    ins, outs = interp.get_input_details(), interp.get_output_details()
    fp16 = op_histogram(Path(path).read_bytes())["fp16_tensors"]
    partitions, leftover = delegate_coverage(interp)
    interp.set_tensor(ins[0]["index"], np.ascontiguousarray(x, np.float32))
    times = []
    for _ in range(runs + 1):  # the first run is a warm-up
        t0 = time.perf_counter()
        interp.invoke()
        times.append((time.perf_counter() - t0) * 1000.0)
    data = [interp.get_tensor(d["index"]) for d in outs]
    if not all(np.isfinite(a).all() for a in data):
        raise AssertionError(f"{path}: an output is not finite")
    return RuntimeCheck(
        inputs=[tuple(int(v) for v in d["shape"]) for d in ins],
        outputs=[tuple(int(v) for v in d["shape"]) for d in outs],
        io_dtypes=[np.dtype(d["dtype"]).name for d in [*ins, *outs]],
        fp16_tensors=fp16, partitions=partitions, ops_outside_delegate=leftover,
        load_s=load_s, invoke_ms=times[1:], outputs_data=data)


def build_one(spec: BenchModelSpec, out_dir: Path, force: bool) -> BuildReport:
    """Build, measure and (unless the file exists and not ``force``) convert one model."""
    report = BuildReport(spec.name, out_dir / spec.filename)
    model = spec.build()
    sample = sample_input(spec.input_shape)
    report.reference = torch_outputs(model, sample, spec.output_shapes)
    report.macs = count_macs(model, sample)
    report.params = count_params(model)
    stamp = report.path.with_suffix(".source-sha256")
    if report.path.exists() and not force and stamp.exists() \
            and stamp.read_text().strip() == builder_fingerprint():
        report.skipped = True
        return report
    start = time.perf_counter()
    report.fp16 = export(model, sample, report.path, fp16=True)
    report.convert_s = time.perf_counter() - start
    stamp.write_text(builder_fingerprint() + "\n")
    return report


def builder_fingerprint() -> str:
    """Hash of the code that builds the models: a file built by older code is rebuilt."""
    import hashlib
    here = Path(__file__).resolve()
    digest = hashlib.sha256()
    for path in [here, *sorted((here.parents[2] / "dense_perception" / "export").glob("*.py"))]:
        digest.update(path.read_bytes())
    return digest.hexdigest()


def describe(report: BuildReport, check: RuntimeCheck, spec: BenchModelSpec,
             corr: Sequence[float]) -> str:
    """Human-readable summary lines for one model."""
    size_mb = report.path.stat().st_size / 1e6
    conv = ("skipped (built by this code already; --force rebuilds)" if report.skipped
            else f"{report.convert_s:.1f} s, weights {'fp16' if report.fp16 else 'FP32'}")
    left = ", ".join(f"{k} x{v}" for k, v in sorted(check.ops_outside_delegate.items()))
    return "\n".join([
        f"== {spec.name}: {report.path}",
        f"  MACs {report.macs / 1e9:.1f} G, params {report.params / 1e6:.2f} M, "
        f"file {size_mb:.1f} MB, conversion {conv}",
        f"  signature {check.inputs} -> {check.outputs}, I/O {sorted(set(check.io_dtypes))}, "
        f"fp16 tensors {check.fp16_tensors}",
        f"  corr vs torch fp32: {', '.join(f'{c:.5f}' for c in corr)}",
        f"  XNNPACK partitions {check.partitions}; ops outside XNNPACK: {left or 'none'}",
        f"  load {check.load_s:.2f} s, invoke (2 threads) median of {len(check.invoke_ms)} "
        f"warm: {statistics.median(check.invoke_ms):.0f} ms "
        f"({', '.join(f'{t:.0f}' for t in check.invoke_ms)})",
    ])


def verify_signature(check: RuntimeCheck, spec: BenchModelSpec) -> None:
    """Raise when the file's input/output shapes or output order differ from the real model."""
    if check.inputs != [spec.input_shape] or check.outputs != list(spec.output_shapes):
        raise AssertionError(f"{spec.name}: signature {check.inputs} -> {check.outputs}, "
                             f"expected {[spec.input_shape]} -> {list(spec.output_shapes)}")
    if set(check.io_dtypes) != {"float32"}:
        raise AssertionError(f"{spec.name}: I/O dtypes {check.io_dtypes}, expected float32")


def main(argv: list[str] | None = None) -> int:
    """Build both benchmark models into ``--out`` and check them with the LiteRT runtime."""
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--out", default=".cache/bench_models", help="output folder")
    parser.add_argument("--force", action="store_true", help="rebuild existing files")
    parser.add_argument("--only", choices=[s.name for s in SPECS], action="append")
    parser.add_argument("--threads", type=int, default=2, help="interpreter threads")
    args = parser.parse_args(argv)
    failed = False
    for spec in SPECS:
        if args.only and spec.name not in args.only:
            continue
        report = build_one(spec, Path(args.out), args.force)
        sample = sample_input(spec.input_shape).numpy()
        check = check_runtime(report.path, sample, threads=args.threads)
        corr = correlations(report.reference, check.outputs_data)
        print(describe(report, check, spec, corr), flush=True)
        try:
            verify_signature(check, spec)
            if not all(c >= MIN_CORRELATION for c in corr):  # NaN (constant output) fails
                raise AssertionError(f"{spec.name}: converted outputs differ from torch: {corr}")
        except AssertionError as exc:
            print(f"  FAILED: {exc}", flush=True)
            failed = True
    return 1 if failed else 0


if __name__ == "__main__":
    sys.exit(main())
