# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""What a model file's input and output tensors hold, and how a runner turns them into float32.

Checked once per file, at load, before anything runs, by every front end and every backend
(:func:`check_model_io`; :func:`~..backends.runner.check_model_file` calls it):

* dtypes: float32 passes; float16 is cast; uint8, int8 and int16 with one scale and zero point
  (per-tensor quantisation) are quantised on the way in, ``q = round(x / scale) + zero_point``
  clipped to the type, and dequantised on the way out, ``x = (q - zero_point) * scale``: the
  preprocessing and post-processing always see float32, as for a float file. Anything else
  (per-channel quantisation on an input or output, a quantised type without its scale, int32,
  bool, ...) is refused in one line.
* dynamic sizes: a dimension that is -1 in the file's signature runs at its stored size when
  that is a real size (the file's own suggestion). TF's converter stores 1 for it
  (``[1,1,1,3]`` for ``[1,-1,-1,3]``): a placeholder, which is refused in one line rather
  than run at 1x1.

The CompiledModel backends (GPU, NPU, fp16 CPU) are fed float32 only: a file with other I/O
runs on the XNNPACK Interpreter (:mod:`..backends.runner` decides, in one place).
"""

from __future__ import annotations

import math
from dataclasses import dataclass

import numpy as np

from .tflite_file import TensorInfo, TfliteSignature

# Quantised types read with the file's own scale and zero point, and their code ranges.
QUANTISED = {"uint8": (0, 255), "int8": (-128, 127), "int16": (-32768, 32767)}
HANDLED = "float32, float16, and uint8/int8/int16 with one scale and zero point"


class ModelIOError(ValueError):
    """A model file's inputs or outputs cannot be read right; the message says why (one line)."""


@dataclass(frozen=True)
class Codec:
    """How one tensor's values map to float32: identity (float32), a cast (float16), or
    ``(q - zero_point) * scale`` (quantised)."""

    dtype: str = "float32"
    scale: float = 1.0
    zero_point: int = 0

    @property
    def quantised(self) -> bool:
        """Whether values are integer codes with a scale and zero point."""
        return self.dtype in QUANTISED

    def describe(self) -> str:
        """``float32``, or e.g. ``uint8 (scale 0.02, zero point 10)``."""
        if not self.quantised:
            return self.dtype
        return f"{self.dtype} (scale {self.scale:.6g}, zero point {self.zero_point})"

    def encode(self, values: np.ndarray, dest: np.ndarray, scratch: np.ndarray) -> None:
        """Write float32 ``values`` into the tensor ``dest`` (``scratch``: float32, their
        shape; used for quantising so that ``values`` stay as written)."""
        if not self.quantised:
            dest[...] = values
            return
        low, high = QUANTISED[self.dtype]
        np.divide(values, np.float32(self.scale), out=scratch)
        np.rint(scratch, out=scratch)
        scratch += np.float32(self.zero_point)
        np.clip(scratch, low, high, out=scratch)
        dest[...] = scratch

    def decode(self, codes: np.ndarray, out: np.ndarray) -> np.ndarray:
        """The float32 values of the tensor ``codes``, written into ``out``."""
        if not self.quantised:
            out[...] = codes
            return out
        np.subtract(codes, self.zero_point, out=out, dtype=np.float32)
        out *= np.float32(self.scale)
        return out


FLOAT32 = Codec()


@dataclass(frozen=True)
class ModelIO:
    """The codecs of a file's inputs and outputs, in model order."""

    inputs: tuple[Codec, ...]
    outputs: tuple[Codec, ...]

    @property
    def float32(self) -> bool:
        """Whether every input and output is float32 already (any backend can run it)."""
        return all(c.dtype == "float32" for c in self.inputs + self.outputs)

    def describe(self) -> str:
        """The first tensor that is not float32, e.g. ``input uint8 (scale ..)``."""
        for role, codecs in (("input", self.inputs), ("output", self.outputs)):
            for i, codec in enumerate(codecs):
                if codec.dtype != "float32":
                    return f"{role} {i} is {codec.describe()}"
        return "float32 inputs and outputs"


def tensor_codec(tensor: TensorInfo, role: str, source: str = "the model file") -> Codec:
    """The codec of one tensor (``role``: e.g. "input 0"); ModelIOError when it is not one we
    can read right."""
    where = f"{source}: {role} '{tensor.name}' is {tensor.dtype}"
    if tensor.dtype in ("float32", "float16"):
        return Codec(tensor.dtype)
    if tensor.dtype not in QUANTISED:
        raise ModelIOError(f"{where}, which is not read here (handled: {HANDLED}); convert it "
                           "with float32 or quantised inputs and outputs")
    if len(tensor.scales) > 1 or len(tensor.zero_points) > 1:
        raise ModelIOError(
            f"{where} with per-channel quantisation ({len(tensor.scales)} scales along "
            f"dimension {tensor.quantized_dimension}), which is not read here (handled: "
            f"{HANDLED}); convert it with per-tensor quantised or float inputs and outputs")
    if not tensor.scales:
        raise ModelIOError(f"{where} without a scale and zero point: the file does not say "
                           f"what its codes mean (handled: {HANDLED})")
    scale = tensor.scales[0]
    zero_point = tensor.zero_points[0] if tensor.zero_points else 0
    low, high = QUANTISED[tensor.dtype]
    if not (math.isfinite(scale) and scale > 0) or not low <= zero_point <= high:
        raise ModelIOError(f"{where} with scale {scale:g} and zero point {zero_point}, which "
                           f"do not describe {tensor.dtype} codes (scale > 0, zero point in "
                           f"{low}..{high})")
    return Codec(tensor.dtype, scale, zero_point)


def dynamic_problem(tensor: TensorInfo, role: str, source: str = "the model file") -> str | None:
    """Why a dynamic tensor cannot run at its stored size (a placeholder), or None.

    A -1 in the batch dimension (first) is fine at 1; elsewhere the stored value is the size
    LiteRT runs at, which is the file's own suggestion when it is > 1 and a converter's
    placeholder when it is 1 or 0."""
    placeholders = [i for i, (d, s) in enumerate(zip(tensor.shape_signature, tensor.shape))
                    if d < 0 and (i > 0 or s != 1) and s <= 1]
    if not placeholders:
        return None
    text = ",".join(str(d) for d in tensor.shape_signature)
    stored = ",".join(str(d) for d in tensor.shape)
    return (f"{source}: {role} '{tensor.name}' has a dynamic size ([{text}], stored [{stored}]: "
            "a converter's placeholder, not a size), so it would run at 1 pixel; convert it "
            "with a fixed input size (e.g. [1,H,W,3] at your camera's aspect)")


def check_model_io(signature: TfliteSignature, source: str = "the model file") -> ModelIO:
    """The codecs of the file's inputs and outputs; ModelIOError (one line) for a dtype,
    quantisation or dynamic size that cannot run right."""
    for role, tensors in (("input", signature.inputs), ("output", signature.outputs)):
        for i, tensor in enumerate(tensors):
            problem = dynamic_problem(tensor, f"{role} {i}", source)
            if problem:
                raise ModelIOError(problem)
    return ModelIO(tuple(tensor_codec(t, f"input {i}", source)
                         for i, t in enumerate(signature.inputs)),
                   tuple(tensor_codec(t, f"output {i}", source)
                         for i, t in enumerate(signature.outputs)))


def details_codec(detail: dict) -> Codec:
    """The codec of a tensor from LiteRT's own ``get_input_details`` / ``get_output_details``
    entry (the runner's view of the file; ModelIOError as :func:`tensor_codec`)."""
    quant = detail.get("quantization_parameters") or {}
    scales = tuple(float(v) for v in np.ravel(quant.get("scales", ())))
    zero_points = tuple(int(v) for v in np.ravel(quant.get("zero_points", ())))
    shape = tuple(int(d) for d in detail.get("shape", ()))
    tensor = TensorInfo(str(detail.get("name", "")), shape, shape,
                        np.dtype(detail["dtype"]).name, scales, zero_points,
                        int(quant.get("quantized_dimension", 0)))
    return tensor_codec(tensor, "tensor", "LiteRT")
