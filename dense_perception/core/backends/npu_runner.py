# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The NPU backend: a LiteRT vendor plugin (Intel OpenVINO, Qualcomm QNN) through CompiledModel.

ai-edge-litert 2.3 ships compiler plugins (they turn the graph into the vendor's bytecode) and,
for Intel, a dispatch library (it runs that bytecode) under ``ai_edge_litert/vendors/``.

* **Intel OpenVINO.** Both libraries link ``libopenvino.so.<N>`` and its TFLite frontend of one
  exact OpenVINO release (2.3.0: ``.2631`` = OpenVINO 2026.3.1), found through a RUNPATH into
  ``site-packages/openvino/libs`` of the *same* site-packages. :func:`openvino_runtime` checks
  that release is installed (pip's ``openvino`` wheel, wherever it is on ``sys.path``) and
  preloads its two libraries with ``RTLD_GLOBAL``, so the plugin finds them without
  ``LD_LIBRARY_PATH`` also when openvino sits in another folder (e.g. a venv over the system's
  packages). ``openvino_device`` picks OpenVINO's NPU, GPU or CPU device (CPU: a test bed).
* **Compilation cache.** The model is compiled ahead of time once, by the wheel's
  ``apply_plugin_main`` in a subprocess, into a .tflite holding the vendor bytecode, kept under
  ``npu_cache_dir`` keyed by the model's SHA-256, the plugin (LiteRT and OpenVINO versions) and
  the device; later starts load that file (no compiler). Without the tool the model is
  JIT-compiled at every start and the diagnostics say so. (OpenVINO's own ``CACHE_DIR`` config
  is not used: with the 2.3.0 plugin its cached blob fails to load on the second start.)
* **Qualcomm.** ``QualcommOptions`` on the HTP; needs LiteRT's Qualcomm dispatch library and
  Qualcomm's QNN libraries in ``npu_library_dir`` (no ai-edge-litert 2.3.0 wheel has them: the
  aarch64 wheel ships no vendor plugin at all); JIT-compiled, not cached. Untested here (no
  Qualcomm hardware): tools/checks/npu_check.sh checks a board.

``backend: auto`` never picks the NPU (docs/npu.md says why).
"""

from __future__ import annotations

import contextlib
import ctypes
import hashlib
import importlib.metadata
import importlib.util
import os
import platform
import re
import subprocess
import time
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Callable

from .native_log import capture_native_stderr
from ..setting_values import GPU_MAX_RESTARTS, GPU_TIMEOUT_S, NPU_VENDORS, OPENVINO_DEVICES

Log = Callable[[str], None]
COMPILE_TIMEOUT_S = 1800.0  # an NPU compile of a real model takes seconds to minutes
_SONAME_RE = re.compile(rb"libopenvino\.so\.(\d{4,})")
_DEVICE_RE = re.compile(r"Using Intel OpenVINO device: (\S+)")
_OV_LIBS = ("libopenvino.so.{n}", "libopenvino_tensorflow_lite_frontend.so.{n}")


class NpuUnavailableError(RuntimeError):
    """The NPU backend cannot start; the message is one line saying what is missing and how to
    fix it."""


def default_cache_dir() -> str:
    """Where compiled models are kept: $XDG_CACHE_HOME (or ~/.cache)/dense_perception/npu."""
    base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
    return os.path.join(base, "dense_perception", "npu")


def resolve_cache_dir(value: str) -> str:
    """``npu_cache_dir``: '' = :func:`default_cache_dir`, 'off' = no cache ('' returned)."""
    if value == "off":
        return ""
    return os.path.expanduser(value) if value else default_cache_dir()


def _litert_dir() -> Path:
    import ai_edge_litert
    return Path(ai_edge_litert.__file__).resolve().parent


def _litert_version() -> str:
    from .runner_base import litert_version
    return litert_version()


def resolve_vendor(vendor: str) -> str:
    """``auto``: Intel OpenVINO on x86_64, Qualcomm on aarch64 (the boards that have NPUs)."""
    if vendor not in NPU_VENDORS:
        raise NpuUnavailableError(f"npu_vendor '{vendor}' is unknown; allowed: "
                                  f"{', '.join(NPU_VENDORS)}")
    if vendor != "auto":
        return vendor
    return "qualcomm" if platform.machine().lower() in ("aarch64", "arm64") else "intel_openvino"


@dataclass(frozen=True)
class OpenVinoRuntime:
    """The OpenVINO release the installed LiteRT plugin links, found and preloaded."""

    version: str   # the installed openvino package, e.g. "2026.3.1"
    soname: str    # e.g. "2631" (libopenvino.so.2631)
    libs: Path     # the folder holding its libraries
    plugin_dir: Path  # ai_edge_litert/vendors/intel_openvino


def soname_release(soname: str) -> str:
    """OpenVINO's release for a library suffix: '2631' -> '2026.3.1' (YY, minor, patch)."""
    return f"20{soname[:2]}.{soname[2]}.{soname[3:]}" if len(soname) >= 4 else soname


def openvino_runtime() -> OpenVinoRuntime:
    """Check that the OpenVINO release the LiteRT plugin links is installed and preload it
    (``RTLD_GLOBAL``, before LiteRT opens the plugin). NpuUnavailableError says what is wrong."""
    plugin_dir = _litert_dir() / "vendors" / "intel_openvino"
    dispatch = plugin_dir / "dispatch" / "libLiteRtDispatch_IntelOpenvino.so"
    if not dispatch.is_file():
        raise NpuUnavailableError(
            f"ai-edge-litert {_litert_version()} on {platform.machine()} has no Intel OpenVINO "
            f"plugin ({dispatch} missing): the x86_64 wheel of ai-edge-litert 2.3 has it")
    found = _SONAME_RE.search(dispatch.read_bytes())
    if not found:
        raise NpuUnavailableError(f"cannot tell which OpenVINO release {dispatch.name} links")
    soname = found.group(1).decode()
    release = soname_release(soname)
    fix = f"pip install openvino=={release} (or pip install 'dense_perception[openvino]')"
    spec = importlib.util.find_spec("openvino")
    if spec is None or not spec.submodule_search_locations:
        raise NpuUnavailableError(f"OpenVINO runtime {release} not found (the LiteRT plugin "
                                  f"links libopenvino.so.{soname}): {fix}")
    libs = Path(list(spec.submodule_search_locations)[0]) / "libs"
    try:
        version = importlib.metadata.version("openvino")
    except importlib.metadata.PackageNotFoundError:
        version = "unknown"
    names = [n.format(n=soname) for n in _OV_LIBS]
    missing = [n for n in names if not (libs / n).is_file()]
    if missing:
        raise NpuUnavailableError(
            f"OpenVINO {version} is installed but ai-edge-litert {_litert_version()}'s plugin "
            f"needs OpenVINO {release} ({missing[0]} not in {libs}): {fix}")
    for name in names:
        try:
            ctypes.CDLL(str(libs / name), mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            raise NpuUnavailableError(f"OpenVINO {version}'s {name} does not load ({exc})") \
                from None
    return OpenVinoRuntime(version, soname, libs, plugin_dir)


def openvino_devices() -> list[str]:
    """The devices OpenVINO sees here, e.g. ['CPU'] or ['CPU', 'GPU', 'NPU']."""
    import openvino
    return list(openvino.Core().available_devices)


def _model_hash(model_path: str) -> str:
    digest = hashlib.sha256()
    with open(model_path, "rb") as f:
        for block in iter(lambda: f.read(1 << 20), b""):
            digest.update(block)
    return digest.hexdigest()[:16]


def cache_path(cache_dir: str, model_path: str, runtime: OpenVinoRuntime, device: str) -> Path:
    """The compiled model's file: keyed by model hash, plugin (LiteRT + OpenVINO) and device."""
    key = (f"{Path(model_path).stem}-{_model_hash(model_path)}-intel_openvino-litert"
           f"{_litert_version()}-ov{runtime.version.split('-')[0]}-{device.lower()}.tflite")
    return Path(cache_dir).expanduser() / key


def compile_ahead(model_path: str, out: Path, runtime: OpenVinoRuntime, device: str) -> float:
    """Compile ``model_path`` for ``device`` with the wheel's apply_plugin_main into ``out``
    (written whole or not at all); the seconds it took. NpuUnavailableError with its error."""
    tool = _litert_dir() / "tools" / "apply_plugin_main"
    if not tool.is_file():
        raise NpuUnavailableError(f"no ahead-of-time compiler in ai-edge-litert "
                                  f"{_litert_version()} ({tool.name} missing)")
    out.parent.mkdir(parents=True, exist_ok=True)
    partial = out.with_name(f".{out.name}.{os.getpid()}.partial")
    # LD_LIBRARY_PATH for the tool's own process only (a fresh process cannot be preloaded).
    env = dict(os.environ, LD_LIBRARY_PATH=os.pathsep.join(
        [str(runtime.libs), os.environ.get("LD_LIBRARY_PATH", "")]).rstrip(os.pathsep))
    start = time.perf_counter()
    try:
        done = subprocess.run(
            [str(tool), "--cmd=apply", f"--model={model_path}", f"--o={partial}",
             "--soc_manufacturer=IntelOpenVINO", "--soc_model=ALL",
             f"--libs={runtime.plugin_dir / 'compiler'}",
             f"--intel_openvino_graph_backends={device.lower()}"],
            env=env, capture_output=True, text=True, timeout=COMPILE_TIMEOUT_S, check=False)
        if done.returncode != 0 or not partial.is_file() or partial.stat().st_size == 0:
            errors = [ln for ln in (done.stdout + done.stderr).splitlines() if "ERROR" in ln]
            raise NpuUnavailableError(f"apply_plugin_main failed (status {done.returncode}"
                                      f"{': ' + errors[-1].strip() if errors else ''})")
        os.replace(partial, out)
    except subprocess.TimeoutExpired:
        raise NpuUnavailableError(f"apply_plugin_main did not finish in "
                                  f"{COMPILE_TIMEOUT_S:g} s") from None
    finally:
        with contextlib.suppress(OSError):
            partial.unlink()
    return time.perf_counter() - start


def _openvino_model(model_path: str, runtime: OpenVinoRuntime, device: str):
    """A CompiledModelRunner through the OpenVINO plugin on ``device`` and LiteRT's log."""
    from ai_edge_litert import compiled_model as cm
    from ai_edge_litert.environment import Environment, EnvironmentOptions
    from ai_edge_litert.intel_openvino_options import (IntelOpenVinoGraphBackend,
                                                       IntelOpenVinoOptions)
    from .runner_base import CompiledModelRunner

    env = Environment.create(options=EnvironmentOptions(
        runtime_path=str(_litert_dir()),
        compiler_plugin_path=str(runtime.plugin_dir / "compiler"),
        dispatch_library_path=str(runtime.plugin_dir / "dispatch")))
    options = cm.Options(
        cm.HardwareAccelerator.NPU | cm.HardwareAccelerator.CPU,  # CPU: ops the NPU lacks
        intel_openvino_options=IntelOpenVinoOptions(
            graph_backend=IntelOpenVinoGraphBackend[device]))
    with capture_native_stderr(echo=True) as native:
        try:
            runner = CompiledModelRunner(model_path, "npu", options=options, environment=env)
        except RuntimeError as exc:
            raise NpuUnavailableError(" ".join(str(exc).split())[:300]) from None
    used = _DEVICE_RE.findall(native.text)
    if not used:  # LiteRT fell back to XNNPACK without saying so in Python
        raise NpuUnavailableError("LiteRT did not run the model through the OpenVINO plugin "
                                  "(no 'Using Intel OpenVINO device' in its log)")
    runner.device = used[-1]
    return runner


def _open_openvino(model_path: str, device: str, cache_dir: str, log: Log):
    if device not in OPENVINO_DEVICES:
        raise NpuUnavailableError(f"openvino_device '{device}' is unknown; allowed: "
                                  f"{', '.join(OPENVINO_DEVICES)}")
    runtime = openvino_runtime()
    seen = openvino_devices()
    if device not in seen:
        raise NpuUnavailableError(f"no {device} device; OpenVINO {runtime.version} sees: "
                                  f"{', '.join(seen) or 'nothing'}")
    cached = cache_path(cache_dir, model_path, runtime, device) if cache_dir else None
    compiled = ""
    if cached is not None and not cached.is_file():
        try:
            seconds = compile_ahead(model_path, cached, runtime, device)
            compiled = f"compiled in {seconds:.2f} s, cached as {cached}"
        except (NpuUnavailableError, OSError) as exc:
            log(f"NPU compilation cache unavailable ({exc}); compiling at every start")
            cached = None
    start = time.perf_counter()
    if cached is not None:
        try:
            runner = _openvino_model(str(cached), runtime, device)
            load = time.perf_counter() - start
            runner.compile_note = compiled + f", loaded in {load:.2f} s" if compiled else \
                f"loaded from cache {cached} in {load:.2f} s"
            runner.from_cache = not compiled
        except NpuUnavailableError as exc:  # a damaged or stale entry: drop it, compile
            log(f"cached NPU model {cached} did not load ({exc}); removed, compiling again")
            with contextlib.suppress(OSError):
                cached.unlink()
            cached = None
    if cached is None:
        start = time.perf_counter()
        runner = _openvino_model(model_path, runtime, device)
        runner.compile_note = f"JIT-compiled in {time.perf_counter() - start:.2f} s (not cached)"
        runner.from_cache = False
    runner.plugin = (f"Intel OpenVINO {runtime.version.split('-')[0]} (LiteRT plugin, "
                     f"ai-edge-litert {_litert_version()})")
    return runner


def _open_qualcomm(model_path: str, library_dir: str, log: Log):
    """Qualcomm HTP through QualcommOptions (JIT; untested here, see the module docstring).

    ``library_dir`` holds LiteRT's Qualcomm dispatch library (libLiteRtDispatch_Qualcomm.so),
    optionally its compiler plugin, and Qualcomm's QNN libraries (libQnn*.so), which are
    preloaded. The aarch64 ai-edge-litert 2.3.0 wheel ships none of them; the x86_64 one only
    the compiler plugin (it links the QNN SDK's libQnnHtp.so and others)."""
    from ai_edge_litert import compiled_model as cm
    from ai_edge_litert.environment import Environment, EnvironmentOptions
    from ai_edge_litert.qualcomm_options import QualcommBackend, QualcommOptions
    from .runner_base import CompiledModelRunner

    folder = Path(library_dir).expanduser() if library_dir else None
    if folder is None or not list(folder.glob("libLiteRtDispatch_Qualcomm*.so")):
        raise NpuUnavailableError(
            "no Qualcomm dispatch library (libLiteRtDispatch_Qualcomm.so) in npu_library_dir "
            f"'{library_dir}': set it to the folder holding it and Qualcomm's QNN libraries "
            "(the ai-edge-litert wheel has neither; docs/npu.md)")
    for lib in sorted(folder.glob("libQnn*.so")):  # the plugin opens them by name
        try:
            ctypes.CDLL(str(lib), mode=ctypes.RTLD_GLOBAL)
        except OSError as exc:
            log(f"Qualcomm library {lib.name} does not load ({exc})")
    wheel_compiler = _litert_dir() / "vendors" / "qualcomm" / "compiler"
    compiler = folder if list(folder.glob("libLiteRtCompilerPlugin_Qualcomm*.so")) else (
        wheel_compiler if wheel_compiler.is_dir() else None)
    env = Environment.create(options=EnvironmentOptions(
        runtime_path=str(_litert_dir()), compiler_plugin_path=str(compiler or ""),
        dispatch_library_path=str(folder)))
    options = cm.Options(cm.HardwareAccelerator.NPU | cm.HardwareAccelerator.CPU,
                         qualcomm_options=QualcommOptions(backend=QualcommBackend.HTP))
    start = time.perf_counter()
    try:
        runner = CompiledModelRunner(model_path, "npu", options=options, environment=env)
    except RuntimeError as exc:
        raise NpuUnavailableError(" ".join(str(exc).split())[:300]) from None
    runner.device = "HTP"
    runner.compile_note = (f"JIT-compiled in {time.perf_counter() - start:.2f} s (not cached)"
                           if compiler else "no compiler plugin: the model must be compiled "
                           "for the NPU already")
    runner.from_cache = False
    runner.plugin = f"Qualcomm QNN (LiteRT plugin, ai-edge-litert {_litert_version()})"
    return runner


def open_npu_runner(model_path: str, vendor: str = "auto", device: str = "NPU",
                    cache_dir: str = "", log: Log = print, warn: Log | None = None,
                    library_dir: str = ""):
    """The NPU runner (a CompiledModelRunner with ``vendor``, ``device``, ``plugin``,
    ``compile_note`` and ``from_cache``). ``device`` is OpenVINO's; ``cache_dir`` as
    :func:`resolve_cache_dir`; ``library_dir``: the vendor's libraries (Qualcomm).
    ModelLoadError, one line, when it cannot start."""
    from .runner_base import ModelLoadError, litert_version

    try:
        if litert_version().startswith("1."):
            raise NpuUnavailableError(f"ai-edge-litert {litert_version()} has no NPU "
                                      "accelerator options in Python (needs 2.3)")
        vendor = resolve_vendor(vendor)
        runner = (_open_qualcomm(model_path, library_dir, log) if vendor == "qualcomm"
                  else _open_openvino(model_path, device, resolve_cache_dir(cache_dir), log))
    except NpuUnavailableError as exc:
        raise ModelLoadError(f"the NPU backend did not start: {exc}. Fix it or set backend "
                             "to 'auto' or 'cpu' (docs/npu.md)") from None
    runner.vendor = vendor
    runner.description = (f"npu ({runner.plugin}, device {runner.device}; LiteRT "
                          "CompiledModel)")
    _log_started(runner, log, warn or log)
    return runner


def open_npu_process_runner(model_path: str, options: dict[str, Any], log: Log, warn: Log,
                            timeout_s: float | None = None, max_restarts: int | None = None):
    """Backend npu in a worker process (:class:`~.gpu_runner.GpuProcessRunner`, the GPU's):
    OpenVINO's dispatch holds the GIL for the whole inference (measured on DA3-Small: a Python
    thread got 4 time slices a second during it, 848 beside XNNPACK), which would freeze the
    node's executor. ``timeout_s``, ``max_restarts``: gpu_timeout and gpu_max_restarts (None:
    their defaults). ModelLoadError, one line, when it cannot start."""
    from .gpu_runner import GpuProcessRunner, GpuUnavailableError
    from .runner_base import ModelLoadError

    try:
        runner = GpuProcessRunner(
            model_path, timeout_s=GPU_TIMEOUT_S if timeout_s is None else timeout_s,
            max_restarts=GPU_MAX_RESTARTS if max_restarts is None else max_restarts,
            npu=dict(options), startup_timeout_s=COMPILE_TIMEOUT_S)  # compiling: minutes
    except GpuUnavailableError as exc:
        message = " ".join(str(exc).split())
        if not message.startswith("the NPU backend did not start"):  # the worker died
            message = (f"the NPU backend did not start: {message}. Fix it or set backend to "
                       "'auto' or 'cpu' (docs/npu.md)")
        raise ModelLoadError(message) from None
    for note in runner.notes:  # what the worker logged while loading (the cache's fate)
        if not note.startswith(("NPU: ", "the model's graph")):
            log(note)
    _log_started(runner, log, warn)
    return runner


def _log_started(runner, log: Log, warn: Log) -> None:
    accelerated = "fully accelerated" if runner.fully_accelerated else \
        "NOT fully accelerated (some ops run on the CPU)"
    log(f"NPU: {runner.plugin}, device {runner.device}; graph {accelerated}; "
        f"{runner.compile_note}")
    if not runner.fully_accelerated:
        warn(f"the model's graph is {accelerated} on the NPU")
