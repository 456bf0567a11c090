#!/usr/bin/env bash
# backend npu on a Qualcomm board (a Snapdragon / QCS robotics board with a Hexagon NPU, Linux),
# which this project could not test: the board's NPU devices, the libraries, then the model on
# the HTP against XNNPACK (outputs' Pearson r, invoke times) in the active Python environment
# (dense_perception installed, e.g. `pip install .`). Exit status 0 only if the NPU ran it.
#
#   tools/checks/npu_check.sh LIB_DIR [MODEL]
#
# LIB_DIR: LiteRT's Qualcomm dispatch library (libLiteRtDispatch_Qualcomm.so, optionally
# libLiteRtCompilerPlugin_Qualcomm.so for on-board compilation) and Qualcomm's QNN libraries
# (libQnnHtp.so, libQnnSystem.so, libQnnHtpV*Stub.so, and the Hexagon side libQnnHtpV*Skel.so)
# from the board's QAIRT / QNN SDK; the node's npu_library_dir. No ai-edge-litert 2.3.0 wheel
# has them. MODEL: default the bundled TIPSv2 test model.
set -uo pipefail
cd "$(dirname "$0")/../.."
LIBS=${1:?usage: tools/checks/npu_check.sh LIB_DIR [MODEL]}
MODEL=${2:-models/test_tipsv2_b14_dpt.tflite}
PY=${PYTHON:-python3}

echo "== board: $(uname -m), $(tr -d '\0' </proc/device-tree/model 2>/dev/null || echo unknown)"
echo "== FastRPC devices (how the CPU reaches the Hexagon DSP/NPU):"
ls -l /dev/fastrpc-* /dev/adsprpc-smd /dev/cdsprpc-smd 2>/dev/null ||
  echo "   none: the kernel exposes no FastRPC device; the HTP cannot be used"
echo "== libraries in $LIBS:"
for lib in 'libLiteRtDispatch_Qualcomm*.so' 'libLiteRtCompilerPlugin_Qualcomm*.so' \
           'libQnnHtp.so' 'libQnnSystem.so' 'libQnnHtpV*Stub.so' 'libQnnHtpV*Skel.so'; do
  found=$(compgen -G "$LIBS/$lib" | head -1)
  echo "   ${found:-MISSING $lib}"
done
# The DSP side loads its skeleton libraries from ADSP_LIBRARY_PATH.
export ADSP_LIBRARY_PATH="${ADSP_LIBRARY_PATH:-$LIBS}"

"$PY" - "$MODEL" "$LIBS" <<'EOF'
import sys
import time

from dense_perception.core.backends.cpu_precision import output_correlations, smooth_test_input
from dense_perception.core.backends.runner import BackendConfig, ModelLoadError, open_runner

model, libs = sys.argv[1], sys.argv[2]
try:
    npu = open_runner(model, BackendConfig("npu", npu={"vendor": "qualcomm", "library_dir": libs}),
                      log=print)
except ModelLoadError as exc:
    print(f"FAILED: {exc}")
    sys.exit(1)
cpu = open_runner(model, BackendConfig("cpu"), log=print)
x = smooth_test_input(cpu.input_shapes[0])
outputs, times = [], []
for runner in (cpu, npu):
    runner.input_buffer()[...] = x
    outputs.append([o.copy() for o in runner.run()])
    start = time.perf_counter()
    for _ in range(10):
        runner.run()
    times.append((time.perf_counter() - start) * 100.0)
print(f"== {npu.description}")
print(f"   fully accelerated: {npu.fully_accelerated}; {npu.compile_note}")
print(f"   invoke: NPU {times[1]:.1f} ms, XNNPACK {times[0]:.1f} ms")
print(f"   NPU vs XNNPACK outputs, Pearson r: {output_correlations(*outputs)}")
EOF
status=$?
[ $status -eq 0 ] && echo "== then: ros2 run dense_perception dense_perception_node --ros-args" \
  "-p backend:=npu -p npu_vendor:=qualcomm -p npu_library_dir:=$LIBS -p model_path:=..."
exit $status
