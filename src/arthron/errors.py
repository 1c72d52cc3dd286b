"""Typed exceptions of arthron.

Every error raised on bad input derives from :class:`ArthronError` and names the file and, where
known, the element or line, so that the command line can print one clear message instead of a
traceback.
"""
from __future__ import annotations


class ArthronError(Exception):
    """Base class of arthron's errors.

    Parameters
    ----------
    message : str
        What is wrong.
    path : str or os.PathLike, optional
        The file concerned.
    where : str, optional
        The element, line or column concerned (``"line 12"``, ``"<CustomJoint name='hip_r'>"``).
    """

    def __init__(self, message: str, path=None, where: str | None = None):
        self.message = message
        self.path = None if path is None else str(path)
        self.where = where
        parts = []
        if self.path:
            parts.append(self.path)
        if where:
            parts.append(str(where))
        prefix = ": ".join(parts)
        super().__init__(f"{prefix}: {message}" if prefix else message)


class ModelFileError(ArthronError):
    """A model file (``.osim``) is malformed or names something that does not exist."""


class DataFileError(ArthronError):
    """A data file (``.trc``, ``.mot``, ``.sto``, mesh, setup XML) is malformed or inconsistent."""


class UnsupportedFeature(ArthronError):
    """The input uses a feature arthron does not implement (it fails clearly rather than guess)."""


class SolverError(ArthronError):
    """A solver could not produce a result (singular system, infeasible problem, bad arguments)."""


class OptionError(SolverError, ValueError):
    """A solver or tool option has a bad value (unknown keyword, out-of-range number, wrong shape).

    Also a :class:`ValueError`, so callers that validate arguments the usual Python way catch it,
    and a :class:`SolverError` (what the solvers raised for bad arguments before this class).
    Each solver validates its options in one place, before any computation.
    """


class ArthronWarning(UserWarning):
    """Non-fatal problems in the input (a missing mesh file, a component kept verbatim)."""


class attach_source:
    """Context manager: an :class:`ArthronError` raised inside that names no file gets
    ``path`` (the input whose values caused it), so that solver errors reach the user naming
    the file, e.g. ``with attach_source(trial.source): solve(...)``."""

    def __init__(self, path, where: str | None = None):
        self.path, self.where = path, where

    def __enter__(self):
        return self

    def __exit__(self, typ, exc, tb):
        if exc is None or not isinstance(exc, ArthronError) or exc.path is not None or self.path is None:
            return False
        new = type(exc).__new__(type(exc))
        ArthronError.__init__(new, exc.message, self.path, exc.where or self.where)
        raise new.with_traceback(tb) from None
