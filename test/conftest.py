# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""Shared fixtures (what is not a fixture is in the support package: support/common.py)."""

import signal

import pytest

from support.common import load_test_model_maker
from support.dds_domain import dds_domain_for

# A test run started in the background by a script (`make test &`) inherits SIGINT ignored, and
# so would every node and command the tests start and then stop with SIGINT (they would hang
# until killed, leaving their DDS endpoints behind). Restore Python's own handler.
if signal.getsignal(signal.SIGINT) is signal.SIG_IGN:
    signal.signal(signal.SIGINT, signal.default_int_handler)


@pytest.fixture(scope="session")
def maker():
    return load_test_model_maker()


def pytest_configure(config):
    """Keep DDS on this machine and on a domain of this test process's own."""
    import os
    os.environ.setdefault("ROS_AUTOMATIC_DISCOVERY_RANGE", "LOCALHOST")
    if "DENSE_PERCEPTION_KEEP_DOMAIN" not in os.environ:
        os.environ["ROS_DOMAIN_ID"] = str(dds_domain_for(
            os.getpid(), os.environ.get("PYTEST_XDIST_WORKER"), os.getppid()))


@pytest.fixture
def harness_factory():
    """make(params, **kwargs) -> a ros_harness.Harness (an in-process node over DDS), each
    closed when the test ends. rclpy is imported only here: conftest also serves ROS-free runs."""
    from support.ros_harness import Harness

    made = []

    def make(params, **kwargs):
        harness = Harness(params, **kwargs)
        made.append(harness)
        return harness
    yield make
    for harness in made:
        harness.close()
