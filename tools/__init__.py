"""Developer tools, not installed with the package: benchmarks, the demo, the soak, doc generators
and device checks."""
