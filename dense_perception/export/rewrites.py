# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The export rewrites of the model card, one function or module each: constants baked for the
model size (position embeddings, RoPE tables, the DPT UV embedding) and the mobile-GPU rewrites
(fused QKV split, LayerScale fold, ConvTranspose as zero-stuff + conv, align_corners=False)."""

from __future__ import annotations

import torch
import torch.nn.functional as F
from torch import nn

from .common import PATCH


def bake_pos_embed(vit: nn.Module, height: int, width: int) -> torch.Tensor:
    """Card rewrite 5: the ViT position embedding interpolated once, for this size.

    DINOv2 bicubically resizes its 37x37 table to the patch grid at every call. On a constant
    that is wasted work, and the converter turns it into GATHER_ND on desktop and a
    RESIZE_BILINEAR with no runtime input on device. The official function is called here, so
    the baked table is exactly what the model computes. Returns [1, 1 + N, C]."""
    n = (height // PATCH) * (width // PATCH)
    tokens = torch.zeros(1, 1 + n, vit.embed_dim)
    with torch.no_grad():
        # Official argument order: prepare_tokens_with_masks unpacks (B, S, C, H, W) into
        # names (w, h), i.e. it passes the height first.
        return vit.interpolate_pos_encoding(tokens, height, width).detach().clone()


def rope_tables(vit: nn.Module, height: int, width: int
                ) -> dict[str, tuple[torch.Tensor, torch.Tensor]]:
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


def rotate_halves(x: torch.Tensor) -> torch.Tensor:
    """RoPE's rotate-half on the y and x halves of the head dim, without the sign (see
    :func:`rope_tables`): [a1 a2 | b1 b2] -> [a2 a1 | b2 b1]."""
    q = x.shape[-1] // 4
    return torch.cat([x[..., q:2 * q], x[..., :q], x[..., 3 * q:], x[..., 2 * q:3 * q]], dim=-1)


def insert_camera_token(x: torch.Tensor, token: torch.Tensor) -> torch.Tensor:
    """Card rewrite 9: ``x[:, :, 0] = cam_token`` as a concatenation.

    The official in-place index assignment becomes SELECT_V2/SCATTER-like ops (and mutates a
    tensor that torch.export must then functionalise); replacing token 0 is a cat."""
    return torch.cat([token.expand(x.shape[0], 1, x.shape[-1]), x[:, 1:]], dim=1)


def bake_uv_pos_embed(head: nn.Module, channels: int, grid_h: int, grid_w: int,
                      height: int, width: int) -> tuple[torch.Tensor, torch.Tensor]:
    """The DPT head's UV sin-cos embedding as two small constants (exact).

    ``DualDPT._add_pos_embed`` rebuilds a [C, h, w] sin/cos grid at every call (linspace,
    meshgrid, einsum, sin, cos, expand -> BROADCAST_TO). Baked whole, the last one is a
    [1, 32, H, W] constant (58 MB at 896x504). But its first C/2 channels depend only on the
    column and the last C/2 only on the row, so it is kept as cols [1, C/2, 1, w] and rows
    [1, C/2, h, 1], added by :func:`add_uv_pos_embed`. (The card disables the last of these
    embeddings instead - not exact; this keeps it.)"""
    with torch.no_grad():
        pe = head._add_pos_embed(torch.zeros(1, channels, grid_h, grid_w), width, height)
    c2 = channels // 2
    cols = pe[:, :c2, :1, :].clone()
    rows = pe[:, c2:, :, :1].clone()
    if not torch.equal(torch.cat([cols.expand(-1, -1, grid_h, -1),
                                  rows.expand(-1, -1, -1, grid_w)], dim=1), pe):
        raise AssertionError("DPT UV embedding is not separable; the package changed")
    return cols, rows


def add_uv_pos_embed(x: torch.Tensor, cols: torch.Tensor, rows: torch.Tensor
                     ) -> torch.Tensor:
    """``x + pe`` from the separable parts of :func:`bake_uv_pos_embed`: a broadcast ADD on
    each channel half. (``x + cols_padded + rows_padded`` would be simpler, but the converter
    folds the two constants back into the full-size one.)"""
    c2 = cols.shape[1]
    return torch.cat([x[:, :c2] + cols, x[:, c2:] + rows], dim=1)


def split_fused_qkv(attn: nn.Module) -> tuple[nn.Module, nn.Module, nn.Module]:
    """Card rewrite 3 (GPU-clean): the fused QKV Linear as three Linears.

    The official attention reshapes qkv to 5D [B, N, 3, heads, d] and permutes it; the mobile
    GPU delegate rejects >4D RESHAPE/TRANSPOSE. Three Linears give 4D q, k, v (exact)."""
    dim = attn.qkv.in_features
    parts = []
    for i in range(3):
        lin = nn.Linear(dim, dim, bias=attn.qkv.bias is not None)
        lin.weight.data.copy_(attn.qkv.weight.data[i * dim:(i + 1) * dim])
        if attn.qkv.bias is not None:
            lin.bias.data.copy_(attn.qkv.bias.data[i * dim:(i + 1) * dim])
        parts.append(lin)
    return parts[0], parts[1], parts[2]


def fold_layerscale(linear: nn.Module, layer_scale: nn.Module) -> None:
    """Card rewrite 4 (GPU-clean): LayerScale ``gamma`` folded into the preceding Linear.

    ``y * gamma`` after ``attn.proj`` / ``mlp.fc2`` is a broadcast MUL on which the GPU
    delegate mis-lays-out the token dim (fully_connected {1,1,N,C} vs {N,1,1,C}). Scaling the
    Linear's output rows by gamma is the same function (exact up to rounding)."""
    gamma = layer_scale.gamma.detach()
    with torch.no_grad():
        linear.weight.mul_(gamma[:, None])
        if linear.bias is not None:
            linear.bias.mul_(gamma)


def set_align_corners_false(head: nn.Module) -> None:
    """Card rewrite 7 (GPU-clean, NOT exact): bilinear resizes with ``align_corners=False``.

    The mobile GPU bans RESIZE_BILINEAR with align_corners=True. This is the only non-exact
    rewrite: it shifts the DPT upsampling by a fraction of a pixel (the card's residual ~0.05 %,
    corr 0.99948)."""
    for module in head.modules():
        if hasattr(module, "align_corners"):
            module.align_corners = False


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
