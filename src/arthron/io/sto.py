"""Read and write OpenSim storage files (``.sto``, ``.mot``).

Format (as read by OpenSim's ``Storage`` and ``STOFileAdapter``)::

    <name>                      first line, unless it already is a key=value line
    version=1                   header lines: key=value pairs or free text
    nRows=121                   number of data rows
    nColumns=3                  number of columns, *including* time
    inDegrees=yes               rotational coordinates in degrees (yes) or radians (no)
    endheader
    time<TAB>q1<TAB>q2          column labels; the first column is time
    0.0<TAB>1.5<TAB>2.5         one row per time

Version 2 files (``STOFileAdapter``) carry ``DataType=double``, ``version=2`` and
``OpenSimVersion=`` instead of ``nRows``/``nColumns``; old SIMM ``.mot`` files may use
``datarows``/``datacolumns`` and space-separated columns. All of these read.

Like ``Storage``, the first column is the time column whatever its label.
"""
from __future__ import annotations

import itertools
import math
import os
import sys
from pathlib import Path

import numpy as np

from ..tables import Table
from ..errors import DataFileError, UnsupportedFeature
from .files import atomic_write, check_output, note_input, output_path, write_checked

__all__ = ["Table", "read_sto", "read_mot", "write_sto", "write_mot"]

_RESERVED_KEYS = {"version", "nrows", "ncolumns", "indegrees", "datarows", "datacolumns"}


# --------------------------------------------------------------------------------------
# shared helpers (also used by arthron.io.trc)
# --------------------------------------------------------------------------------------
def _read_lines(path: Path) -> list[str]:
    try:
        raw = path.read_bytes()
    except FileNotFoundError:
        raise DataFileError("file does not exist", path) from None
    except OSError as e:
        raise DataFileError(f"cannot read file: {e.strerror or e}", path) from None
    note_input(path)
    try:
        text = raw.decode("utf-8")
    except UnicodeDecodeError:
        text = raw.decode("latin-1")
    if text.startswith("\ufeff"):
        text = text[1:]
    return text.splitlines()


def _split_cells(line: str) -> list[str]:
    """Split a data/label line: on tabs when it has any, else on runs of whitespace.

    Cells are stripped of surrounding spaces and trailing empty cells (from trailing
    tabs, common in files written by spreadsheets) are dropped.
    """
    if "\t" in line:
        cells = [c.strip() for c in line.split("\t")]
        while cells and cells[-1] == "":
            cells.pop()
        return cells
    return line.split()


def _check_not_input(path: Path, sources) -> Path:
    """Refuse ``path`` when it is one of ``sources`` or an input of the running command
    (:func:`arthron.io.files.check_output`); returns its checked target for
    :func:`_atomic_write_text`."""
    return check_output(path, [s for s in sources if s is not None])


def _atomic_write_text(path: Path, text: str, sources=(), target: Path | None = None) -> None:
    """Write ``text`` to ``path`` whole or not at all (:func:`arthron.io.files.atomic_write`);
    the folder must exist (tools create it: :func:`arthron.io.files.make_output_folder`).
    ``target``: what :func:`_check_not_input` returned for ``path`` and ``sources`` just before
    (then not checked again)."""
    path = Path(path)
    folder = path.parent if str(path.parent) else Path(".")
    if not folder.is_dir() and not Path(os.path.abspath(folder)).is_dir():
        raise DataFileError("output folder does not exist", path)
    if target is not None:
        write_checked(target, path, text)
    else:
        atomic_write(path, text, sources=[s for s in sources if s is not None])


class _LazyOrjson:
    """orjson (Ryu-based shortest float formatting in C), imported on first use: its import
    (with uuid, zoneinfo and json, about 5 ms) costs more than ``repr`` formatting of a
    table below :data:`_ORJSON_MIN` values, which is what most commands write."""

    def __getattr__(self, name):
        import orjson
        return getattr(orjson, name)


