"""Neutral data containers for trials and results: :class:`Table` (a time-indexed table, as in an
OpenSim ``.sto``/``.mot``) and :class:`MarkerTrial` (marker trajectories, as in a ``.trc``).

Solvers take and return these objects; the readers and writers of the file formats live in
:mod:`arthron.io.sto` and :mod:`arthron.io.trc`. Nothing here reads or writes files.
"""
from __future__ import annotations

from dataclasses import field, replace
from pathlib import Path

import numpy as np

from .errors import DataFileError, OptionError
from .runtime import dataclass  # dataclasses.dataclass with shared __repr__/__eq__

__all__ = ["Table", "MarkerTrial", "check_marker_trial", "check_times", "input_files"]


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
    inputs : tuple of paths
        The files a computed table derives from (a solver's result: the motion, trial and model
        it read); writers refuse to overwrite them too. Not compared by ``==``.
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
    inputs: tuple = field(default=(), repr=False, compare=False)

    def __post_init__(self):
        """Shapes checked where the table is made (not deep inside a solver): ``time`` (T,),
        ``data`` (T, n); lists are turned into float arrays. Raises OptionError naming the field
        and both shapes (a transposed ``data`` is named as such)."""
        self.time = _float_array(self.time, "time", self.name)
        self.data = _float_array(self.data, "data", self.name)
        if self.time.ndim != 1:
            raise OptionError(f"Table {self.name!r}: time must have shape (T,), got {self.time.shape}")
        T, n = self.time.shape[0], len(self.labels)
        if self.data.ndim != 2 or self.data.shape[0] != T:     # (labels vs columns: checked by users of the
            # table, write_sto and the motion readers, so that a table can be built then relabelled)
            hint = ""
            if self.data.shape == (n, T):
                hint = " (transposed: frames are the leading axis, pass data.T)"
            elif self.data.ndim == 1 and self.data.shape[0] == T and n == 1:
                hint = " (one column: pass data[:, None])"
            raise OptionError(f"Table {self.name!r}: data must have shape (T, n_labels) = ({T}, {n}) for "
                              f"{T} times and {n} labels, got {self.data.shape}{hint}")

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

    def __post_init__(self):
        """Shapes checked where the trial is made: ``time`` (T,), ``positions`` (T, n, 3) for
        n = len(labels); lists are turned into arrays. Raises OptionError naming both shapes."""
        self.time = _float_array(self.time, "time", "marker trial")
        self.positions = _float_array(self.positions, "positions", "marker trial")
        if self.time.ndim != 1:
            raise OptionError(f"MarkerTrial: time must have shape (T,), got {self.time.shape}")
        T, n = self.time.shape[0], len(self.labels)
        if self.positions.shape != (T, n, 3):
            hint = (" (transposed: pass positions.transpose(0, 2, 1))"
                    if self.positions.shape == (T, 3, n) else "")
            raise OptionError(f"MarkerTrial: positions must have shape (T, n_markers, 3) = ({T}, {n}, 3) "
                              f"for {T} times and {n} labels, metres, got {self.positions.shape}{hint}")

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


def _float_array(x, field_name: str, owner) -> np.ndarray:
    """``x`` itself when it is a float64 ndarray (subclasses kept), else as one; OptionError
    naming ``owner`` and the field when it holds no numbers."""
    if isinstance(x, np.ndarray) and x.dtype == np.float64:
        return x
    try:
        return np.asarray(x, dtype=float)
    except (TypeError, ValueError) as e:
        raise OptionError(f"{owner!r}: {field_name} must be numbers ({e})") from None


def check_marker_trial(trial) -> "MarkerTrial":
    """``trial`` when it is a MarkerTrial with at least one frame and strictly increasing times
    (what the solvers need); OptionError when it is not a MarkerTrial (a path: read it with
    :func:`arthron.io.trc.read_trc`), DataFileError naming the rows otherwise."""
    if not all(hasattr(trial, a) for a in ("time", "labels", "positions")):
        hint = (" (read the file first: arthron.io.trc.read_trc(path), or use arthron.tools.ik_tool.run_ik, "
                "which takes paths)" if isinstance(trial, (str, Path)) else "")
        raise OptionError(f"trial must be an arthron MarkerTrial, got {type(trial).__name__}{hint}")
    check_times(trial.time, getattr(trial, "source", None), "the marker trial has no frames")
    return trial


def check_times(time, src, empty: str) -> None:
    """DataFileError naming ``src`` when ``time`` has no rows (message ``empty``) or its times
    do not strictly increase (the two rows named)."""
    t = np.asarray(time, float)
    if t.shape[0] == 0:
        raise DataFileError(empty, src)
    dt = np.diff(t)
    if dt.size and not np.all(dt > 0):
        k = int(np.argmax(~(dt > 0)))
        raise DataFileError(f"times must be strictly increasing: row {k + 1} at t = {t[k]:.6g} s, then row "
                            f"{k + 2} at t = {t[k + 1]:.6g} s", src, "time column")


def input_files(*objects) -> tuple:
    """The files ``objects`` (Models, Tables, MarkerTrials, None) were read from, for a result's
    :attr:`Table.inputs`."""
    return tuple(Path(s) for s in (getattr(o, "source", None) for o in objects) if s)
