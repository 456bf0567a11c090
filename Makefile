# dense_perception: `make demo` and `make test` set themselves up on first run.
SHELL := /bin/bash
PYTHON ?= python3
VENV := .venv
VENV_TORCH := .venv-bench
VENV_FLEET := .venv-fleet
VENV_NPU := .venv-npu
BENCH_MODELS := .cache/bench_models
VENV_JAZZY := .venv-jazzy
PY := $(VENV)/bin/python
# pip installs exactly the versions the tests ran (lock files from `make lock`).
PIP_LOCK := -c requirements/constraints.txt

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

.PHONY: eval-real bench-host setup test test-gpu test-npu test-jazzy test-py310 test-py312 test-install lock test-export test-fleet bench-fleet test-arm64 torch-env demo bench bench-arm64 bench-menu bench-pi soak models clean docs demo-picture

# A venv's stamp is named by the hash of the files it is installed from: a changed requirement
# gives a new name and brings the venv up to date in place (pip keeps what already fits), an
# unchanged one skips the work. pip's own cache serves every venv of a run.
hash_of = $(shell cat $(1) | sha256sum | cut -c1-12)
# $(1): the venv, $(2): how to make it (python -m venv, with any options); then pip install $(3)
# and the target's stamp in place of any older one
define venv_install
	@[ -x $(1)/bin/python ] || $(2) $(1)
	$(1)/bin/pip install -q $(3)
	@rm -f $(1)/.ready-*
	@touch $@
endef
MAIN_READY := $(VENV)/.ready-$(call hash_of,requirements/runtime.txt requirements/test.txt \
	requirements/ros-kilted.txt requirements/robot.txt requirements/rerun.txt \
	requirements/constraints.txt setup.py setup.cfg)
JAZZY_READY := $(VENV_JAZZY)/.ready-$(call hash_of,requirements/runtime.txt requirements/test.txt \
	requirements/ros-jazzy.txt requirements/constraints-jazzy.txt setup.py setup.cfg)
NPU_READY := $(VENV_NPU)/.ready-$(call hash_of,requirements/runtime.txt requirements/test.txt \
	requirements/ros-kilted.txt requirements/npu.txt requirements/constraints.txt setup.py setup.cfg)
FLEET_READY := $(VENV_FLEET)/.ready-$(call hash_of,requirements/runtime.txt requirements/test.txt \
	requirements/fleet.txt requirements/constraints.txt setup.py setup.cfg)

setup: $(MAIN_READY)

# A sourced ROS 2 install (rclpy importable, e.g. /opt/ros/jazzy on a Pi 5 or a Jetson) is used
# as it is, with its apt numpy and OpenCV (rosdep); otherwise ROS 2 Kilted comes from pip wheels
# (x86_64, Python 3.10-3.12). Either way the package itself is installed editable, so
# `dense-perception` and `dense_perception_node` are on the venv's PATH.
$(MAIN_READY):
	@$(ENSURE_VENV)
	@if $(PYTHON) -c "import rclpy" 2>/dev/null; then \
	  echo "setup: using the sourced ROS 2 install ($$ROS_DISTRO) through a venv with system site packages"; \
	  { [ -x $(VENV)/bin/python ] || $(PYTHON) -m venv --system-site-packages $(VENV); } && \
	  $(VENV)/bin/pip install -q -r requirements/robot.txt -r requirements/test.txt \
	    -r requirements/rerun.txt && \
	  $(VENV)/bin/pip install -q --no-deps -e . ; \
	else \
	  echo "setup: no sourced ROS 2 found; installing ROS 2 Kilted from pip wheels into $(VENV)"; \
	  { [ -x $(VENV)/bin/python ] || $(PYTHON) -m venv $(VENV); } && \
	  $(VENV)/bin/pip install -q $(PIP_LOCK) -r requirements/test.txt -r requirements/rerun.txt \
	    -r requirements/ros-kilted.txt -e . ; \
	fi
	@rm -f $(VENV)/.ready-*
	@touch $@

