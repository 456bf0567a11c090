"""Metric scale for relative depth: the ground plane, reference depth and the temporal filter."""
