"""Figure files: the figures of a report drawn and saved as PNG files, in this process, shared
with forked ones (save_drawings), or by a DrawingProcess forked before the scoring, which has
imported matplotlib by the time the verdict is known. A report has a dozen figures of some
0.1 s of CPU each to draw and save and matplotlib takes half a second to import, while its
command waits for them; after the scoring every core is free for them.

Takes drawings (the calls that draw the figures, rebalancing.evaluation.report.plots), so a
figure is drawn in the process that saves it: matplotlib is not imported here.
"""

from __future__ import annotations

import contextlib
import json
import os
import pickle
import select
from collections.abc import Callable, Iterable, Sequence
from functools import partial
from pathlib import Path
from typing import TYPE_CHECKING, Any, TypeAlias

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
    above 1 on a system that forks, that many processes share the drawing (forked children,
    each taking the next figure no process has taken): a figure takes some 0.1 s of CPU to
    draw and save, a report a dozen of them, and after the scoring the cores are free. The
    figures of a child that fails are drawn here."""
    indexes = range(len(drawings))
    if processes > 1 and hasattr(os, "fork") and 1 < len(drawings) <= MOST_SHARED:
        written = _saved_in_processes(drawings, out, processes)
    else:
        written = {index for index in indexes if _save(drawings[index], out)}
    return [
        FigureFile(out / name, title, reading)
        for index, (name, _, title, reading) in enumerate(drawings)
        if index in written
    ]


MOST_SHARED = 1000
"""save_drawings shares at most this many drawings between processes: their indexes, 4 bytes
each, are written into a pipe before anyone reads it, which holds 64 KiB."""


def _save(drawing: Drawing, out: Path) -> bool:
    """Draw `drawing` and save it into `out`; whether it had something to show."""
    name, draw, _, _ = drawing
    figure = draw()
    if figure is None:
        return False
    figure.savefig(out / name, dpi=DPI)
    return True


def _saved_in_processes(drawings: Sequence[Drawing], out: Path, processes: int) -> set[int]:
    """The indexes of the `drawings` saved into `out` by this process and `processes - 1`
    forked children, each taking the next index from a pipe holding them all (4 bytes each,
    written at once, so each read takes one whole), so that they finish together whatever
    each figure costs; each child tells which it took and saved, and what a failed child took
    is drawn here again. A drawing that raises here raises once the children have ended."""
    queue, queued = os.pipe()
    os.write(queued, b"".join(index.to_bytes(4, "big") for index in range(len(drawings))))
    os.close(queued)
    children = []
    for _ in range(processes - 1):
        reader, writer = os.pipe()
        child = os.fork()
        if child == 0:  # the child: draw what it takes, tell which, leave at once
            status = 1
            try:
                os.close(reader)
                _send(writer, json.dumps(_taken_and_saved(queue, drawings, out)).encode("ascii"))
                status = 0
            finally:
                os._exit(status)  # no atexit handlers, no flushing of the parent's buffers
        os.close(writer)
        children.append((child, reader))
    try:
        taken, written = _taken_and_saved(queue, drawings, out)
    finally:  # the children are reaped and their pipes closed even when a drawing here raises
        os.close(queue)
        told_by = [(_received(reader), os.waitpid(child, 0)[1]) for child, reader in children]
    done, saved = set(taken), set(written)
    for told, status in told_by:
        if os.waitstatus_to_exitcode(status) == 0 and told:
            taken, written = json.loads(told)
            done.update(taken)
            saved.update(written)
    missed = [index for index in range(len(drawings)) if index not in done]
    return saved | {index for index in missed if _save(drawings[index], out)}


def _taken_and_saved(
    queue: int, drawings: Sequence[Drawing], out: Path
) -> tuple[list[int], list[int]]:
    """Take indexes from the pipe `queue` until it is empty and save those drawings into
    `out`: the indexes taken, and those saved (that had something to show)."""
    taken, saved = [], []
    while record := os.read(queue, 4):
        index = int.from_bytes(record, "big")
        taken.append(index)
        if _save(drawings[index], out):
            saved.append(index)
    return taken, saved


class DrawingProcess:
    """A process forked before the scoring that gets ready to draw (`prepare`: imports
    matplotlib and draws a first figure, half a second of CPU) while the scoring runs, then
    draws a report's figures once it is sent them (save), sharing them with `processes - 1`
    processes it forks then: the command's own process never imports matplotlib. Without fork,
    or should the process fail, save returns None and the caller draws the figures itself;
    close (always: it reaps the process) lets a process that was sent nothing leave."""

    def __init__(self, prepare: Callable[[], None], processes: int) -> None:
        self.child: int | None = None
        if not hasattr(os, "fork"):
            return
        parent = os.getpid()
        job_reader, self.job = os.pipe()
        self.result, result_writer = os.pipe()
        self.child = os.fork()
        if self.child == 0:  # the child: get ready, wait for the job, draw, tell what it saved
            status = 1
            try:
                os.close(self.job)
                os.close(self.result)
                prepare()
                job = _received(job_reader, parent)
                if job:  # else the command wrote no figures
                    drawings_of, arguments, out = pickle.loads(job)
                    saved = save_drawings(drawings_of(*arguments), Path(out), processes)
                    told = [[figure.path.name, figure.title, figure.reading] for figure in saved]
                    _send(result_writer, json.dumps(told).encode("utf-8"))
                status = 0
            finally:
                os._exit(status)  # no atexit handlers, no flushing of the parent's buffers
        os.close(job_reader)
        os.close(result_writer)

    def save(
        self, drawings_of: Callable[..., Sequence[Drawing]], arguments: tuple[Any, ...], out: Path
    ) -> list[FigureFile] | None:
        """Have the process draw `drawings_of(*arguments)` (a function of its module and
        arguments that pickle can send: else what pickle raises) into `out`: the figures saved,
        as save_drawings returns them, or None when there is no process or it failed."""
        if self.child is None:
            return None
        # pickled before a pipe is taken: should it raise, close still ends the process
        message = pickle.dumps((drawings_of, arguments, str(out)))
        try:  # each pipe is closed by the call given it, or else by close
            job, self.job = self.job, -1
            _send(job, message)
            result, self.result = self.result, -1
            told = _received(result)
        except OSError:  # the process is gone
            told = b""
        if self._reaped() != 0 or not told:
            return None
        return [FigureFile(out / name, title, reading) for name, title, reading in json.loads(told)]

    def close(self) -> None:
        """Send an empty job, nothing to draw (a process that was sent one has finished), and
        reap the process."""
        if self.job >= 0:
            with contextlib.suppress(OSError):  # the process is gone
                _send(self.job, b"")
        if self.result >= 0:
            os.close(self.result)
        self.job = self.result = -1
        self._reaped()

    def _reaped(self) -> int | None:
        """The process's exit code once it has ended (None: there was none, or it was
        reaped before)."""
        if self.child is None:
            return None
        _, status = os.waitpid(self.child, 0)
        self.child = None
        return os.waitstatus_to_exitcode(status)


def _send(descriptor: int, message: bytes) -> None:
    """Write `message` into the pipe `descriptor`, its length first, and close it: the reader
    knows where it ends without waiting for the pipe's end, which a process forked meanwhile
    (a scoring worker) can hold open."""
    with os.fdopen(descriptor, "wb") as stream:
        stream.write(len(message).to_bytes(8, "big") + message)


def _received(descriptor: int, parent: int | None = None) -> bytes:
    """The message _send wrote into the pipe `descriptor` (which this closes); empty when the
    writer closed it first or, with `parent`, when that process is gone (this one then has
    another parent)."""
    while parent is not None and not select.select([descriptor], [], [], 1.0)[0]:
        if os.getppid() != parent:
            os.close(descriptor)
            return b""
    with os.fdopen(descriptor, "rb") as stream:
        header = stream.read(8)
        return stream.read(int.from_bytes(header, "big")) if len(header) == 8 else b""


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
