"""A command piped into `head` or `less` stops quietly when the reader goes away, as command-line
tools do, instead of ending in a BrokenPipeError traceback."""

from __future__ import annotations

import os
import sys
from collections.abc import Callable

READER_LEFT = 141
"""The exit status when standard output's reader has gone: a shell's for a process ended by
SIGPIPE (128 + 13), which is how `head`'s writers usually end."""


def quiet_when_the_reader_leaves(command: Callable[[], int]) -> int:
    """`command()`'s exit status, with its output flushed; READER_LEFT, and nothing on standard
    error, when standard output's reader closed the pipe before the end. Standard output then
    points at the null device, so that the interpreter's own flush at exit cannot fail too."""
    try:
        status = command()
        sys.stdout.flush()
        return status
    except BrokenPipeError:
        null = os.open(os.devnull, os.O_WRONLY)
        os.dup2(null, sys.stdout.fileno())
        os.close(null)
        return READER_LEFT