# ROS 2 Jazzy (the LTS) from pip wheels, beside Kilted: `make test-jazzy`.
$(JAZZY_READY):
	@$(ENSURE_VENV)
	@echo "setup: ROS 2 Jazzy from pip wheels in $(VENV_JAZZY)"
	$(call venv_install,$(VENV_JAZZY),$(PYTHON) -m venv,-c requirements/constraints-jazzy.txt -r requirements/test.txt -r requirements/ros-jazzy.txt -e .)

# docs/parameters.md and config/{depth,tipsv2}.yaml from the settings table
# (core/settings/table.py), docs/layout.md from the modules' docstrings; test_docs fails when
# one is stale.
docs: setup
	env -u DENSE_PERCEPTION_MODELS $(PY) tools/generate/gen_docs.py

# docs/demo.png, the README's picture, from make demo's outputs.
demo-picture: demo
	$(PY) tools/demo/picture.py

# Regenerate the bundled test models (they are committed; this is for changing them).
models: setup
	$(PY) models/make_test_models.py --out-dir models

# pytest on every core: twice as many workers as cores, since much of the suite waits on DDS and
# on the processes it starts (each worker has a DDS domain of its own: test/conftest.py). Tests
# marked serial run alone afterwards. Where each test runs, and why: CONTRIBUTING.md.
TEST_WORKERS ?= $(shell echo $$(( $$(nproc) * 2 )))
# $(1): the venv's python, $(2): a marker expression, $(3): more pytest arguments. The serial part
# runs whatever the parallel part did (every test reported); pytest's exit 5 (nothing selected) is
# no failure for it alone.
define pytest_parallel
	$(1) -m pytest -q -n $(TEST_WORKERS) -m "($(2)) and not serial" $(3); parallel=$$?; \
	$(1) -m pytest -q -m "($(2)) and serial" $(3); serial=$$?; \
	[ $$parallel = 0 ] && { [ $$serial = 0 ] || [ $$serial = 5 ]; }
endef

# Everything but the GPU tests, which make test-gpu runs once it has set up a Vulkan device (their
# timing checks are meant for a machine doing nothing else), and the NPU tests (make test-npu:
# OpenVINO stays out of .venv). The ten slowest tests close the report.
test: setup
	$(call pytest_parallel,$(PY),not gpu and not npu,--durations=10)

# The ROS-free core (runner, pipeline, models, offline command, cpu_precision fp16) on a Debian 12
# arm64 userland under qemu-user-static with the aarch64 wheels a Pi 5 installs (ai-edge-litert
# 2.x): not the camera-motion numerics, which qemu runs hundreds of times slower and which only
# numpy decides. Root: apt-get, debootstrap, chroot; the root filesystem is cached in
# ~/.cache/dense_perception. rclpy has no aarch64 wheel: the node tests run on x86_64 only. The
# fp16-vs-fp32 models (real DA3 export / TIPSv2 class, small) are built with torch here.
test-arm64: torch-env
	tools/arm64/test_arm64.sh

# The node tests over DDS again under ROS 2 Jazzy's wheels (rclpy 7.1), in their own venv: every
# test that touches rclpy (marker ros: DDS, and the message conversions).
test-jazzy: $(JAZZY_READY)
	$(call pytest_parallel,$(VENV_JAZZY)/bin/python,ros and not gpu,)

# Other Pythons: Humble's (3.10) and Ubuntu 24.04's (3.12, where robots run Jazzy), each in a
# venv of its own with ROS 2 Kilted's wheels (built for 3.10-3.12): what differs there, the
# language, rclpy and the wheels. Not the export tests (torch), not the checks of the repository's
# own files (the same anywhere), and the numerics only where that Python's lock pins another
# numpy or OpenCV than requirements/constraints.txt. Debian 12 packages neither Python and PyPI
# ships no interpreter: pyenv's are used where this machine has them (the CI image does);
# elsewhere the target says it skipped and why.
comma := ,
PY_EXTRA := 310 312
find_python = $(firstword $(foreach p,$(shell command -v python$(1) 2>/dev/null) \
	$(wildcard $(HOME)/.pyenv/versions/$(1).*/bin/python$(1)),$(if $(shell $(p) -c \
	'import sys; print(sys.version_info[:2] == ($(subst .,$(comma),$(1))))' 2>/dev/null | grep True),$(p))))