_orjson = _LazyOrjson()
_COMMA_TO_TAB = bytes.maketrans(b",", b"\t")
#: tables of fewer values are formatted by ``repr`` (the same text; no orjson import), until
#: the process has formatted this many values in all (then orjson is imported: its import
#: paid once by a process that writes many tables, such as a warm process repeating a tool)
_ORJSON_MIN = 20_000
#: the values :func:`_format_rows` has formatted by ``repr`` in this process
_REPR_VALUES = 0


def expect_values(n_values: int) -> None:
    """Say that about ``n_values`` values (all tables together) are to be written now: from
    :data:`_ORJSON_MIN` on, orjson is imported at once, so that every table of 256 values or
    more takes its route (:func:`_format_rows`; the same text), its import paid once for all
    of them (a tool writing many small tables, such as the AnalyzeTool's)."""
    if _orjson is not None and n_values >= _ORJSON_MIN and "orjson" not in sys.modules:
        try:
            import orjson  # noqa: F401
        except ImportError:                # pragma: no cover - a core dependency
            pass


def _format_rows(full: np.ndarray, row_fmt: str, as_bytes: bool = False):
    """Finite rows (n, m) as tab-separated lines of ``repr(value)`` (by ``repr`` itself below
    :data:`_ORJSON_MIN` values, unless orjson is imported already: then from 256 values, 3-5×
    faster); str, or ASCII bytes with ``as_bytes``.

    orjson prints the same shortest round-trip digits as Python's ``repr`` and the same text
    for every value 0 or of magnitude in [1e-4, 1e16) (checked on 3 million values,
    ``tests/test_io_trc_sto.py``), about 5× faster; cells of other magnitudes (which ``repr``
    writes with an exponent such as ``1e-05``) are formatted by ``repr`` itself and put in
    place (orjson writes them as ``null``, set to NaN for it), not their whole rows: most rows
    of a table of accelerations or reaction loads hold one such cell.

    The ``repr`` route counts its values: once the process has formatted :data:`_ORJSON_MIN`
    of them (many small tables, a tool run again and again), orjson is imported
    (:func:`expect_values`) and the next tables of 256 values or more take its route."""
    global _REPR_VALUES
    dumps = None
    if _orjson is not None and (np.size(full) >= _ORJSON_MIN
                                or ("orjson" in sys.modules and np.size(full) >= 256)):
        try:
            dumps, option = _orjson.dumps, _orjson.OPT_SERIALIZE_NUMPY
        except ImportError:                # pragma: no cover - a core dependency
            dumps = None
    if dumps is None:
        text = (row_fmt * full.shape[0]) % tuple(full.ravel().tolist())
        _REPR_VALUES += full.size
        if _REPR_VALUES >= _ORJSON_MIN:
            expect_values(_REPR_VALUES)
        return text.encode("ascii") if as_bytes else text
    full = np.ascontiguousarray(full, dtype=np.float64)
    a = np.abs(full)
    odd = ((a < 1e-4) & (a != 0)) | (a >= 1e16)
    values = None
    if odd.any():             # these cells by repr: orjson writes them null (as NaN) here ...
        values = full[odd].tolist()
        full = np.where(odd, np.nan, full)
    # [[a,b],[c,d]] -> a\tb\nc\td\n: rows split at "],[" (one pass), joined by newlines (one
    # more after the last), and the commas turned into tabs by one byte translation
    rows = dumps(full, option=option)[2:-2].split(b"],[")
    rows.append(b"")
    raw = b"\n".join(rows).translate(_COMMA_TO_TAB)
    if values is not None:    # ... and each null is replaced by its cell's repr (row-major order)
        pieces = raw.split(b"null")
        out = [b""] * (2 * len(pieces) - 1)
        out[0::2] = pieces
        out[1::2] = "\t".join(map(repr, values)).encode("ascii").split(b"\t")
        raw = b"".join(out)
    return raw if as_bytes else raw.decode("ascii")


