"""Read and write marker trajectories in the ``.trc`` format (as OpenSim's ``TRCFileAdapter``).

Layout (tab-delimited)::

    line 1  PathFileType<TAB>4<TAB>(X/Y/Z)<TAB><file name>
    line 2  DataRate CameraRate NumFrames NumMarkers Units OrigDataRate OrigDataStartFrame OrigNumFrames
    line 3  the eight values of line 2
    line 4  Frame#<TAB>Time<TAB>name1<TAB><TAB><TAB>name2 ...
    line 5  <TAB><TAB>X1<TAB>Y1<TAB>Z1<TAB>X2 ...
            optional blank line(s)
    data    frame<TAB>time<TAB>x1<TAB>y1<TAB>z1 ...   (blank cells = missing marker)

Positions are stored in the file in ``Units`` (mm, cm or m); :class:`MarkerTrial` holds them
in metres.
"""
from __future__ import annotations

import io
import math
import re
import warnings
from pathlib import Path

import numpy as np

from ..tables import MarkerTrial
from ..errors import ArthronWarning, DataFileError
from .sto import _atomic_write_text, _check_not_input, _fmt, _read_lines
from .files import output_path

__all__ = ["MarkerTrial", "read_trc", "write_trc", "UNIT_DIVISORS"]

#: file unit -> number of file units per metre
UNIT_DIVISORS = {"mm": 1000.0, "millimeters": 1000.0, "millimetres": 1000.0,
                 "cm": 100.0, "centimeters": 100.0, "centimetres": 100.0,
                 "m": 1.0, "meters": 1.0, "metres": 1.0}

#: file unit -> power of ten of one metre in that unit (the decimal point shift)
_EXPONENT = {k: int(round(math.log10(v))) for k, v in UNIT_DIVISORS.items()}

_HEADER_KEYS = ["DataRate", "CameraRate", "NumFrames", "NumMarkers", "Units", "OrigDataRate",
                "OrigDataStartFrame", "OrigNumFrames"]


def _num(value: str, key: str, path, line: int, integer=False):
    try:
        x = float(value)
    except ValueError:
        raise DataFileError(f"header value {key}={value!r} is not a number", path, f"line {line}") from None
    if integer:
        if not math.isfinite(x) or x != int(x):
            raise DataFileError(f"header value {key}={value!r} is not an integer", path, f"line {line}")
        return int(x)
    return x