dotted = 3.$(patsubst 3%,%,$(1))
# numpy's and OpenCV's pins in a lock file: the wheels that alone decide a numerics test
array_pins = $(sort $(shell grep -iE '^(numpy|opencv-python-headless)==' $(1)))
pins_differ = $(filter-out $(call array_pins,requirements/constraints.txt),$(call array_pins,$(1)))

define python_venv
PY$(1)_READY := .venv-py$(1)/.ready-$$(call hash_of,requirements/runtime.txt requirements/test.txt \
	requirements/ros-kilted.txt requirements/constraints-py$(1).txt setup.py setup.cfg)
$$(PY$(1)_READY):
	@echo "setup: Python $$(call dotted,$(1)) venv with ROS 2 Kilted's wheels in .venv-py$(1)"
	$$(call venv_install,.venv-py$(1),$$(call find_python,$$(call dotted,$(1))) -m venv,-c requirements/constraints-py$(1).txt -r requirements/test.txt -r requirements/ros-kilted.txt -e .)
endef
$(foreach v,$(PY_EXTRA),$(eval $(call python_venv,$(v))))

$(PY_EXTRA:%=test-py%): test-py%:
	@if [ -z "$(call find_python,$(call dotted,$*))" ]; then \
	  echo "test-py$*: skipped: no Python $(call dotted,$*) interpreter on this machine"; \
	else $(MAKE) --no-print-directory $(PY$*_READY) && \
	  echo "test-py$*: $(if $(call pins_differ,requirements/constraints-py$*.txt),numpy/OpenCV pinned apart from the main lock ($(call pins_differ,requirements/constraints-py$*.txt)): the numerics run too,numpy and OpenCV pinned as in the main lock: the numerics are left to make test)" && \
	  $(MAKE) --no-print-directory test-py$*-run; fi

$(PY_EXTRA:%=test-py%-run): test-py%-run:
	$(call pytest_parallel,.venv-py$*/bin/python,not export and not gpu and not npu and not rerun and not repository$(if $(call pins_differ,requirements/constraints-py$*.txt),, and not numerics),)

# The install recipes of the README, each in a fresh venv: the offline section (pip install .,
# then dense-perception on a bag) and the robot recipe on Debian's own externally managed
# python3 (a --system-site-packages venv over apt's numpy/OpenCV, colcon with its python).
ROBOT_APT := python3-venv python3-numpy python3-opencv python3-tqdm python3-yaml colcon
test-install: setup
	@if [ "$$(id -u)" = 0 ] && command -v apt-get >/dev/null && ! dpkg -s $(ROBOT_APT) >/dev/null 2>&1; then \
	  echo "setup: apt packages of the robot recipe: $(ROBOT_APT)"; \
	  apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq $(ROBOT_APT) >/dev/null; fi
	DENSE_PERCEPTION_INSTALL_TESTS=1 $(PY) -m pytest -q -n 2 test/test_install_recipes.py

# Regenerate the lock files from fresh venvs that follow the ranges alone (then run the tests).
lock:
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock && .venv-lock/bin/pip install -q \
	  -r requirements/test.txt -r requirements/rerun.txt -r requirements/ros-kilted.txt -e . && \
	  .venv-lock/bin/python tools/generate/freeze.py > requirements/constraints.txt
	rm -rf .venv-lock && $(PYTHON) -m venv .venv-lock && .venv-lock/bin/pip install -q \
	  -r requirements/test.txt -r requirements/ros-jazzy.txt -e . && .venv-lock/bin/python tools/generate/freeze.py > requirements/constraints-jazzy.txt
	@for v in $(PY_EXTRA); do p="$$($(MAKE) -s --no-print-directory which-python-$$v)"; \
	  [ -z "$$p" ] || { rm -rf .venv-lock && $$p -m venv .venv-lock && .venv-lock/bin/pip install -q \
	    -r requirements/test.txt -r requirements/ros-kilted.txt -e . && \
	    .venv-lock/bin/python tools/generate/freeze.py > requirements/constraints-py$$v.txt; } || exit 1; done
	rm -rf .venv-lock

