# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""The wiring above the parts: each part's configuration derived from the settings
(:mod:`.derived`) and where each setting acts (:mod:`.relevance`). It imports the settings
table and the parts; no part imports it, so the parts stand below it."""