def read_trc(path) -> MarkerTrial:
    """Read a ``.trc`` marker file.

    Returns
    -------
    MarkerTrial
        ``positions`` (T, n_markers, 3) in metres, ``time`` (T,) s, ``frames`` (T,) int.

    Raises
    ------
    DataFileError
        (message names the file and ``line N``) first line not ``PathFileType``; header keys
        not the eight OpenSim requires (``Units`` missing included) or values count differing;
        unknown ``Units``; label line not ``Frame#``, ``Time`` + ``NumMarkers`` names; the
        ``X1 Y1 Z1 ...`` line wrong; a data row with a number of cells other than
        2 + 3·NumMarkers; a non-numeric cell; non-finite or non-increasing time; more data
        rows than ``NumFrames`` (OpenSim's TRCFileAdapter reads them all, its ScaleTool's
        MarkerData only the first NumFrames); data after a blank line.

    Warns
    -----
    ArthronWarning
        fewer data rows than ``NumFrames`` (Pose2Sim's demo trials): the rows there are read,
        as OpenSim 4.6 reads them in IK and in the ScaleTool.

    Source
    ------
    OpenSim ``TRCFileAdapter::extendRead``: header on lines 1–5, tab delimiters, blank lines
    between header and data skipped, a blank line ends the data, a marker with an empty
    component is NaN. Unlike OpenSim, units are converted to metres here (OpenSim's
    ``MarkersReference`` does the same when it loads a TRC for IK) and ``NumFrames`` is checked as above.
    The conversion shifts the decimal point of the text before rounding once, so each value
    is the double nearest to the file's decimal number in metres (it may differ by 1 ulp from
    ``float(text) / 1000``, which rounds twice).
    """
    path = Path(path)
    lines = _read_lines(path)
    if not lines or not lines[0].strip():
        raise DataFileError("empty file", path, "line 1")
    if lines[0].split()[0] != "PathFileType":
        raise DataFileError("first line must start with 'PathFileType' (not a .trc file)", path, "line 1")
    if len(lines) < 5:
        raise DataFileError("truncated header: a .trc header has 5 lines", path, f"line {len(lines)}")

    keys = [k for k in (c.strip() for c in re.split(r"[\t ]", lines[1])) if k]
    values = [v for v in (c.strip() for c in re.split(r"[\t ]", lines[2])) if v]
    missing = [k for k in _HEADER_KEYS if k not in keys]
    if missing:
        raise DataFileError(f"header keys missing: {', '.join(missing)} (OpenSim requires "
                            f"{' '.join(_HEADER_KEYS)})", path, "line 2")
    if len(values) != len(keys):
        raise DataFileError(f"{len(keys)} header keys but {len(values)} values", path, "line 3")
    hdr = dict(zip(keys, values))
    units = hdr["Units"]
    if units.lower() not in UNIT_DIVISORS:
        raise DataFileError(f"unknown Units {units!r} (expected mm, cm or m)", path, "line 3")
    exp = _EXPONENT[units.lower()]
    n_frames_hdr = _num(hdr["NumFrames"], "NumFrames", path, 3, integer=True)
    n_markers = _num(hdr["NumMarkers"], "NumMarkers", path, 3, integer=True)

    names = [c.strip() for c in lines[3].split("\t")]
    names = [c for c in names if c]
    if len(names) < 2 or names[0] != "Frame#" or names[1].lower() != "time":
        raise DataFileError("label line must start with 'Frame#' and 'Time'", path, "line 4")
    labels = names[2:]
    if len(labels) != n_markers:
        raise DataFileError(f"NumMarkers={n_markers} but the label line names {len(labels)} markers",
                            path, "line 4")
    if len(set(labels)) != len(labels):
        dup = sorted({lab for lab in labels if labels.count(lab) > 1})
        raise DataFileError(f"duplicate marker names: {', '.join(dup)}", path, "line 4")
    xyz = [c for c in (c.strip() for c in re.split(r"[\t ]", lines[4])) if c]
    expected_xyz = [f"{a}{i}" for i in range(1, n_markers + 1) for a in "XYZ"]
    if len(xyz) < len(expected_xyz) or [s.upper() for s in xyz[:len(expected_xyz)]] != expected_xyz:
        raise DataFileError(f"expected the component line X1 Y1 Z1 ... Z{n_markers}", path, "line 5")

    ncell = 2 + 3 * n_markers
    frames: list[int] = []
    times: list[float] = []
    rows: list[list[float]] = []
    linenos: list[int] = []
    i = 5
    while i < len(lines) and not lines[i].strip():
        i += 1
    bulk = _bulk_rows(lines, i, ncell, exp)
    if bulk is not None:
        frames, times, rows = bulk
        lines = lines[:i]          # the checking loop below then has nothing left to read
    ended_at = None
    for j in range(i, len(lines)):
        line = lines[j]
        if not line.strip():
            if ended_at is None:
                ended_at = j + 1
            continue
        if ended_at is not None:
            raise DataFileError(f"data continue after the blank line {ended_at} (OpenSim stops reading "
                                "at a blank line)", path, f"line {j + 1}")
        if "\t" in line:
            cells = [c.strip() for c in line.split("\t")]
            while len(cells) > ncell and cells[-1] == "":
                cells.pop()
        else:
            cells = line.split()
        if len(cells) != ncell:
            raise DataFileError(f"row has {len(cells)} cells, expected {ncell} (Frame#, Time and 3 per "
                                f"marker for {n_markers} markers)", path, f"line {j + 1}")
        try:
            fr = float(cells[0])
            t = float(cells[1])
        except ValueError:
            raise DataFileError("Frame# and Time must be numbers", path, f"line {j + 1}") from None
        if not math.isfinite(t):
            raise DataFileError("time is not a finite number", path, f"line {j + 1}")
        if not math.isfinite(fr) or fr != int(fr) or abs(fr) >= 2 ** 62:
            raise DataFileError(f"Frame# {cells[0]!r} is not an integer", path, f"line {j + 1}")
        vals = []
        for m in range(n_markers):
            comp = cells[2 + 3 * m: 5 + 3 * m]
            if any(c == "" for c in comp):
                vals.extend((math.nan, math.nan, math.nan))
                continue
            try:
                xyz3 = [_from_file_text(c, exp) for c in comp]
            except ValueError:
                raise DataFileError(f"non-numeric coordinate of marker {labels[m]!r}: {comp!r}", path,
                                    f"line {j + 1}") from None
            if any(math.isnan(v) for v in xyz3):
                xyz3 = [math.nan] * 3
            vals.extend(xyz3)
        if times and not t > times[-1]:
            raise DataFileError(f"time {t!r} is not greater than the previous time {times[-1]!r}", path,
                                f"line {j + 1}")
        frames.append(int(fr))
        times.append(t)
        rows.append(vals)
        linenos.append(j + 1)

    if len(rows) > n_frames_hdr:
        # OpenSim's tools disagree here: the TRCFileAdapter (IK) reads every row, MarkerData
        # (ScaleTool) the first NumFrames
        raise DataFileError(f"NumFrames={n_frames_hdr} but the file has {len(rows)} data rows", path, "line 3")
    if len(rows) < n_frames_hdr:
        warnings.warn(f"{path}: line 3: NumFrames={n_frames_hdr} but the file has {len(rows)} data "
                      f"rows; the {len(rows)} rows are read, as OpenSim reads them", ArthronWarning,
                      stacklevel=2)
    pos = np.asarray(rows, dtype=float).reshape(len(rows), n_markers, 3)
    return MarkerTrial(
        frames=np.array(frames, dtype=int),
        time=np.array(times, dtype=float),
        labels=labels,
        positions=pos,
        data_rate=_num(hdr["DataRate"], "DataRate", path, 3),
        camera_rate=_num(hdr["CameraRate"], "CameraRate", path, 3),
        orig_data_rate=_num(hdr["OrigDataRate"], "OrigDataRate", path, 3),
        orig_start_frame=_num(hdr["OrigDataStartFrame"], "OrigDataStartFrame", path, 3, integer=True),
        orig_num_frames=_num(hdr["OrigNumFrames"], "OrigNumFrames", path, 3, integer=True),
        units=units,
        source=path,
    )


