# Copyright 2026 The dense_perception authors
# SPDX-License-Identifier: Apache-2.0
"""What the ``dense-perception`` command says: its name, exit statuses, one-line errors and
warnings that do not break a progress bar."""

from __future__ import annotations

import sys

PROG = "dense-perception"
EXIT_OK, EXIT_ERROR, EXIT_INTERRUPTED = 0, 2, 130


class CliError(RuntimeError):
    """A user-facing error: printed as one line, exit status 2."""


def say(text: str, stream=None) -> None:
    """Print a line without breaking a progress bar."""
    from tqdm import tqdm
    tqdm.write(text, file=stream or sys.stdout)


def warn(text: str) -> None:
    """``dense-perception: warning: ...`` on stderr."""
    say(f"{PROG}: warning: {text}", sys.stderr)


def interactive() -> bool:
    """Progress bars only when both streams are a terminal (nothing when piped)."""
    return sys.stdout.isatty() and sys.stderr.isatty()


def error(exc: BaseException | str) -> None:
    """``dense-perception: error: ...``: one line on stderr."""
    from .inputs.bag_io import one_line
    sys.stderr.write(f"{PROG}: error: {one_line(exc, 1000)}\n")
    sys.stderr.flush()


def is_user_error(exc: BaseException) -> bool:
    """An error the user can fix (bad input, bad option, file system) or one of the machine's
    (a GPU inference that hung: that input fails, the next goes on), not a bug."""
    from ..core.backends.gpu_runner import GpuWorkerError
    from .inputs.bag_io import BagError
    from .inputs.file_io import InputError
    from .options.scale_options import ScaleOptionError
    return isinstance(exc, (BagError, InputError, CliError, OSError, ScaleOptionError,
                            GpuWorkerError))


def describe(exc: BaseException) -> str:
    """One line for ``exc``: its text for user errors, with its type for anything else."""
    from .inputs.bag_io import one_line
    return one_line(exc) if is_user_error(exc) else f"{type(exc).__name__}: {one_line(exc)}"
