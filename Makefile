# dense_perception: `make demo` and `make test` set themselves up on first run.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VENV_TORCH := .venv-bench
BENCH_MODELS := .cache/bench_models
PY := $(VENV)/bin/python

# DDS stays on this machine and on its own domain unless the caller chose otherwise.
export ROS_AUTOMATIC_DISCOVERY_RANGE ?= LOCALHOST
export ROS_DOMAIN_ID ?= 61
export RMW_IMPLEMENTATION ?= rmw_fastrtps_cpp

# Debian/Ubuntu ship Python's venv module separately (python3-venv): install it when we can.
ENSURE_VENV = $(PYTHON) -c "import ensurepip" 2>/dev/null || { \
	  if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null; then \
	    echo "setup: installing python3-venv with apt-get"; \
	    apt-get update -qq && apt-get install -y -qq python3-venv; \
	  else \
	    echo "setup: Python's venv module is missing: run 'sudo apt-get install python3-venv', then make again"; \
	    exit 1; \
	  fi; }

MODEL ?=
MODELS := models/test_da3_small.tflite models/test_tipsv2_b14_dpt.tflite

.PHONY: setup test test-export test-arm64 torch-env demo bench bench-menu bench-pi soak models clean

setup: $(VENV)/.ready

# A sourced ROS 2 install (rclpy importable, e.g. /opt/ros/jazzy on a Pi 5 or a Jetson) is used
# as it is; otherwise ROS 2 Kilted comes from pip wheels (x86_64, Python 3.10-3.12).
$(VENV)/.ready: requirements.txt requirements-ros.txt
	@$(ENSURE_VENV)
	@if $(PYTHON) -c "import rclpy" 2>/dev/null; then \
	  echo "setup: using the sourced ROS 2 install ($$ROS_DISTRO) through a venv with system site packages"; \
	  $(PYTHON) -m venv --system-site-packages $(VENV) && \
	  $(VENV)/bin/pip install -q -r requirements.txt; \
	else \
	  echo "setup: no sourced ROS 2 found; installing ROS 2 Kilted from pip wheels into $(VENV)"; \
	  $(PYTHON) -m venv $(VENV) && \
	  $(VENV)/bin/pip install -q -r requirements.txt -r requirements-ros.txt; \
	fi
	@touch $@

# Regenerate the bundled test models (they are committed; this is for changing them).
models: setup
	$(PY) models/make_test_models.py --out-dir models

test: setup
	$(PY) -m pytest -q

# The ROS-free core tests (runner, pipeline, models, offline command, cpu_precision fp16) on a
# Debian 12 arm64 userland under qemu-user-static with the aarch64 wheels a Pi 5 installs
# (ai-edge-litert 2.x). Root: apt-get, debootstrap, chroot; the root filesystem is cached in
# .cache/arm64-rootfs. rclpy has no aarch64 wheel: the node tests run on x86_64 only. The
# fp16-vs-fp32 models (real DA3 export / TIPSv2 class, small) are built with torch here.
# Measured on a busy 2-core machine: root filesystem 14 min once, then about 13 min of tests.
test-arm64: torch-env
	tools/arm64/test_arm64.sh

# The heavy torch environment (.venv-bench: torch CPU, litert-torch, depth-anything-3) for the
# benchmark models and export-da3; `test` never needs it. One recipe: the exporter's own.
torch-env: setup
	$(PY) -c "from dense_perception.export.torch_env import ensure_torch_env; ensure_torch_env()"

# Speed, side by side in one run, on DA3-class and TIPSv2-class models built here.
bench: torch-env
	$(VENV_TORCH)/bin/python -m tools.bench_models --out $(BENCH_MODELS)
	$(VENV)/bin/pip install -q pillow
	$(PY) -m tools.bench --models $(BENCH_MODELS)
	$(MAKE) --no-print-directory bench-menu bench-pi

# The DA3 export menu for CPUs (input 896/644/518, fp16/int8 weights, random weights) next to
# the published file's graph; bench-pi times and compares them (LiteRT only: run it on a Pi 5
# after copying $(BENCH_MODELS)/menu there; it adds fp16-arithmetic rows on such CPUs).
bench-menu: torch-env
	$(VENV_TORCH)/bin/python -m tools.export_menu build --out $(BENCH_MODELS)/menu

# (no ROS needed: on a Pi without ROS 2 it makes .venv from requirements.txt alone)
bench-pi:
	@[ -x $(PY) ] || { $(ENSURE_VENV); $(PYTHON) -m venv $(VENV) && $(VENV)/bin/pip install -q -r requirements.txt; }
	@mkdir -p bench_out
	$(PY) -m tools.export_menu measure --models $(BENCH_MODELS)/menu --json bench_out/export_menu.json

# DA3-Small exported at two aspects with random weights, fidelity vs PyTorch (a few minutes).
test-export: torch-env
	$(VENV_TORCH)/bin/python -m pytest -q -m export test/test_export_da3.py

# Back-pressure soak: 60 s of 30 fps 1280x720 into a node slowed to ~1 s per inference.
soak: setup
	$(PY) tools/soak.py --seconds 60

demo: setup
	$(PY) -m tools.demo $(if $(MODEL),--model $(MODEL),)

clean:
	rm -rf $(VENV) $(VENV_TORCH) .cache demo_out bench_out soak_out .pytest_cache
