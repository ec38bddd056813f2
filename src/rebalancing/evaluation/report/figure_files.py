"""Figure files: the figures of a report drawn and saved as PNG files, in this process or
shared with forked ones. A report has a dozen figures of some 0.1 s of CPU each to draw and
save, and its command waits for them; after the scoring every core is free for them.

Takes drawings (the calls that draw the figures, rebalancing.evaluation.report.plots), so a
figure is drawn in the process that saves it: matplotlib is not imported here.
"""

from __future__ import annotations

import json
import os
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, TypeAlias

from rebalancing.evaluation.report.page import FigureFile

if TYPE_CHECKING:
    from matplotlib.figure import Figure

DPI = 110
"""The figures' resolution, dots per inch: they are drawn and saved at it."""


Drawing: TypeAlias = "tuple[str, Callable[[], Figure | None], str, str]"
"""A figure still to draw: its file name, the call that draws it (None: nothing to show), its
title and its reading."""


def save_drawings(drawings: Sequence[Drawing], out: Path, processes: int = 1) -> list[FigureFile]:
    """Draw each of `drawings` and save the figures that have something to show into `out`;
    return each file with its title and reading, in the order of `drawings`. With `processes`
    above 1 on a system that forks, that many processes share the drawing (forked children
    draw every `processes`-th figure, each from its own start): a figure takes some 0.1 s of
    CPU to draw and save, a report a dozen of them, and after the scoring the cores are free.
    A child that fails leaves its figures to this process."""
    indexes = range(len(drawings))
    if processes > 1 and hasattr(os, "fork") and len(drawings) > 1:
        written = _saved_in_processes(drawings, out, processes)
    else:
        written = {index for index in indexes if _save(drawings[index], out)}
    return [
        FigureFile(out / name, title, reading)
        for index, (name, _, title, reading) in enumerate(drawings)
        if index in written
    ]


def _save(drawing: Drawing, out: Path) -> bool:
    """Draw `drawing` and save it into `out`; whether it had something to show."""
    name, draw, _, _ = drawing
    figure = draw()
    if figure is None:
        return False
    figure.savefig(out / name, dpi=DPI)
    return True


def _saved_in_processes(drawings: Sequence[Drawing], out: Path, processes: int) -> set[int]:
    """The indexes of the `drawings` saved into `out`, `processes - 1` forked children drawing
    every `processes`-th of them (each tells its own over a pipe), this process the rest and,
    should a child fail, that child's share too."""
    shares = [range(first, len(drawings), processes) for first in range(processes)]
    children = []
    for share in shares[1:]:
        reader, writer = os.pipe()
        child = os.fork()
        if child == 0:  # the child: draw its share, tell which were saved, leave at once
            status = 1
            try:
                os.close(reader)
                saved = [index for index in share if _save(drawings[index], out)]
                os.write(writer, json.dumps(saved).encode("ascii"))
                status = 0
            finally:
                os._exit(status)  # no atexit handlers, no flushing of the parent's buffers
        os.close(writer)
        children.append((child, reader, share))
    written = {index for index in shares[0] if _save(drawings[index], out)}
    for child, reader, share in children:
        with os.fdopen(reader, "rb") as stream:
            told = stream.read()
        _, status = os.waitpid(child, 0)
        if os.waitstatus_to_exitcode(status) == 0:
            written.update(json.loads(told))
        else:
            written.update(index for index in share if _save(drawings[index], out))
    return written


def save_figures(
    drawn: Iterable[tuple[str, Figure | None, str, str]], out: Path
) -> list[FigureFile]:
    """Save each (file name, figure, title, reading) whose figure is not None into `out`:
    figures drawn already (save_drawings takes them still to draw)."""
    return save_drawings(
        [(name, partial(_given, figure), title, reading) for name, figure, title, reading in drawn],
        out,
    )


def _given(figure: Figure | None) -> Figure | None:
    return figure