$(PY_EXTRA:%=which-python-%): which-python-%:
	@echo $(call find_python,$(call dotted,$*))
# The GPU backend for real (LiteRT WebGPU over Vulkan): runner, pipeline and node with backend gpu.
# Without a GPU, Mesa's software Vulkan (lavapipe, Mesa >= 23) stands in: installed here as root
# on Debian/Ubuntu (Debian 12: bookworm-backports); elsewhere install_vulkan.sh says how and the
# GPU tests skip with the reason.
test-gpu: setup
	@if tools/checks/install_vulkan.sh; then \
	  DENSE_PERCEPTION_REQUIRE_GPU=1 $(PY) -m pytest -q -rs test/test_gpu_*.py test/test_native_log.py test/test_runner.py; \
	else \
	  echo "test-gpu: skipped: the GPU tests, for want of a Vulkan device (above: how to install one)"; \
	  $(PY) -m pytest -q -rs test/test_gpu_*.py test/test_native_log.py test/test_runner.py; \
	fi

# The NPU backend (LiteRT's Intel OpenVINO plugin) on OpenVINO's CPU device: runner, cache, preload,
# pipeline, offline command and node, in a venv of its own with requirements/npu.txt (openvino,
# 57 MB wheel). About 10 s of tests once the venv is there.
$(NPU_READY):
	@$(ENSURE_VENV)
	@echo "setup: venv with OpenVINO (requirements/npu.txt) in $(VENV_NPU)"
	$(call venv_install,$(VENV_NPU),$(PYTHON) -m venv,$(PIP_LOCK) -r requirements/test.txt -r requirements/ros-kilted.txt -r requirements/npu.txt -e .)

test-npu: setup $(NPU_READY)
	DENSE_PERCEPTION_REQUIRE_NPU=1 $(VENV_NPU)/bin/python -m pytest -q -rs test/test_npu.py

# The heavy torch environment (.venv-bench: torch CPU, litert-torch, depth-anything-3) for the
# benchmark models and export-da3; `test` never needs it. One recipe: the exporter's own.
torch-env: setup
	$(PY) -c "from dense_perception.export.torch_env import ensure_torch_env; ensure_torch_env()"

# Speed, side by side in one run, on DA3-class and TIPSv2-class models built here.
bench: torch-env
	$(VENV_TORCH)/bin/python -m tools.bench.models --out $(BENCH_MODELS)
	$(VENV)/bin/pip install -q pillow
	$(PY) -m tools.bench.run --models $(BENCH_MODELS)
	$(PY) -m tools.bench.wire
	$(MAKE) --no-print-directory bench-host bench-menu bench-pi
	$(PY) -m tools.bench.motion --model "DA3 at 504=$(BENCH_MODELS)/menu/da3_cpu_280x504_fp32.tflite" \
	  --model "TIPSv2=$(BENCH_MODELS)/tipsv2_class.tflite"
	$(PY) -m tools.bench.motion_node

# The camera-motion stages in the emulated arm64 userland of test-arm64 and on this machine's
# x86_64 under the same qemu-user, side by side: emulated wall time means nothing, their ratio
# says which stages the emulation slows most. Needs root (chroot), as test-arm64 does.
bench-arm64: setup
	@mkdir -p bench_out
	ARM64_RUN=1 tools/arm64/test_arm64.sh python -m tools.bench.motion --rounds 4 \
	  --json bench_out/motion_arm64_emulated.json
	qemu-x86_64-static $(PY) -m tools.bench.motion --rounds 4 \
	  --json bench_out/motion_x86_emulated.json
	$(PY) -m tools.bench.motion --compare bench_out/motion_arm64_emulated.json \
	  bench_out/motion_x86_emulated.json

