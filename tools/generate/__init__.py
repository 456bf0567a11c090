"""The generated files the repository commits: the docs pages (``make docs``) and the constraint
locks (``make lock``)."""
