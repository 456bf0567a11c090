# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Many inputs in one run: the plan (the inputs' output names, the reuse key), each job run and
tallied in this process or on Ray workers, and the fleet summary. Which inputs a command names
is the options' (``options/process_options.py``)."""