# The host path through the node over DDS (the test models, 1280x720 bgr8 at 5 Hz, every
# output subscribed and depth only): the node's stage means, host ms and host ceiling.
bench-host: setup
	$(PY) -m tools.bench.host

# The DA3 export menu for CPUs: DA3's own 504 (fp32/fp16/int8 weights, random weights) next to
# the published file's 896 graph, with the official PyTorch outputs at each size; bench-pi
# times and compares them in interleaved rounds and prints the CPU's int8/fp16 instructions
# (LiteRT only: run it on a Pi 5 after copying $(BENCH_MODELS)/menu there; it adds
# fp16-arithmetic rows on such CPUs).
bench-menu: torch-env
	$(VENV_TORCH)/bin/python -m tools.bench.export_menu build --out $(BENCH_MODELS)/menu

# (no ROS needed: on a Pi without ROS 2 it makes .venv from requirements/runtime.txt alone)
bench-pi:
	@[ -x $(PY) ] || { $(ENSURE_VENV); $(PYTHON) -m venv $(VENV) && $(VENV)/bin/pip install -q -r requirements/runtime.txt; }
	@mkdir -p bench_out
	$(PY) -m tools.bench.export_menu measure --models $(BENCH_MODELS)/menu --json bench_out/export_menu.json

# DA3-Small exported at DA3's own 504 (16:9 and 4:3) with random weights, fidelity of depth and
# confidence vs the official PyTorch model at the same size (a few minutes).
test-export: torch-env
	$(VENV_TORCH)/bin/python -m pytest -q -m export test/test_export_da3_model.py test/test_export_da3_graph.py

# Many bags on Ray (process --ray): Ray lives in its own venv so that `make test` stays light.
$(FLEET_READY):
	@$(ENSURE_VENV)
	@echo "setup: venv with Ray (requirements/fleet.txt) in $(VENV_FLEET)"
	$(call venv_install,$(VENV_FLEET),$(PYTHON) -m venv,$(PIP_LOCK) -r requirements/test.txt -r requirements/fleet.txt -e .)

# A local 2-CPU Ray cluster over small bags (the same set without Ray runs in `make test`).
test-fleet: $(FLEET_READY)
	$(VENV_FLEET)/bin/python -m pytest -q test/test_fleet_ray.py

# Throughput with 1 and 2 Ray workers (1 thread each) on the same bags, paired rounds, with a
# real-size model (DA3-Small exported at 504 with int8 weights, from bench-menu).
bench-fleet: $(FLEET_READY) bench-menu
	$(VENV_FLEET)/bin/python -m tools.bench.fleet

# Back-pressure soak: 60 s of 30 fps 1280x720 into a node slowed to ~1 s per inference.
soak: setup
	$(PY) tools/bench/soak.py --seconds 60

demo: setup
	$(PY) -m tools.demo.run $(if $(MODEL),--model $(MODEL),)

# docs/accuracy.md: the real RGB-D frames of ../shared/real-scenes through PyD-Net++, or through
# MODEL= (MODEL_TYPE=auto|da3|tipsv2|depth, EVAL_ARGS= more tools/eval/real.py options) into
# OUT= (see docs/accuracy.md).
eval-real: setup
	$(PY) -m tools.eval.real $(if $(MODEL),--model $(MODEL),) \
	  $(if $(MODEL_TYPE),--model-type $(MODEL_TYPE),) $(if $(OUT),--out $(OUT),) $(EVAL_ARGS)

clean:
	rm -rf $(VENV) $(VENV_JAZZY) $(PY_EXTRA:%=.venv-py%) $(VENV_TORCH) $(VENV_FLEET) $(VENV_NPU) .cache demo_out bench_out soak_out .pytest_cache
