"""export-da3: DA3-Small re-exported as a LiteRT file at the camera's own aspect (torch, in .venv-
bench only)."""
