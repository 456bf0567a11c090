"""The demo: the real node on a sample scene (``make demo``) and the README's picture from it."""
