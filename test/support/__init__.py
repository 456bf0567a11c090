"""Shared test helpers, imported as ``support.<module>``: common (paths, test models,
timeouts), model_truth (the test models' laws, written once), camera_scenes, bag_maker,
ros_harness (the node in-process over DDS) and worker_procs (GPU worker processes)."""
