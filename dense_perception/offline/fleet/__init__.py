# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Many inputs in one run: the plan (which inputs, their output names, the reuse key), each job
run and tallied in this process or on Ray workers, and the fleet summary."""
