# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""export-da3: DA3-Small re-exported as a LiteRT file at the camera's own aspect (torch, in .venv-
bench only)."""
