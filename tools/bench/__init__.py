"""Speed and memory figures: ``make bench`` and its siblings (host path, wire, motion, cameras,
fleet, export menu, CPU options), the benchmark models and the soak."""
