# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Capturing native stderr and reading LiteRT's adapter line (no GPU needed)."""

import os
import subprocess
import sys

from dense_perception.core.backends.native_log import Adapter, NativeLog, capture_native_stderr

# Lines as LiteRT 2.3 / Dawn print them (environment.cc), on lavapipe and on an NVIDIA GPU.
LAVAPIPE = ("I0000 00:00:1796276096.466594    7388 environment.cc:532] Selected adapter: llvmpipe "
            "(LLVM 15.0.6, 256 bits), arch=software, vendor=mesa, backend=Vulkan, "
            "adapterType=CPU / Software")
NVIDIA = ("I0000 00:00:1.1 1 environment.cc:532] Selected adapter: NVIDIA H200, arch=hopper, "
          "vendor=nvidia, backend=Vulkan, adapterType=Discrete GPU")


def test_capture_gets_what_a_child_process_writes_on_fd2():
    """Native code writes to fd 2 directly; a child process inheriting fd 2 stands for it."""
    with capture_native_stderr() as log:
        subprocess.run([sys.executable, "-c", "import os; os.write(2, b'from native code\\n')"],
                       check=True)
        os.write(2, b"second line\n")
    assert log.text == "from native code\nsecond line\n"


def test_nested_capture_echoes_into_the_outer_one():
    with capture_native_stderr() as outer:
        with capture_native_stderr(echo=True) as inner:
            os.write(2, b"LiteRT says hello\n")
    assert inner.text == "LiteRT says hello\n"
    assert outer.text == "LiteRT says hello\n"


def test_adapter_line_is_parsed():
    lava = NativeLog(f"INFO: something\n{LAVAPIPE}\nINFO: more\n").adapter()
    assert lava == Adapter(name="llvmpipe (LLVM 15.0.6, 256 bits)", backend="Vulkan",
                           type="CPU / Software", vendor="mesa", arch="software")
    assert lava.is_software
    nvidia = NativeLog(NVIDIA).adapter()
    assert nvidia.name == "NVIDIA H200" and nvidia.type == "Discrete GPU"
    assert not nvidia.is_software
    assert nvidia.describe() == "NVIDIA H200 (Vulkan, Discrete GPU)"
    assert NativeLog("INFO: no adapter here").adapter() is None


def test_gpu_reason_picks_the_failure_lines():
    text = ("INFO: Failed to load OpenCL library with dlopen: libOpenCL.so\n"
            "Warning: Vulkan shaderUniformBufferArrayDynamicIndexing required\n"
            "ERROR: [webgpu] No adapters found.\n")
    assert NativeLog(text).gpu_reason() == ("Vulkan shaderUniformBufferArrayDynamicIndexing "
                                            "required; No adapters found.")
