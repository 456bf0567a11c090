"""Accuracy on real RGB-D frames and sequences (``make eval-real``, docs/accuracy.md)."""
