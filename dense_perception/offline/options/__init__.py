"""The command's options: its own (``ProcessOptions``), the settings table's flags, the
metric-scale options, and which flags an input or a model does not read."""