#: the characters a regular data block holds (digits, '.', signs, tabs, newlines); anything
#: else (exponents, nan/inf, spaces, non-ASCII) leaves the block to the checking loop
_REGULAR_BYTES = b"0123456789.\t\n+-"


def _bulk_rows(lines, start, ncell, exp):
    """The data rows of a regular block parsed at once: (frames list, times list, positions
    (T, ncell − 2) in metres), or None when anything is irregular (missing markers, exponents,
    nan, spaces, a wrong cell count, blank lines, times not increasing, non-integer frames), so
    that the checking loop of :func:`read_trc` reads the file and reports what is wrong.

    Same numbers as the loop: every position cell is converted from its text with the decimal
    point shifted (``<cell>e-<exp>``, one correctly rounded conversion by numpy's text reader,
    as ``float`` does), Frame# and Time with ``float``.
    """
    end = len(lines)
    while end > start and not lines[end - 1].strip():
        end -= 1
    if end <= start:
        return None
    data = [ln.rstrip("\t") for ln in lines[start:end]]
    text = "\n".join(data)
    try:
        raw = text.encode("ascii")
    except UnicodeEncodeError:
        return None
    if raw.translate(None, _REGULAR_BYTES) or raw.startswith(b"\t"):
        return None
    # empty cells and rows with another number of cells raise loadtxt's ValueError, blank
    # lines (which loadtxt skips) give a row count other than T: all left to the loop
    T = len(data)
    try:
        ft = np.array([ln.split("\t", 2)[:2] for ln in data], dtype=float).reshape(T, 2)
        fr, t = ft[:, 0], ft[:, 1]
        if exp:
            sh = b"e-%d" % exp
            raw = raw.replace(b"\t", sh + b"\t").replace(b"\n", sh + b"\n") + sh
        vals = np.loadtxt(io.BytesIO(raw), dtype=float, delimiter="\t", ndmin=2)
        if vals.shape != (T, ncell):
            return None
        vals = vals[:, 2:]
    except ValueError:            # e.g. a lone sign or a cell of dots
        return None
    if (not np.all(np.isfinite(t)) or not np.all(np.isfinite(vals)) or np.any(np.diff(t) <= 0)
            or not np.all(np.isfinite(fr)) or np.any(fr != np.round(fr)) or np.any(np.abs(fr) >= 2 ** 62)):
        return None
    return [int(f) for f in fr], [float(x) for x in t], vals


def _fmt_rate(x: float) -> str:
    x = float(x)
    return str(int(x)) if math.isfinite(x) and x == int(x) else _fmt(x)


def _shift(tok: str, exp: int) -> str:
    """Decimal string ``tok`` times 10**exp, exactly (no binary rounding)."""
    from decimal import Decimal         # imported on use: reading a regular file needs none
    d = Decimal(tok).scaleb(exp)
    return format(d, "f") if -7 < d.adjusted() < 21 else str(d)


def _to_file_text(x: float, exp: int) -> str:
    """metres -> file-unit text: the shortest round-trip repr of ``x`` with its decimal point
    moved by ``exp`` places, so that reading it back (decimal shift, one rounding) gives
    exactly ``x``."""
    if not math.isfinite(x):
        return _fmt(x)
    r = repr(x)
    return r if exp == 0 else _shift(r, exp)