def _fmt(x: float) -> str:
    """Shortest decimal string that reads back to the same double (repr), C-readable."""
    if math.isnan(x):
        return "NaN"
    if math.isinf(x):
        return "Inf" if x > 0 else "-Inf"
    return repr(x)


def _parse_bool(value: str) -> bool | None:
    v = value.strip().lower()
    if v in ("yes", "true", "1", "y"):
        return True
    if v in ("no", "false", "0", "n"):
        return False
    return None


# --------------------------------------------------------------------------------------
# reading
# --------------------------------------------------------------------------------------
def read_sto(path) -> Table:
    """Read an OpenSim ``.sto`` or ``.mot`` file.

    Parameters
    ----------
    path : str or os.PathLike

    Returns
    -------
    Table
        ``time`` (T,) s, ``data`` (T, n) in the file's units (no degree conversion:
        see :meth:`Table.to_radians`), ``labels`` without the time column.

    Raises
    ------
    DataFileError
        Missing file; no ``endheader`` line; no column-label line; ``nColumns`` (which counts
        time) different from the number of labels; a row with a different number of cells
        than labels (``where="line N"``); a non-numeric cell (line N, column label);
        ``nRows``/``datarows`` different from the number of data rows; time not strictly
        increasing (line N).
    UnsupportedFeature
        A version-2 file whose ``DataType`` is not ``double`` (e.g. ``Vec3`` tables).

    Source
    ------
    OpenSim ``Storage`` (header up to ``endheader``; first line = name; ``nRows``,
    ``nColumns`` incl. time, ``inDegrees``) and ``STOFileAdapter``/``DelimFileAdapter``
    (``key=value`` metadata, ``DataType``, ``version=2``, tab-delimited).
    """
    path = Path(path)
    lines = _read_lines(path)
    end = None
    for i, line in enumerate(lines):
        if line.strip().lower() == "endheader":
            end = i
            break
    if end is None:
        raise DataFileError("no 'endheader' line: not an OpenSim .sto/.mot file", path)

    name = ""
    metadata: dict[str, str] = {}
    comments: list[str] = []
    key_line: dict[str, int] = {}
    for i in range(end):
        text = lines[i].strip()
        if i == 0 and "=" not in text:
            name = text
            continue
        if not text:
            continue
        if "=" in text:
            k, v = text.split("=", 1)
            k = k.strip()
            metadata[k] = v.strip()
            key_line[k.lower()] = i + 1
        else:
            comments.append(text)
    lower = {k.lower(): v for k, v in metadata.items()}
    spelled = {k.lower(): k for k in metadata}

    dtype = lower.get("datatype")
    if dtype is not None and dtype.strip().lower() not in ("double", ""):
        raise UnsupportedFeature(f"DataType={dtype} tables are not supported (only double)", path,
                                 f"line {key_line['datatype']}")

    def _int_key(*keys):
        for k in keys:
            if k in lower:
                try:
                    x = float(lower[k])
                except ValueError:
                    x = math.nan
                if not (math.isfinite(x) and x == int(x) and 0 <= x < 2 ** 53):
                    raise DataFileError(f"header value {spelled[k]}={lower[k]!r} is not a count "
                                        "(a non-negative integer)", path, f"line {key_line[k]}")
                return int(x), k
        return None, None

    n_rows_hdr, rows_key = _int_key("nrows", "datarows")
    n_cols_hdr, cols_key = _int_key("ncolumns", "datacolumns")
    in_degrees = _parse_bool(lower["indegrees"]) if "indegrees" in lower else None

    # column labels: first non-blank line after endheader
    i = end + 1
    while i < len(lines) and not lines[i].strip():
        i += 1
    if i >= len(lines):
        raise DataFileError("no column-label line after 'endheader'", path, f"line {end + 1}")
    all_labels = _split_cells(lines[i])
    label_lineno = i + 1
    if any(lab == "" for lab in all_labels):
        raise DataFileError("empty column label", path, f"line {label_lineno}")
    if len(all_labels) < 1:
        raise DataFileError("no column labels", path, f"line {label_lineno}")
    if n_cols_hdr is not None and n_cols_hdr != len(all_labels):
        raise DataFileError(
            f"header says {spelled[cols_key]}={n_cols_hdr} (columns including time) but the label line has "
            f"{len(all_labels)} labels", path, f"line {key_line[cols_key]}")
    ncol = len(all_labels)

    rows = _parse_rows_fast(lines, i + 1, ncol)
    linenos = None
    if rows is None:
        rows, linenos = _parse_rows(lines, i + 1, ncol, all_labels, path)
    if n_rows_hdr is not None and n_rows_hdr != len(rows):
        raise DataFileError(f"header says {spelled[rows_key]}={n_rows_hdr} but the file has {len(rows)} data rows",
                            path, f"line {key_line[rows_key]}")
    arr = np.asarray(rows, dtype=float).reshape(len(rows), ncol)     # numpy's rows: no copy
    time = arr[:, 0].copy()
    bad_time = not np.all(np.isfinite(time)) or (len(time) > 1 and not np.all(np.diff(time) > 0))
    if bad_time and linenos is None:         # line numbers for the message
        linenos = [j + 1 for j in range(i + 1, len(lines)) if lines[j].strip()]
    if not np.all(np.isfinite(time)):
        k = int(np.flatnonzero(~np.isfinite(time))[0])
        raise DataFileError("time is not a finite number", path, f"line {linenos[k]}")
    if len(time) > 1:
        bad = np.flatnonzero(np.diff(time) <= 0)
        if bad.size:
            k = int(bad[0]) + 1
            raise DataFileError(f"time {float(time[k])!r} is not greater than the previous time "
                                f"{float(time[k - 1])!r}",
                                path, f"line {linenos[k]}")
    return Table(name=name, time=time, labels=list(all_labels[1:]), data=arr[:, 1:].copy(),
                 in_degrees=in_degrees, metadata=metadata, comments=comments,
                 time_label=all_labels[0], source=path)


