#!/usr/bin/env bash
# Software Vulkan (Mesa's lavapipe, Mesa >= 23) for LiteRT's WebGPU accelerator (Dawn over Vulkan).
# Mesa 22.x lavapipe is refused by Dawn ("shaderUniform*ArrayDynamicIndexing required"); Debian 12
# gets Mesa 25 from bookworm-backports. As root on Debian/Ubuntu this installs it; elsewhere it
# says how. Exit status 0 when a Mesa >= 23 lavapipe ICD (or any other Vulkan ICD) is installed.
set -euo pipefail

mesa_version() { dpkg-query -W -f='${Version}' mesa-vulkan-drivers 2>/dev/null || true; }
mesa_ok() {
  local v; v=$(mesa_version)
  [ -n "$v" ] && dpkg --compare-versions "$v" ge 23 && dpkg-query -W libvulkan1 >/dev/null 2>&1
}

if command -v dpkg-query >/dev/null && mesa_ok; then
  echo "vulkan: mesa-vulkan-drivers $(mesa_version) (lavapipe) already installed"
  exit 0
fi
if [ "$(id -u)" != 0 ] || ! command -v apt-get >/dev/null; then
  cat <<'MSG'
vulkan: no software Vulkan set up. To run the GPU tests without a GPU, install Mesa >= 23's
  lavapipe and the Vulkan loader, e.g. on Debian 12 (as root):
    echo 'deb http://deb.debian.org/debian bookworm-backports main' > /etc/apt/sources.list.d/backports.list
    apt-get update && apt-get install -y -t bookworm-backports mesa-vulkan-drivers libvulkan1
  on Ubuntu >= 23.04: apt-get install mesa-vulkan-drivers libvulkan1
  With a GPU, install its vendor's Vulkan driver (NVIDIA: the driver's Vulkan ICD, nvidia_icd.json).
MSG
  exit 1
fi
. /etc/os-release
if [ "${ID:-}" = debian ] && [ "${VERSION_CODENAME:-}" = bookworm ]; then
  if ! grep -rqs "bookworm-backports" /etc/apt/sources.list /etc/apt/sources.list.d/; then
    echo "vulkan: adding the bookworm-backports apt source"
    echo "deb http://deb.debian.org/debian bookworm-backports main" \
      > /etc/apt/sources.list.d/bookworm-backports.list
  fi
  apt-get update -qq
  echo "vulkan: installing mesa-vulkan-drivers (Mesa 25, lavapipe) from bookworm-backports"
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    -t bookworm-backports mesa-vulkan-drivers libvulkan1
else
  apt-get update -qq
  DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends \
    mesa-vulkan-drivers libvulkan1
fi
if ! mesa_ok; then
  echo "vulkan: installed mesa-vulkan-drivers $(mesa_version) is older than 23; Dawn refuses it." \
       "Install Mesa >= 23 (a backports suite or a newer release)."
  exit 1
fi
echo "vulkan: mesa-vulkan-drivers $(mesa_version) (lavapipe) installed"