def _from_file_text(tok: str, exp: int) -> float:
    """file-unit text -> metres: the double nearest to (decimal value) × 10**-exp."""
    if exp == 0:
        return float(tok)
    if "e" in tok or "E" in tok or tok.lower().lstrip("+-") in ("nan", "inf", "infinity"):
        from decimal import Decimal, InvalidOperation
        try:
            return float(Decimal(tok).scaleb(-exp))
        except (InvalidOperation, ValueError):
            raise ValueError(tok) from None
    return float(f"{tok}e-{exp}")


def format_trc(trial: MarkerTrial, path, units: str | None = None) -> str:
    """Return the text :func:`write_trc` writes."""
    units = trial.units if units is None else units
    if units.lower() not in UNIT_DIVISORS:
        raise DataFileError(f"unknown units {units!r} (expected mm, cm or m)", path)
    time = np.asarray(trial.time, dtype=float)
    frames = np.asarray(trial.frames)
    pos = np.asarray(trial.positions, dtype=float)
    n = len(trial.labels)
    T = time.shape[0] if time.ndim == 1 else -1
    if time.ndim != 1 or pos.shape != (T, n, 3) or frames.shape != (T,):
        raise DataFileError(f"inconsistent trial: time {time.shape}, frames {frames.shape}, positions "
                            f"{pos.shape} for {n} labels (expected (T,), (T,), (T, {n}, 3))", path)
    for lab in trial.labels:
        if not isinstance(lab, str) or not lab.strip() or lab != lab.strip() or any(ch in lab for ch in "\t\r\n"):
            raise DataFileError(f"invalid marker name {lab!r} (empty, padded, or containing tab/newline)", path)
    if len(set(trial.labels)) != n:
        raise DataFileError("duplicate marker names", path)
    if not np.all(np.isfinite(time)) or (T > 1 and np.any(np.diff(time) <= 0)):
        raise DataFileError("time must be finite and strictly increasing", path)
    if T and not np.array_equal(frames, np.round(frames)):
        raise DataFileError("frames must be integers", path)

    out = [f"PathFileType\t4\t(X/Y/Z)\t{Path(path).name}",
           "\t".join(_HEADER_KEYS),
           "\t".join([_fmt_rate(trial.data_rate), _fmt_rate(trial.camera_rate), str(T), str(n), units,
                      _fmt_rate(trial.orig_data_rate), str(int(trial.orig_start_frame)),
                      str(int(trial.orig_num_frames))]),
           "\t".join(["Frame#", "Time"] + [f"{lab}\t\t" for lab in trial.labels]),
           "\t".join(["", ""] + [f"{a}{i}" for i in range(1, n + 1) for a in "XYZ"]),
           ""]
    exp = _EXPONENT[units.lower()]
    vals = pos.reshape(T, 3 * n)
    for k in range(T):
        cells = [str(int(frames[k])), _fmt(float(time[k]))]
        cells.extend(_to_file_text(v, exp) for v in vals[k].tolist())
        out.append("\t".join(cells))
    return "\n".join(out) + "\n"


def write_trc(path, trial: MarkerTrial, units: str | None = None) -> None:
    """Write ``trial`` as a ``.trc`` file readable by OpenSim's ``TRCFileAdapter``.

    Parameters
    ----------
    path : str or os.PathLike
    trial : MarkerTrial
        Positions in metres.
    units : {"mm", "cm", "m"}, optional
        Units of the file; default ``trial.units``. Values written = metres × (1000, 100, 1).

    The header is the one ``TRCFileAdapter::extendWrite`` produces (``NumFrames`` and
    ``NumMarkers`` from the data), then a blank line and the rows. Numbers use the shortest
    round-trip repr of the metre value with its decimal point moved (×1000 for mm, ×100
    for cm, done on the decimal string, not in binary), and :func:`read_trc` moves it back
    before its single rounding, so ``read_trc`` of a written file gives back exactly the same
    doubles in every unit;
    missing markers are written ``NaN`` (``std::stod`` and arthron read them as NaN).
    Written whole or not at all.

    Raises
    ------
    DataFileError
        Inconsistent shapes, bad marker names (empty, tab/newline, duplicates), time not
        strictly increasing, unknown units, the output being the file the trial was read from,
        or a write failure.
    """
    path = output_path(path, "write_trc", "trial")
    target = _check_not_input(path, [trial.source])
    text = format_trc(trial, path, units)
    _atomic_write_text(path, text, [trial.source], target)
