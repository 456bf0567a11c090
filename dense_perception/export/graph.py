# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The exported graph: DA3-Small's one-view depth path rebuilt from the official modules with
the card's rewrites (``DA3DepthExport``), and the official forward it is checked against
(``OfficialDepth``)."""

from __future__ import annotations

import copy

import torch
import torch.nn.functional as F
from torch import nn

from .common import PATCH
from .official import build_official_da3, load_checkpoint, randomise_constant_init
from .rewrites import (ZeroStuffConvTranspose, add_uv_pos_embed, bake_pos_embed,
                       bake_uv_pos_embed, fold_layerscale, insert_camera_token, rope_tables,
                       rotate_halves, set_align_corners_false, split_fused_qkv)


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
    """DualDPT's main (depth) branch only: the ray/aux branch is not part of the output, so it
    is not in the graph. ``confidence``: also return the branch's last channel as DA3 does
    (``depth_conf`` = exp + 1, the "expp1" activation)."""

    def __init__(self, head: nn.Module, height: int, width: int, gpu_clean: bool,
                 confidence: bool = True):
        super().__init__()
        self.h, self.w = height, width
        self.confidence = confidence
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

    def forward(self, feats: list[torch.Tensor]) -> dict[str, torch.Tensor]:
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
        out = {"depth": torch.exp(logits[:, :1])}  # DualDPT "exp" activation of the depth channel
        if self.confidence:  # named outputs: the file's signature says "depth", "confidence"
            out["confidence"] = torch.exp(logits[:, -1:]) + 1.0  # DualDPT "expp1"
        return out

class DA3DepthExport(nn.Module):
    """DA3-Small as exported: [1,3,H,W] ImageNet-normalised RGB -> {"depth": [1,1,H,W],
    "confidence": [1,1,H,W]} (in that order; without ``confidence``, depth only like the card).

    One view (B = S = 1), no camera conditioning: the official forward with the
    multi-view machinery and the unused heads dropped, and the card's rewrites applied."""

    def __init__(self, net: nn.Module, height: int, width: int, gpu_clean: bool,
                 confidence: bool = True):
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
        self.head = DepthHead(net.head, height, width, gpu_clean, confidence)

    def forward(self, image: torch.Tensor) -> dict[str, torch.Tensor]:
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
    """The reference: the official ``DepthAnything3Net.forward`` on one view: depth and,
    with ``confidence``, its ``depth_conf`` (as the exported graph's outputs)."""

    def __init__(self, net: nn.Module, confidence: bool = True):
        super().__init__()
        self.net = net
        self.confidence = confidence

    def forward(self, image: torch.Tensor) -> dict[str, torch.Tensor]:
        out = self.net(image[:, None])
        shape = (image.shape[0], 1, *image.shape[-2:])
        result = {"depth": out["depth"].reshape(shape)}
        if self.confidence:
            result["confidence"] = out["depth_conf"].reshape(shape)
        return result


CPU_REWRITES = (
    "checkpoint 'model.' key-prefix strip (when loading a checkpoint)",
    "RoPE max position as a constant; cos/sin rows baked per token (no GATHER)",
    "ViT pos_embed bicubic interpolation baked for this size",
    "camera-token insertion x[:, :, 0] = token as torch.cat",
    "DPT UV pos-embed baked as separable constants (exact; card disables the last one)",
    "depth branch only (ray/aux branch and camera decoder not exported); its confidence "
    "channel a second output unless --no-confidence",
)
GPU_REWRITES = (
    "fused QKV -> 3 Linears, 4D attention (no 5D RESHAPE/TRANSPOSE)",
    "LayerScale gamma folded into attn.proj / mlp.fc2",
    "ConvTranspose2d(k=s, stride=s) -> zero-stuff + Conv2d",
    "DPT bilinear resizes align_corners=True -> False (not exact)",
)


def build_export_model(width: int, height: int, *, checkpoint: str | None = None,
                       seed: int = 0, gpu_clean: bool = False, confidence: bool = True
                       ) -> tuple[nn.Module, nn.Module, str]:
    """(export module, official reference module, weights description) for DA3-Small.

    The export module is built from a deep copy, so folding weights never touches the
    reference. Without ``checkpoint`` the weights are random (``seed``). ``confidence``:
    both return depth and confidence (else depth only, like the card's file)."""
    net = build_official_da3(seed)
    if checkpoint:
        weights = load_checkpoint(net, checkpoint)
    else:
        randomise_constant_init(net, seed)
        weights = f"random (seed {seed})"
    for p in net.parameters():
        p.requires_grad_(False)
    with torch.no_grad():
        model = DA3DepthExport(copy.deepcopy(net), height, width, gpu_clean, confidence).eval()
    return model, OfficialDepth(net, confidence).eval(), weights