def _parse_rows_numpy(lines, start, ncol):
    """The data rows (n, ncol) read by numpy's C parser (``np.loadtxt``: Python's float
    conversion, no comments, no quotes) when every line is tab-separated, or none is, and every
    cell parses; None otherwise (empty cells, a row of another length, a whitespace-only line
    between tab-separated ones, cells numpy refuses but Python's float reads such as
    ``1_000``)."""
    body = lines[start:]
    if not body:
        return None
    delimiter = "\t" if "\t" in body[0] else None
    if delimiter is None and any("\t" in ln for ln in body):
        return None
    try:
        rows = np.loadtxt(body, delimiter=delimiter, comments=None, dtype=float, ndmin=2)
    except ValueError:
        return None
    return rows if rows.shape[1] == ncol else None


def _parse_rows_fast(lines, start, ncol):
    """The data rows (lists of floats, or an array) when every non-blank line has ``ncol``
    cells that all parse (the common case: numpy's parser, :func:`_parse_rows_numpy`, or one
    ``map(float)`` per line); None otherwise, and :func:`_parse_rows` then finds and names the
    bad line. Same cells as :func:`_split_cells`: tab-separated lines split on tabs (an empty
    cell fails here and goes the slow way, which reads it as NaN), others on whitespace."""
    rows = _parse_rows_numpy(lines, start, ncol)
    if rows is not None:
        return rows
    rows = []
    try:
        for line in lines[start:]:
            cells = line.split("\t") if "\t" in line else line.split()
            if len(cells) != ncol:
                if not line.strip():
                    continue
                return None
            rows.append(list(map(float, cells)))
    except ValueError:
        return None
    return rows


