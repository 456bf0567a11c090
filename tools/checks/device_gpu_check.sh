#!/usr/bin/env bash
# The GPU backend on a real NVIDIA GPU (the device machine of /work/.library/device/README.md):
# LiteRT's WebGPU accelerator through NVIDIA's Vulkan driver; bare GPU invoke (adapter named),
# GPU-vs-CPU fidelity through the pipeline beside the cards' figures, and the node's two-stage
# worker structure (inference thread + post-processing thread, fed 30 fps) vs bare invoke.
#
# Its figures from an NVIDIA H200 (driver 580.159.04) are in docs/gpu.md's
# 'Measured on a real GPU'. The loader found NVIDIA's ICD without VK_DRIVER_FILES there. Three steps:
#
#   1. Here (this machine, repo root), once:       tools/checks/device_gpu_check.sh prep
#      Downloads the Vulkan loader debs into .gl/ and the ai-edge-litert cp312 wheel into .whl/
#      (both git-excluded), and copies the DA3-class bench model into .devcarry/ if built
#      (.cache/bench_models/da3_class.tflite; make bench builds it). Prints what to carry.
#   2. Device call A (test models; about 3 min):
#        run(command="tools/checks/device_gpu_check.sh run", carry=[".gl", ".whl"], timeout_s=480)
#   3. Device call B, within the 30 s the machine stays warm (it reuses call A's install in
#      /tmp; DA3-class, 53 MiB, does not fit into call A's 64 MiB with the wheel):
#        run(command="tools/checks/device_gpu_check.sh run", carry=[".devcarry"], timeout_s=480)
#
# The TIPSv2-class bench model (302 MiB) cannot travel (64 MiB a call), and building it there
# needs litert-converter, whose wheel alone is 67 MiB: TIPSv2 fidelity on the device is measured
# on the TIPSv2 test model (same signature, closed-form outputs) only. rclpy is not on the
# device (ROS wheels need empy, which has no wheel), so the node's rate is measured as its
# two-stage worker structure without DDS (tools/checks/gpu_check.py two_stage_rate).
# Everything the run step prints also lands in $OUT/device_gpu_check.log.
set -uo pipefail
cd "$(dirname "$0")/../.."

pip_download() {
  python3 -m pip download -q --no-deps --only-binary=:all: --python-version 3.12 \
    --implementation cp --platform manylinux_2_28_x86_64 --platform manylinux_2_27_x86_64 \
    --platform manylinux_2_17_x86_64 --platform manylinux2014_x86_64 -d .whl "$@"
}

prep() {
  local exclude; exclude=$(git rev-parse --git-path info/exclude)
  for d in /.gl/ /.whl/ /.devcarry/; do grep -qx "$d" "$exclude" || echo "$d" >> "$exclude"; done
  mkdir -p .gl .whl .devcarry /tmp/amd64/partial
  local o='-oAPT::Architecture=amd64 -oAPT::Architectures=amd64 -oDir::State::Lists=/tmp/amd64'
  # shellcheck disable=SC2086
  apt-get $o update -qq && (cd .gl && apt-get $o download libvulkan1 libegl1 libglvnd0 \
    libopengl0 libgl1 libglx0 libgles2)
  pip_download ai-edge-litert==2.3.0   # its other needs (numpy, flatbuffers, ml-dtypes, ...) are there
  local built="${BENCH_MODELS:-.cache/bench_models}/da3_class.tflite"
  if [ -f "$built" ]; then
    cp "$built" .devcarry/
  else
    echo "prep: no $built (make bench builds it; BENCH_MODELS=folder); call B skipped"
  fi
  du -sh .gl .whl .devcarry
}

run() {
  local log="${OUT:-/tmp}/device_gpu_check.log"
  exec > >(tee "$log") 2>&1
  export PYTHONUNBUFFERED=1
  echo "== $(date -u +%FT%TZ) device GPU check on $(uname -m), $(nproc) cores"
  nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv,noheader || true
  if [ -d .gl ] && ls .gl/*.deb >/dev/null 2>&1; then
    for f in .gl/*.deb; do dpkg -x "$f" /; done
    ldconfig
  fi
  if [ -d .whl ] && ls .whl/*.whl >/dev/null 2>&1; then
    python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
      --target /tmp/site .whl/*.whl || { echo "FAILED: wheel install"; exit 1; }
  fi
  export PYTHONPATH="/tmp/site:$PWD"
  python3 -c "import ai_edge_litert" 2>/dev/null || {
    echo "FAILED: ai_edge_litert not importable: carry .whl (call A) first"; exit 1; }
  [ "$(ldconfig -p | grep -c libvulkan)" -gt 0 ] || echo "WARNING: no libvulkan in ldconfig: carry .gl"
  # The adapter LiteRT selects; NVIDIA's ICD may need naming (device README).
  probe() { timeout 120 python3 -c "
from dense_perception.core.backends.gpu_runner import GpuProcessRunner
r = GpuProcessRunner('models/test_da3_small.tflite'); r.close()
print('ADAPTER', r.adapter.describe() if r.adapter else 'unnamed', 'fully_accelerated', r.fully_accelerated)
" 2>/dev/null | grep ADAPTER; }
  local adapter first; adapter=$(probe); first=$adapter
  if ! grep -qi nvidia <<<"$adapter"; then
    echo "adapter without the ICD named: ${adapter:-none}; naming NVIDIA's ICD"
    export VK_DRIVER_FILES=/usr/local/nvidia/share/vulkan/icd.d/nvidia_icd.json
    export __EGL_VENDOR_LIBRARY_FILENAMES=/usr/local/nvidia/share/glvnd/egl_vendor.d/10_nvidia.json
    adapter=$(probe)
    if [ -z "$adapter" ]; then
      echo "WARNING: NVIDIA's ICD gave no adapter; measuring on: ${first:-none}"
      unset VK_DRIVER_FILES __EGL_VENDOR_LIBRARY_FILENAMES
      adapter=$first
    fi
  fi
  echo "== $adapter"
  [ -n "$adapter" ] || { echo "FAILED: LiteRT found no GPU adapter"; exit 1; }

  local models=()
  [ -f .devcarry/da3_class.tflite ] && models+=(.devcarry/da3_class.tflite)
  [ -f .devcarry/tipsv2_class.tflite ] && models+=(.devcarry/tipsv2_class.tflite)
  [ ${#models[@]} -eq 0 ] && models=(models/test_da3_small.tflite models/test_tipsv2_b14_dpt.tflite)
  for precision in fp16 fp32; do
    echo "== bare invoke, fidelity vs XNNPACK, two-stage rate: ${models[*]} ($precision)"
    timeout 180 python3 -m tools.checks.gpu_check --precision "$precision" --runs 10 \
      --rate-seconds 10 "${models[@]}" 2>>"${OUT:-/tmp}/litert_stderr.log" | grep '^{' \
      || echo "FAILED: tools.checks.gpu_check ($precision), see litert_stderr.log"
  done
  echo "== done $(date -u +%FT%TZ)"
}

case "${1:-}" in
  prep) prep ;;
  run) run ;;
  *) echo "usage: $0 prep|run  (see the comments at the top)"; exit 2 ;;
esac
