"""Neutral data containers for trials and results: :class:`Table` (a time-indexed table, as in an
OpenSim ``.sto``/``.mot``) and :class:`MarkerTrial` (marker trajectories, as in a ``.trc``).

Solvers take and return these objects; the readers and writers of the file formats live in
:mod:`arthron.io.sto` and :mod:`arthron.io.trc`. Nothing here reads or writes files.
"""
from __future__ import annotations

from dataclasses import field, replace
from pathlib import Path

import numpy as np

from .runtime import dataclass  # dataclasses.dataclass with shared __repr__/__eq__

__all__ = ["Table", "MarkerTrial"]


@dataclass
class Table:
    """A time-indexed table of doubles, as in an OpenSim ``.sto``/``.mot`` file.

    Attributes
    ----------
    name : str
        The file's name line (``Storage``'s name), e.g. ``"Coordinates"``; ``""`` if absent.
    time : ndarray, shape (T,)
        The first column, in seconds, strictly increasing.
    labels : list of str, length n
        Column labels without the time column. Labels may repeat (OpenSim's
        JointReaction writes duplicates); :meth:`column` then returns the first.
    data : ndarray, shape (T, n)
        The values, float64; empty or ``nan`` cells are NaN.
    in_degrees : bool or None
        The header's ``inDegrees`` (``yes``/``true`` -> True); None when absent.
    metadata : dict of str -> str
        Every ``key=value`` header line, verbatim (``version``, ``nRows``, ``DataType`` ...).
    comments : list of str
        The free-text header lines (neither the name line nor key=value), blank lines dropped.
    time_label : str
        Label of the first column (``"time"`` in all OpenSim outputs).
    source : Path or None
        The file the table was read from (writers refuse to overwrite it).
    """

    name: str
    time: np.ndarray
    labels: list[str]
    data: np.ndarray
    in_degrees: bool | None = None
    metadata: dict[str, str] = field(default_factory=dict)
    comments: list[str] = field(default_factory=list)
    time_label: str = "time"
    source: Path | None = None

    @property
    def n_rows(self) -> int:
        return int(np.shape(self.time)[0])

    def column(self, label: str) -> np.ndarray:
        """Return the column named ``label``, shape (T,).

        Raises ``KeyError`` when no column has this label; with duplicated labels the first
        column wins (as ``Storage::getStateIndex``).
        """
        try:
            j = self.labels.index(label)
        except ValueError:
            raise KeyError(f"no column {label!r} in table {self.name!r}") from None
        return self.data[:, j]

    def to_radians(self, rotational_labels) -> "Table":
        """Return a copy with the given columns converted from degrees to radians.

        Only when ``in_degrees`` is True; otherwise (False, or None which OpenSim's
        ``Storage`` treats as radians) an unchanged copy is returned. The copy has
        ``in_degrees=False``. Unknown labels raise ``KeyError``.
        """
        data = np.array(self.data, dtype=float, copy=True)
        if self.in_degrees:
            for lab in rotational_labels:
                if lab not in self.labels:
                    raise KeyError(f"no column {lab!r} in table {self.name!r}")
                for j, l2 in enumerate(self.labels):
                    if l2 == lab:
                        data[:, j] = np.deg2rad(data[:, j])
        md = dict(self.metadata)
        if "inDegrees" in md:
            md["inDegrees"] = "no"
        return replace(self, data=data, in_degrees=False if self.in_degrees is not None else None,
                       metadata=md, labels=list(self.labels), time=np.array(self.time, copy=True))


@dataclass
class MarkerTrial:
    """Marker trajectories of one trial.

    Attributes
    ----------
    frames : ndarray of int, shape (T,)
        The ``Frame#`` column.
    time : ndarray, shape (T,)
        Seconds, strictly increasing.
    labels : list of str, length n
        Marker names in file order.
    positions : ndarray, shape (T, n, 3)
        Marker positions in **metres** (converted from the file's ``Units``); NaN where a
        marker is missing (blank or ``nan`` cells; a marker with any blank component is
        wholly NaN, as in ``TRCFileAdapter``).
    data_rate, camera_rate, orig_data_rate : float
        Hz, from the header.
    orig_start_frame, orig_num_frames : int
        ``OrigDataStartFrame`` and ``OrigNumFrames`` from the header.
    units : str
        The file's ``Units`` value (``"mm"``, ``"cm"``, ``"m"`` ...); :func:`write_trc` writes
        in these units by default.
    source : Path or None
        The file the trial was read from.
    """

    frames: np.ndarray
    time: np.ndarray
    labels: list[str]
    positions: np.ndarray
    data_rate: float
    camera_rate: float
    orig_data_rate: float
    orig_start_frame: int
    orig_num_frames: int
    units: str = "m"
    source: Path | None = None

    @property
    def n_frames(self) -> int:
        return int(np.shape(self.time)[0])

    @property
    def n_markers(self) -> int:
        return len(self.labels)

    def marker(self, name: str) -> np.ndarray:
        """Trajectory of marker ``name``, shape (T, 3), metres. ``KeyError`` if absent."""
        try:
            j = self.labels.index(name)
        except ValueError:
            raise KeyError(f"no marker {name!r}") from None
        return self.positions[:, j, :]