def _parse_rows(lines, start, ncol, all_labels, path):
    """The data rows and their line numbers, cell by cell, with the error naming the line."""
    rows: list[list[float]] = []
    linenos: list[int] = []
    for j in range(start, len(lines)):
        line = lines[j]
        if not line.strip():
            continue
        cells = _split_cells(line)
        if len(cells) != ncol:
            raise DataFileError(f"row has {len(cells)} cells but there are {ncol} column labels",
                                path, f"line {j + 1}")
        row = []
        for c, cell in enumerate(cells):
            if cell == "":
                row.append(math.nan)
                continue
            try:
                row.append(float(cell))
            except ValueError:
                raise DataFileError(f"non-numeric value {cell!r} in column {all_labels[c]!r}", path,
                                    f"line {j + 1}") from None
        rows.append(row)
        linenos.append(j + 1)
    return rows, linenos


read_mot = read_sto


# --------------------------------------------------------------------------------------
# writing
# --------------------------------------------------------------------------------------
def _validate_labels(labels, path, what="label"):
    for lab in labels:
        if not isinstance(lab, str) or lab == "" or any(ch in lab for ch in "\t\r\n"):
            raise DataFileError(f"invalid column {what} {lab!r} (empty or containing tab/newline)", path)


def _header_version(metadata: dict, path) -> int:
    """The ``version`` to write: the table's own when it is a positive integer (``version=3``
    of files written by OpenSim's ``STOFileAdapter``/C3D adapter is kept), else 1 (``Storage``'s)."""
    for k, v in metadata.items():
        if k.strip().lower() == "version":
            try:
                n = int(str(v).strip())
            except ValueError:
                return 1
            return n if n >= 1 else 1
    return 1


def format_sto(table: Table, path=None, allow_nan: bool = False) -> str:
    """Return the text :func:`write_sto` writes (tab-delimited, repr floats; the header's
    ``version`` is the table's own, default 1)."""
    return "".join(iter_sto(table, path, allow_nan))


_ROWS_PER_PIECE = 2000


def iter_sto(table: Table, path=None, allow_nan: bool = False, as_bytes: bool = False):
    """The text of :func:`format_sto` in pieces (the header, then blocks of rows), checked
    before the first piece: what :func:`write_sto` streams to disk, so that a long table is
    never held as one string. ``as_bytes``: the blocks of rows as ASCII bytes (what is written;
    the header stays a str)."""
    head = _sto_header(table, path, allow_nan)
    yield head
    time = np.asarray(table.time, float)
    data = np.asarray(table.data, float)
    row_fmt = "\t".join(["%r"] * (1 + data.shape[1])) + "\n"
    for a in range(0, time.size, _ROWS_PER_PIECE):
        b = min(time.size, a + _ROWS_PER_PIECE)
        full = np.column_stack([time[a:b], data[a:b]]) if data.size else time[a:b, None]
        if np.isfinite(full).all():          # C-level formatting of the block (repr of each)
            yield _format_rows(full, row_fmt, as_bytes)
        else:
            text = "".join("\t".join(_fmt(v) for v in row) + "\n" for row in full.tolist())
            yield text.encode("ascii") if as_bytes else text


