"""Turn a fitted 8-bit frame into the model's normalised NCHW float32 input, in place."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from .models import ModelSpec


@dataclass(frozen=True)
class PixelFormat:
    """An 8-bit pixel layout: channels per pixel and where R, G and B sit."""

    name: str
    channels: int
    rgb_index: tuple[int, int, int]


# Pixel layouts the pipeline accepts (names follow sensor_msgs/image_encodings).
PIXEL_FORMATS: dict[str, PixelFormat] = {
    "rgb8": PixelFormat("rgb8", 3, (0, 1, 2)),
    "bgr8": PixelFormat("bgr8", 3, (2, 1, 0)),
    "rgba8": PixelFormat("rgba8", 4, (0, 1, 2)),
    "bgra8": PixelFormat("bgra8", 4, (2, 1, 0)),
    "mono8": PixelFormat("mono8", 1, (0, 0, 0)),
}


def pixel_format(encoding: str) -> PixelFormat:
    """The PixelFormat for ``encoding``; ValueError lists the supported ones otherwise."""
    try:
        return PIXEL_FORMATS[encoding]
    except KeyError:
        raise ValueError(f"unsupported encoding '{encoding}'; supported: "
                         f"{', '.join(PIXEL_FORMATS)}") from None


def to_rgb8(image: np.ndarray, fmt: PixelFormat) -> np.ndarray:
    """An H x W x 3 RGB view or copy of ``image`` (for colouring point clouds and overlays)."""
    if image.ndim == 2:
        image = image[:, :, None]
    if fmt.rgb_index == (0, 1, 2) and image.shape[2] == 3:
        return image
    return np.ascontiguousarray(image[:, :, list(fmt.rgb_index)])


class Preprocessor:
    """Writes ``(x / scale - mean) / std`` as NCHW float32 into a preallocated input buffer.

    The card's formula is folded into one multiply and one subtract per channel, computed
    straight from the strided uint8 view into the destination plane (no float temporaries).
    """

    def __init__(self, spec: ModelSpec) -> None:
        std = np.asarray(spec.std, np.float64)
        self._gain = (1.0 / (spec.scale * std)).astype(np.float32)
        self._offset = (np.asarray(spec.mean, np.float64) / std).astype(np.float32)
        self._height, self._width = spec.input_height, spec.input_width

    def __call__(self, fitted: np.ndarray, fmt: PixelFormat, dest: np.ndarray) -> None:
        """Fill ``dest`` (shape [1, 3, H, W], float32) from ``fitted`` (H x W [x C], uint8)."""
        if fitted.shape[0] != self._height or fitted.shape[1] != self._width:
            raise ValueError(f"fitted frame is {fitted.shape[1]}x{fitted.shape[0]}, model needs "
                             f"{self._width}x{self._height}")
        planes = fitted if fitted.ndim == 3 else fitted[:, :, None]
        for c, src in enumerate(fmt.rgb_index):
            plane = dest[0, c]
            np.multiply(planes[:, :, src], self._gain[c], out=plane, dtype=np.float32)
            if self._offset[c] != 0.0:
                np.subtract(plane, self._offset[c], out=plane)

