#!/usr/bin/env bash
# `make test-arm64`: the ROS-free core test suite on a Debian 12 arm64 userland under
# qemu-user-static, with the aarch64 wheels a Raspberry Pi 5 installs (ai-edge-litert 2.x).
#
# Built from Debian's own packages (qemu-user-static, binfmt-support, debootstrap; apt-get as
# root), cached with a stamp in ~/.cache/dense_perception (DENSE_PERCEPTION_CACHE to move it),
# shared by every clone on the machine: the first run takes minutes, later runs only the tests. rclpy has no aarch64 pip wheel, so the node/ROS tests stay on x86_64.
#
#   tools/arm64/test_arm64.sh [pytest args...]    (default: the tests in ARM64_TESTS below)
#   ARM64_FULL=1 tools/arm64/test_arm64.sh        (also DA3 at 504x280 in fp16: hours emulated)
#   ARM64_RUN=1 tools/arm64/test_arm64.sh CMD...  (CMD in the same place instead of pytest:
#                                                  `make bench-arm64`)
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO=$PWD
CACHE=${DENSE_PERCEPTION_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/dense_perception}
ROOTFS=$CACHE/arm64-rootfs
WHEELS=$CACHE/arm64-wheels
MIRROR=${DEBIAN_MIRROR:-http://deb.debian.org/debian}
# Core, runner, pipeline, models, offline command and export-free tests: no rclpy, no torch.
# (the fp16 agreement tests first: minutes each emulated, they must not start last on one core)
ARM64_TESTS=(test/test_arm64_fp16.py test/test_runner.py test/test_pipeline.py test/test_models.py
             test/test_cli_bags.py test/test_cli_files.py test/test_cli_interrupts.py
             test/test_cli_errors.py test/test_cli_info.py test/test_fit.py test/test_preprocess.py
             test/test_postprocess.py test/test_pointcloud.py test/test_frame_slot_and_timing.py)
say() { echo "test-arm64: $*"; }

# Where it cannot run, it says so in the form .ci/run's table reads, and passes.
if [ "$(id -u)" != 0 ]; then
  say "skipped: needs root (apt-get, debootstrap, chroot); run 'sudo make test-arm64'"; exit 0
fi

# 1. Debian's emulation and bootstrap tools.
missing=()
command -v qemu-aarch64-static >/dev/null || missing+=(qemu-user-static)
command -v update-binfmts >/dev/null || missing+=(binfmt-support)
command -v debootstrap >/dev/null || missing+=(debootstrap)
if [ ${#missing[@]} -gt 0 ]; then
  say "installing ${missing[*]} with apt-get"
  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq "${missing[@]}"
fi

# 2. The kernel must hand aarch64 ELF files to qemu (containers often lack binfmt_misc).
BINFMT=/proc/sys/fs/binfmt_misc
[ -e $BINFMT/register ] || mount -t binfmt_misc binfmt_misc $BINFMT \
  || { say "skipped: cannot mount $BINFMT (a container without it? run on the host or with --privileged)"; exit 0; }
[ -e $BINFMT/qemu-aarch64 ] || update-binfmts --enable qemu-aarch64 \
  || { say "update-binfmts --enable qemu-aarch64 failed"; exit 1; }

# 3. The root filesystem, built when ROOTFS_RECIPE changes, and its venv, brought up to date in
#    place when requirements/arm64.txt changes (the userland is not bootstrapped again for a new
#    wheel). The aarch64 wheels are fetched here (pip's platform selection, into a cache pip
#    reuses), installed there offline.
ROOTFS_RECIPE=1  # bump when the bootstrap below changes
BASE_STAMP=$ROOTFS/.dense-perception-base
VENV_STAMP=$ROOTFS/.dense-perception-venv
VENV_WANT=$(sha256sum < requirements/arm64.txt | cut -c1-16)
# (a root filesystem from before the two stamps, with its single one, is recipe 1's)
[ -e "$BASE_STAMP" ] || [ ! -e "$ROOTFS/.dense-perception-stamp" ] || echo 1 > "$BASE_STAMP"
if [ "$(cat "$BASE_STAMP" 2>/dev/null)" != "$ROOTFS_RECIPE" ]; then
  t0=$SECONDS
  say "building the Debian 12 arm64 root filesystem in $ROOTFS (minutes, once)"
  rm -rf "$ROOTFS" "$ROOTFS.part"
  mkdir -p "$CACHE"
  debootstrap --arch=arm64 --variant=minbase --include=python3,python3-venv \
    bookworm "$ROOTFS.part" "$MIRROR" > "$CACHE/arm64-debootstrap.log" 2>&1 \
    || { tail -20 "$CACHE/arm64-debootstrap.log"; say "debootstrap failed"; exit 1; }
  chroot "$ROOTFS.part" /usr/bin/python3 -m venv /opt/venv
  rm -rf "$ROOTFS.part/var/cache/apt/archives/"*.deb
  echo "$ROOTFS_RECIPE" > "$ROOTFS.part/.dense-perception-base"
  mv "$ROOTFS.part" "$ROOTFS"
  say "root filesystem ready in $((SECONDS - t0)) s"
fi
if [ "$(cat "$VENV_STAMP" 2>/dev/null)" != "$VENV_WANT" ]; then
  say "installing requirements/arm64.txt's aarch64 wheels in the root filesystem's venv"
  host_python=python3; [ -x .venv/bin/python ] && host_python=.venv/bin/python  # (make setup)
  "$host_python" -m pip download -q --only-binary=:all: --python-version 3.11 --implementation cp \
    --abi cp311 --abi abi3 --abi none --platform manylinux_2_28_aarch64 \
    --platform manylinux_2_27_aarch64 --platform manylinux_2_17_aarch64 \
    --platform manylinux2014_aarch64 -d "$WHEELS" -r requirements/arm64.txt
  rm -rf "$ROOTFS/wheels" && mkdir -p "$ROOTFS/wheels"
  cp "$WHEELS"/*.whl requirements/arm64.txt "$ROOTFS/wheels/"
  chroot "$ROOTFS" /opt/venv/bin/pip install -q --no-index --find-links /wheels -r /wheels/arm64.txt
  rm -rf "$ROOTFS/wheels"
  echo "$VENV_WANT" > "$VENV_STAMP"
fi

# 4. Real architectures (DA3 export, TIPSv2 class) for the fp16 agreement test, built on this
#    machine with torch (.venv-bench, make torch-env); cached with a stamp.
if [ -x .venv-bench/bin/python ]; then
  .venv-bench/bin/python -m tools.arm64.make_fp16_models --out "$CACHE/arm64-models"
else
  say "no .venv-bench (make torch-env): the fp16 agreement tests will fail for want of models"
fi

# 5. qemu-user (Debian 12: 7.2) shows the host's x86 /proc/cpuinfo, on which XNNPACK's cpuinfo
#    crashes (CompiledModel segfaults; the Interpreter silently loses XNNPACK). The chroot gets
#    a Raspberry Pi 5's: Cortex-A76 (0x41/0xd0b) with its features, one entry per host CPU.
CPUINFO=$CACHE/arm64-cpuinfo
for ((i = 0; i < $(nproc --all); i++)); do
  printf 'processor\t: %d\nBogoMIPS\t: 108.00\nFeatures\t: fp asimd evtstrm aes pmull sha1 sha2 crc32 atomics fphp asimdhp cpuid asimdrdm lrcpc dcpop asimddp\nCPU implementer\t: 0x41\nCPU architecture: 8\nCPU variant\t: 0x4\nCPU part\t: 0xd0b\nCPU revision\t: 1\n\n' "$i"
done > "$CPUINFO"

# 6. The tests, in the chroot, on this checkout bind-mounted at /repo (private mounts: they
#    vanish with the namespace, whatever happens).
[ $# -gt 0 ] || set -- "${ARM64_TESTS[@]}"
# (emulation keeps both cores busy: one pytest-xdist worker per core; a worker that runs out of
#  tests takes some from the other, since the tests' lengths differ a hundredfold here)
RUNNER="python -m pytest -q -p no:cacheprovider -n $(nproc) --dist worksteal --durations=10"
WHAT=tests
[ -z "${ARM64_RUN:-}" ] || RUNNER="" WHAT="$*"  # the arguments are the command itself
t0=$SECONDS
say "$(chroot "$ROOTFS" /opt/venv/bin/python -c 'import platform, ai_edge_litert, importlib.metadata as m; print(platform.machine(), "Python", platform.python_version(), "ai-edge-litert", m.version("ai-edge-litert"))')"
mkdir -p "$ROOTFS/repo" "$ROOTFS/arm64-models" "$CACHE/arm64-models"
unshare --mount --propagation private bash -c '
  set -e
  mount --bind "$1" "$2/repo"; mount -t proc proc "$2/proc"; mount --rbind /dev "$2/dev"
  mount --bind "$3" "$2/proc/cpuinfo"
  mount --bind "$4" "$2/arm64-models"
  mount --rbind /sys "$2/sys"  # XNNPACK reads the CPU lists there (without: CompiledModel fails)
  shift 4
  exec chroot "'"$ROOTFS"'" /usr/bin/env -i PATH=/opt/venv/bin:/usr/bin:/bin HOME=/tmp \
    LANG=C.UTF-8 PYTHONDONTWRITEBYTECODE=1 DENSE_PERCEPTION_ARM64_MODELS=/arm64-models \
    DENSE_PERCEPTION_EMULATED=1 DENSE_PERCEPTION_ARM64_FULL="'"${ARM64_FULL:-}"'" bash -c "cd /repo && exec '"$RUNNER"' \"\$@\"" run "$@"
' bash "$REPO" "$ROOTFS" "$CPUINFO" "$CACHE/arm64-models" "$@"
say "$WHAT took $((SECONDS - t0)) s"