def _sto_header(table: Table, path=None, allow_nan: bool = False) -> str:
    time = np.asarray(table.time, dtype=float)
    data = np.asarray(table.data, dtype=float)
    if time.ndim != 1:
        raise DataFileError(f"time must have shape (T,), got {time.shape}", path)
    if data.ndim != 2 or data.shape[0] != time.shape[0]:
        raise DataFileError(f"data must have shape (T={time.shape[0]}, n), got {data.shape}", path)
    if len(table.labels) != data.shape[1]:
        raise DataFileError(f"{len(table.labels)} labels for {data.shape[1]} data columns", path)
    _validate_labels([table.time_label or "time", *table.labels], path)
    if not np.all(np.isfinite(time)):
        raise DataFileError("time contains NaN or Inf", path)
    if time.size > 1 and np.any(np.diff(time) <= 0):
        k = int(np.flatnonzero(np.diff(time) <= 0)[0]) + 1
        raise DataFileError(f"time is not strictly increasing at row {k}", path)
    if not allow_nan and not np.all(np.isfinite(data)):
        r, c = (int(v) for v in np.argwhere(~np.isfinite(data))[0])
        raise DataFileError(
            f"data contains NaN/Inf (row {r}, column {table.labels[c]!r}); OpenSim's Storage (used by "
            "the ID/IK/Analyze tools) silently stops reading at such a cell. Pass allow_nan=True to "
            "write them as NaN/Inf anyway (STOFileAdapter and arthron read them)", path)
    name = (table.name or "").strip() or (Path(path).stem if path is not None else "table")
    if "=" in name or "\n" in name or "\r" in name:
        raise DataFileError(f"invalid table name {name!r} (must not contain '=' or newlines)", path)

    version = _header_version(table.metadata, path)
    out = [name, f"version={version}", f"nRows={time.shape[0]}", f"nColumns={data.shape[1] + 1}"]
    if table.in_degrees is not None:
        out.append(f"inDegrees={'yes' if table.in_degrees else 'no'}")
    for k, v in table.metadata.items():
        if k.strip().lower() in _RESERVED_KEYS:
            continue
        k, v = str(k).strip(), str(v).strip()
        if not k or any(ch in k + v for ch in "\r\n") or "=" in k:
            raise DataFileError(f"invalid metadata entry {k!r}={v!r}", path)
        out.append(f"{k}={v}")
    for c in table.comments:
        c = str(c).strip()
        if c.lower() == "endheader" or any(ch in c for ch in "\r\n"):
            raise DataFileError(f"invalid comment line {c!r}", path)
        if c:
            out.append(c)
    out.append("endheader")
    out.append("\t".join([table.time_label or "time", *table.labels]))
    return "\n".join(out) + "\n"


def write_sto(path, table: Table, *, allow_nan: bool = False) -> None:
    """Write ``table`` as an OpenSim storage file readable by ``Storage`` and ``STOFileAdapter``.

    Header: name line, ``version`` (the table's ``metadata["version"]`` when it has one, e.g.
    ``3`` for tables read from OpenSim's C3D-adapter outputs; else 1), ``nRows``,
    ``nColumns`` (counting time), ``inDegrees`` (when ``table.in_degrees`` is not None), the
    table's other ``key=value`` metadata (``DataType``, ``OpenSimVersion``, ``DataRate`` ...
    kept as read) and comment lines, ``endheader``; then the label line starting with the time label and one
    tab-separated row per time. Values use Python's shortest round-trip repr (17
    significant digits at most) so the doubles read back identically.

    Non-finite data are refused unless ``allow_nan=True`` (then written ``NaN``/``Inf``/``-Inf``,
    OpenSim's spelling, as in its ``std_walking2_*`` C3D-adapter outputs):
    OpenSim 4.6's ``Storage`` reader cannot parse them and silently drops the rest of the
    file from that cell on (measured: a 3-row file with ``nan`` in row 2 reads as 2 rows).

    The file is written whole or not at all (temporary file in the same folder, then
    ``os.replace``).

    Raises
    ------
    DataFileError
        Inconsistent table (labels count != data columns, time shape, time not strictly
        increasing or non-finite, labels with tabs/newlines, NaN/Inf data without
        ``allow_nan``); the output path is the file the table was read from (``table.source``)
        or one it was computed from (``table.inputs``); the folder does not exist or is not writable.
    """
    path = output_path(path, "write_sto", "table")
    sources = [table.source, *getattr(table, "inputs", ())]     # a result never over what it was computed from
    target = _check_not_input(path, sources)
    pieces = iter_sto(table, path, allow_nan=allow_nan, as_bytes=True)
    first = next(pieces)                  # the checks run before anything is created
    _atomic_write_text(path, itertools.chain([first], pieces), sources, target)


write_mot = write_sto
