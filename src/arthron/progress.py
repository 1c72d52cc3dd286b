"""The one progress bar of arthron's commands (rich), drawn only on a terminal.

:func:`progress_bar` is a context manager giving a :class:`Progress` reporter. Call it as
``bar(i, n)`` (i of n steps done: the frames of IK, the images of ``arthron show`` ...; the
callback the tools and solvers take as ``progress=``) and ``bar.stage("writing")`` to say what
is being done when the work has no count (a vectorized solve). On a terminal (the stream's
``isatty()``, stderr by default) it draws rich's spinner, a bar (pulsing until a count is
known), ``i/n`` and the elapsed time, and removes it when done (transient); otherwise it draws
and prints nothing at all, so output piped to a file or read by a program holds only the
command's own lines.
"""
from __future__ import annotations

import contextlib
import sys

__all__ = ["Progress", "progress_bar"]


class Progress:
    """A progress reporter: ``bar(i, n)``, ``bar.stage(text)``; silent when ``live`` is None."""

    def __init__(self, label: str, live=None):
        self.label = label
        self._live = live
        self._task = None if live is None else live.add_task(label, total=None)

    @property
    def active(self) -> bool:
        """True when something is drawn (a terminal)."""
        return self._live is not None

    def __call__(self, i: int, n: int) -> None:
        if self._live is not None:
            self._live.update(self._task, completed=int(i), total=max(int(n), 1))

    def stage(self, text: str) -> None:
        """Show ``label: text`` and restart the bar without a count."""
        if self._live is not None:
            self._live.reset(self._task, total=None, description=f"{self.label}: {text}")


def _is_terminal(stream) -> bool:
    try:
        return bool(stream.isatty())
    except (AttributeError, ValueError, OSError):
        return False


@contextlib.contextmanager
def progress_bar(label: str, stream=None):
    """``with progress_bar("inverse kinematics") as bar: run(..., progress=bar)``.

    ``stream``: where to draw (default ``sys.stderr``); nothing is drawn or printed unless it is
    a terminal. rich missing (it is a dependency) also means silence."""
    stream = sys.stderr if stream is None else stream
    live = None
    if _is_terminal(stream):
        try:
            from rich.console import Console
            from rich.progress import (BarColumn, MofNCompleteColumn, Progress as RichProgress,
                                       SpinnerColumn, TextColumn, TimeElapsedColumn)
        except ImportError:   # pragma: no cover - rich is a dependency
            live = None
        else:
            live = RichProgress(SpinnerColumn(), TextColumn("{task.description}"), BarColumn(),
                                MofNCompleteColumn(), TimeElapsedColumn(),
                                console=Console(file=stream), transient=True,
                                # lines printed to stdout stay on stdout unless it is the same
                                # terminal (then rich prints them above the bar)
                                redirect_stdout=_is_terminal(sys.stdout), redirect_stderr=stream is sys.stderr)
    bar = Progress(label, live)
    if live is None:
        yield bar
        return
    live.start()
    try:
        yield bar
    finally:
        live.stop()
