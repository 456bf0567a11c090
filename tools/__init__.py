# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Developer tools, not installed with the package, in rooms by purpose: ``bench/`` (speed and
memory figures), ``checks/`` (device checks and one-off measurements), ``demo/``, ``eval/``
(accuracy on real frames), ``generate/`` (the committed generated files) and ``arm64/``, over
``common/`` (the scenes, references and node harness they and the tests share)."""
