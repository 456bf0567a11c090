# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""What the bundled test models output, written out from their definitions
(models/make_test_models.py), and smooth frames whose resampling stays predictable: the
independent truth for the pipeline and node tests."""

import numpy as np

MEAN = np.array([0.485, 0.456, 0.406])
STD = np.array([0.229, 0.224, 0.225])
# The DA3 test model: depth = DA3_BIAS + DA3_WEIGHTS . ((rgb / 255 - MEAN) / STD), written once
# here for every test (bag_maker, camera_scenes and the tests import it).
DA3_WEIGHTS, DA3_BIAS = np.array([0.5, 0.25, 0.125]), 3.0


def gradient_frame(width, height, blue=200):
    """RGB frame: red grows left->right, green grows top->bottom, blue constant."""
    u = np.linspace(20, 235, width)
    v = np.linspace(30, 225, height)
    frame = np.empty((height, width, 3), np.float64)
    frame[..., 0] = u[None, :]
    frame[..., 1] = v[:, None]
    frame[..., 2] = blue
    return frame  # float, exact; quantised by the caller


def da3_depth_of(rgb):
    """The DA3 test model's depth for RGB colours (last axis: r, g, b; 0..255)."""
    x = (np.asarray(rgb, np.float64) / 255.0 - MEAN) / STD
    return DA3_BIAS + x @ DA3_WEIGHTS


def da3_confidence_of(rgb):
    """The DA3 confidence test model's confidence: 1 + exp of the ImageNet-normalised blue
    (DA3's own exp + 1 activation; models/make_test_models.py)."""
    return 1.0 + np.exp((rgb[..., 2] / 255.0 - MEAN[2]) / STD[2])


def tips_depth_of(rgb):
    r, g, b = (rgb[..., i] / 255.0 for i in range(3))
    return 0.5 + 2.0 * r + 1.0 * g + 0.5 * b


def tips_normals_of(rgb):
    r, g = rgb[..., 0] / 255.0, rgb[..., 1] / 255.0
    n = np.stack([2 * r - 1, 2 * g - 1, -np.ones_like(r)], axis=-1)
    return n / np.linalg.norm(n, axis=-1, keepdims=True)


def camera_colour_at_published(exact, plan, resolution):
    """The exact camera colour at the centre of each published pixel."""
    pw, ph = plan.published_size(resolution)
    if resolution == "input":
        return exact
    # Invert camera_to_published for pixel centres of the published grid.
    jj, ii = np.meshgrid(np.arange(pw), np.arange(ph))
    u = (jj + 0.5) * plan.crop_width / pw - 0.5 + plan.crop_x
    v = (ii + 0.5) * plan.crop_height / ph - 0.5 + plan.crop_y
    h, w = exact.shape[:2]
    us = np.interp(u, np.arange(w), np.arange(w))  # clamp to the frame like the resize does
    vs = np.interp(v, np.arange(h), np.arange(h))
    r = np.interp(us, np.arange(w), exact[0, :, 0])
    g = np.interp(vs, np.arange(h), exact[:, 0, 1])
    return np.stack([r, g, np.full_like(r, exact[0, 0, 2])], axis=-1)


def tips_seg_logits_of(blue):
    """The TIPSv2 test model's 150 segmentation logits (last axis) for blue value(s) 0..255:
    logits[k] = -(149 v - k)^2 with v = blue / 255 (models/make_test_models.py)."""
    v = np.asarray(blue, np.float64) / 255.0
    return -(149.0 * v[..., None] - np.arange(150)) ** 2


def tips_seg_confidence_of(blue):
    """segmentation/confidence (mono8) for blue value(s): 255 x the largest softmax probability
    of the test model's logits, the softmax written out (shifted by the max: no overflow)."""
    logits = tips_seg_logits_of(blue)
    e = np.exp(logits - logits.max(axis=-1, keepdims=True))
    softmax = e / e.sum(axis=-1, keepdims=True)
    return np.rint(255.0 * softmax.max(axis=-1)).astype(np.uint8)
