# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The torch graph of the TIPSv2-class benchmark model: a DINOv2-style ViT and three DPT heads,
defined on first use so that importing this module needs no torch.

The graphs follow the GPU-clean rewrites listed on the cards: q/k/v as three Linears with 4D
attention, no 5D tensors, constant (pre-interpolated) position embeddings, LayerScale folded
away, ``ConvTranspose2d(k=s, stride=s)`` as zero-stuffing + ``Conv2d``, bilinear resizes with
``align_corners=False``, the DPT readout as ``patch @ W_a + cls @ W_b`` and tanh-GELU written
out elementwise for TIPSv2.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass
from types import SimpleNamespace
from typing import TYPE_CHECKING, Callable

if TYPE_CHECKING:  # pragma: no cover - typing only
    from torch import nn


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



@functools.cache
def torch_modules() -> SimpleNamespace:
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


def finish(model: "nn.Module") -> "nn.Module":
    """Randomise the BatchNorm statistics a little and switch to eval mode."""
    import torch

    with torch.no_grad():
        for m in model.modules():
            if isinstance(m, torch.nn.BatchNorm2d):
                m.running_mean.normal_(0.0, 0.1)
                m.running_var.uniform_(0.5, 1.5)
    return model.eval()
