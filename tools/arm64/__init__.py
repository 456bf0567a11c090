"""make test-arm64: the core tests on an emulated Debian 12 arm64 userland, and the models they
need."""
