"""Reading C3D motion-capture files with ezc3d (Michaud and Begon 2021, *ezc3d: An easy C3D file
I/O cross-platform solution for C++, Python and MATLAB*, JOSS 6(58):2911).

:func:`read_c3d` returns a :class:`C3DTrial` with

- ``markers``: a :class:`~arthron.tables.MarkerTrial` (positions in metres, the file's ``POINT:UNITS``
  kept in ``units`` for writing); points named in ``POINT:ANGLES/FORCES/MOMENTS/POWERS/SCALARS``
  are not markers and are left out; a point whose residual is negative (the C3D "invalid" flag,
  ezc3d's ``isEmpty``) is NaN, as in OpenSim's ``C3DFileAdapter``;
- ``analogs``: a :class:`~arthron.tables.Table` of every analog channel (``ANALOG:LABELS``) at the
  analog rate, scaled as ezc3d scales them (``(raw - OFFSET) * SCALE * GEN_SCALE``);
- ``forces``: the ground reaction of each force platform in OpenSim's layout (``f1_1 f1_2 f1_3
  p1_1 ... m1_3 f2_1 ...``: force, point of application, moment), one row per analog frame, with
  the wrench expressed as ``C3DFileAdapter::ForceLocation`` does (OpenSim 4.6, through ezc3d's
  ``Modules::ForcePlatforms``):

  * ``force_location="origin"`` (``OriginOfForcePlate``): the point is the centre of the four
    platform corners, the moment is the platform moment about it (lab frame);
  * ``force_location="cop"`` (``CenterOfPressure``): the point is the centre of pressure and the
    moment is the free moment ``(0, 0, Tz)`` about it (lab frame).

  The channels are converted by ezc3d's ``Modules::ForcePlatforms``: type 2 (six channels
  Fx Fy Fz Mx My Mz) and type 4 (six channels times the 6x6 ``FORCE_PLATFORM:CAL_MATRIX``) are
  tested (``tests/test_c3d.py``); types 1 and 3 are whatever ezc3d makes of them.
- ``platforms``: one :class:`ForcePlatform` per platform (type, corners, origin, calibration
  matrix and the per-frame force, moment, centre of pressure and free moment).

Two options, stated once per read and applied to markers, forces, points, moments and corners
alike: ``rotation`` (the lab-to-OpenSim axis rotation: ``"x-90"`` turns a Z-up lab into OpenSim's
Y-up ground; several turns as ``"x-90,y90"`` are applied left to right about the fixed lab axes;
or a 3x3 rotation matrix) and ``units`` (``"file"``: the forces table in the file's units as
OpenSim's adapter gives them, e.g. N, mm, N·mm; ``"m"``: positions in metres and moments in N·m,
what OpenSim's ExternalLoads expect).
"""
from __future__ import annotations

import re
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..errors import DataFileError, OptionError
from ..tables import MarkerTrial, Table

__all__ = ["C3DTrial", "ForcePlatform", "read_c3d", "rotation_matrix", "downsample_rows"]

_LENGTH = {"mm": 1e-3, "cm": 1e-2, "dm": 1e-1, "m": 1.0, "km": 1e3, "in": 0.0254,
           "inch": 0.0254, "ft": 0.3048}
_NON_MARKER = ("ANGLES", "FORCES", "MOMENTS", "POWERS", "SCALARS")


@dataclass
class ForcePlatform:
    """One force platform of a C3D file (``FORCE_PLATFORM`` group), in the reading's frame/units.

    Attributes
    ----------
    number : int
        1-based, the order in ``FORCE_PLATFORM``; the ``n`` of the ``fn_``/``pn_``/``mn_`` columns.
    type : int
        ``FORCE_PLATFORM:TYPE`` (1-4).
    corners : ndarray, shape (4, 3)
        The four corners in the lab frame (``FORCE_PLATFORM:CORNERS``), rotated, length unit.
    origin : ndarray, shape (3,)
        ``FORCE_PLATFORM:ORIGIN`` as in the file (platform frame, from the surface centre to the
        transducer origin; the file's length unit, not rotated).
    cal_matrix : ndarray, shape (6, 6)
        ``FORCE_PLATFORM:CAL_MATRIX`` (identity-like for types 2 and 3).
    force, moment, cop, free_moment : ndarray, shape (T, 3)
        Ground reaction force (force unit), moment about the corners' centre, centre of pressure
        and free moment ``(0, 0, Tz)`` rotated into the lab frame, per analog frame.
    force_unit, length_unit, moment_unit : str
        Units of the arrays above.
    """

    number: int
    type: int
    corners: np.ndarray
    origin: np.ndarray
    cal_matrix: np.ndarray
    force: np.ndarray
    moment: np.ndarray
    cop: np.ndarray
    free_moment: np.ndarray
    force_unit: str
    length_unit: str
    moment_unit: str

    @property
    def centre(self) -> np.ndarray:
        """Centre of the four corners, shape (3,): OpenSim's point for ``OriginOfForcePlate``."""
        return self.corners.mean(axis=0)


@dataclass
class C3DTrial:
    """What :func:`read_c3d` returns (see the module text).

    Attributes
    ----------
    markers : MarkerTrial
        Marker trajectories, shape (T, n, 3), metres.
    analogs : Table
        Analog channels, shape (Ta, k), at ``analog_rate``.
    forces : Table or None
        Platform wrenches in OpenSim's column layout, shape (Ta, 9 * platforms); None when the
        file has no force platform.
    platforms : list of ForcePlatform
    point_rate, analog_rate : float
        Hz.
    force_location : str
        ``"origin"`` or ``"cop"``.
    rotation : ndarray, shape (3, 3)
        The rotation applied (identity when none).
    source : Path
    """

    markers: MarkerTrial
    analogs: Table
    forces: Table | None
    platforms: list[ForcePlatform]
    point_rate: float
    analog_rate: float
    force_location: str
    rotation: np.ndarray
    source: Path
    events: list[tuple[str, float]] = field(default_factory=list)

    def require_forces(self) -> Table:
        """The forces table; DataFileError naming the file when there is no force platform."""
        if self.forces is None:
            raise DataFileError("no force platform in this C3D file (FORCE_PLATFORM:USED is 0 "
                                "or absent), so no ground reaction forces", self.source)
        return self.forces


def rotation_matrix(rotation) -> np.ndarray:
    """The 3x3 rotation for ``rotation``: None (identity), a 3x3 proper rotation matrix, or a
    string of turns about the lab axes, ``"x-90"`` or ``"x-90,y180"`` (degrees; applied left to
    right, so ``"a,b"`` is ``R_b @ R_a``). OptionError for anything else."""
    if rotation is None:
        return np.eye(3)
    if isinstance(rotation, str):
        R = np.eye(3)
        for part in [p for p in re.split(r"[,\s]+", rotation.strip()) if p]:
            m = re.fullmatch(r"([xyzXYZ])\s*:?\s*([+-]?\d+(?:\.\d*)?)", part)
            if m is None:
                raise OptionError(f"rotation {rotation!r}: {part!r} is not an axis and an angle in "
                                  "degrees such as 'x-90'")
            ax = "xyz".index(m.group(1).lower())
            a = np.deg2rad(float(m.group(2)))
            c, s = np.cos(a), np.sin(a)
            i, j = (ax + 1) % 3, (ax + 2) % 3
            Ri = np.eye(3)
            Ri[i, i] = c; Ri[j, j] = c; Ri[i, j] = -s; Ri[j, i] = s
            # exact quarter turns stay exact
            Ri = np.where(np.abs(Ri) < 1e-15, 0.0, Ri)
            R = Ri @ R
        return R
    R = np.asarray(rotation, dtype=float)
    if R.shape != (3, 3) or not np.allclose(R @ R.T, np.eye(3), atol=1e-9) \
            or not np.isclose(np.linalg.det(R), 1.0, atol=1e-9):
        raise OptionError(f"rotation must be a 3x3 proper rotation matrix, got {R.tolist()!r}")
    return R


def downsample_rows(n_rows: int, step: int) -> np.ndarray:
    """Row indices 0, step, 2*step, ... and the last row: the rows OpenSim's C3D adapter test
    keeps (``downsample_table``) to make ``std_walking2_*``."""
    i = np.arange(0, n_rows, step)
    return i if i.size and i[-1] == n_rows - 1 else np.r_[i, n_rows - 1]


def _length_factor(unit: str, path, what: str) -> float:
    u = unit.strip().lower()
    if u not in _LENGTH:
        raise DataFileError(f"unknown {what} unit {unit!r}", path)
    return _LENGTH[u]


def _moment_length(unit: str, path) -> tuple[float, str]:
    u = unit.strip().replace("·", "").replace(".", "").replace("*", "").replace(" ", "")
    if not u.lower().startswith("n"):
        raise DataFileError(f"unknown moment unit {unit!r} (expected N followed by a length)", path)
    return _length_factor(u[1:], path, "moment"), u[1:]


def _strings(params, group, name):
    try:
        return [str(s).strip() for s in params[group][name]["value"]]
    except KeyError:
        return []


def read_c3d(path, *, force_location: str = "origin", rotation=None, units: str = "file") -> C3DTrial:
    """Read a C3D file: markers, analog channels and force platforms (see the module text).

    Parameters
    ----------
    path : str or PathLike
    force_location : {"origin", "cop"}
        Where the platform wrenches are expressed (``C3DFileAdapter::ForceLocation``
        ``OriginOfForcePlate`` or ``CenterOfPressure``).
    rotation : None, str or array (3, 3)
        Lab-to-OpenSim rotation, see :func:`rotation_matrix`.
    units : {"file", "m"}
        Units of the forces table and platforms: the file's, or metres and N·m.

    Raises
    ------
    DataFileError naming the file when it is missing, not a C3D file, has unknown units, or
    frames without a sampling rate (POINT:RATE or ANALOG:RATE not positive);
    OptionError for a bad option.
    """
    import ezc3d

    path = Path(path)
    if force_location not in ("origin", "cop"):
        raise OptionError(f"force_location must be 'origin' or 'cop', got {force_location!r}")
    if units not in ("file", "m"):
        raise OptionError(f"units must be 'file' or 'm', got {units!r}")
    R = rotation_matrix(rotation)
    if not path.is_file():
        raise DataFileError("no such C3D file", path)
    try:
        c3d = ezc3d.c3d(str(path), extract_forceplat_data=True)
    except Exception as e:  # ezc3d raises RuntimeError/ValueError/IndexError on bad files
        raise DataFileError(f"cannot read as C3D: {e}", path) from None

    params, data = c3d["parameters"], c3d["data"]
    header = c3d["header"]
    point_rate = float(header["points"]["frame_rate"])
    try:
        point_rate = float(params["POINT"]["RATE"]["value"][0])
    except (KeyError, IndexError):
        pass
    try:
        analog_rate = float(params["ANALOG"]["RATE"]["value"][0])
    except (KeyError, IndexError):
        analog_rate = float(header["analogs"].get("frame_rate", point_rate))

    # markers
    labels = _strings(params, "POINT", "LABELS")
    pts = np.asarray(data["points"], dtype=float)  # (4, n, T)
    T = pts.shape[2] if pts.ndim == 3 else 0
    # a file without sampling rates (biomdp's Kistler force-plate files: POINT:RATE and
    # ANALOG:RATE 0) gives its frames no times; refused here rather than as NaN times later
    an = np.asarray(data["analogs"], dtype=float)  # (1, channels, n)
    n_analog = an.shape[-1] if an.ndim == 3 else 0
    for what, rate, n in (("POINT:RATE", point_rate, T), ("ANALOG:RATE", analog_rate, n_analog)):
        if n and not (np.isfinite(rate) and rate > 0):
            raise DataFileError(f"is {rate:g}: the file's {n} frames have no sampling rate, so no "
                                "times", path, what)
    labels = labels[: pts.shape[1]] if pts.ndim == 3 else []
    non_marker = set()
    for k in _NON_MARKER:
        non_marker.update(_strings(params, "POINT", k))
    keep = [i for i, lab in enumerate(labels) if lab not in non_marker]
    xyz = pts[:3][:, keep, :].transpose(2, 1, 0) if T else np.zeros((0, len(keep), 3))
    resid = np.asarray(data["meta_points"]["residuals"], dtype=float)[0][keep].T if T else None
    punits = (_strings(params, "POINT", "UNITS") or ["mm"])[0] or "mm"
    lf = _length_factor(punits, path, "POINT:UNITS")
    xyz = xyz.copy()
    if resid is not None:
        xyz[resid < 0] = np.nan
    positions = (xyz * lf) @ R.T
    first = int(header["points"].get("first_frame", 0))
    markers = MarkerTrial(
        frames=np.arange(1, T + 1), time=np.arange(T) / point_rate,
        labels=[labels[i] for i in keep], positions=positions, data_rate=point_rate,
        camera_rate=point_rate, orig_data_rate=point_rate, orig_start_frame=first + 1,
        orig_num_frames=T, units=punits, source=path)

    # analogs
    an = an[0].T if an.ndim == 3 else np.zeros((0, 0))
    alabels = _strings(params, "ANALOG", "LABELS")[: an.shape[1]]
    alabels += [f"channel{j + 1}" for j in range(len(alabels), an.shape[1])]
    analogs = Table(name="analog", time=np.arange(an.shape[0]) / analog_rate, labels=alabels,
                    data=an, metadata={"DataRate": f"{analog_rate:.6f}"}, source=path)

    # force platforms
    platforms: list[ForcePlatform] = []
    types = [int(t) for t in np.atleast_1d(params.get("FORCE_PLATFORM", {}).get(
        "TYPE", {}).get("value", []))]
    for k, pf in enumerate(data.get("platform", []) or []):
        fu, pu, mu = str(pf["unit_force"]), str(pf["unit_position"]), str(pf["unit_moment"])
        if units == "m":
            pl = _length_factor(pu, path, "force platform position")
            ml, _ = _moment_length(mu, path)
            pu_out, mu_out = "m", "Nm"
        else:
            pl = ml = 1.0
            pu_out, mu_out = pu, mu
        rot = lambda a, s: (np.asarray(a, dtype=float).T * s) @ R.T  # noqa: E731
        platforms.append(ForcePlatform(
            number=k + 1, type=types[k] if k < len(types) else 0,
            corners=rot(pf["corners"], pl), origin=np.asarray(pf["origin"], dtype=float),
            cal_matrix=np.asarray(pf["cal_matrix"], dtype=float),
            force=rot(pf["force"], 1.0), moment=rot(pf["moment"], ml),
            cop=rot(pf["center_of_pressure"], pl), free_moment=rot(pf["Tz"], ml),
            force_unit=fu, length_unit=pu_out, moment_unit=mu_out))

    forces = None
    if platforms:
        n = platforms[0].force.shape[0]
        cols, flabels = [], []
        for p in platforms:
            if force_location == "origin":
                point, mom = np.broadcast_to(p.centre, (n, 3)), p.moment
            else:
                point, mom = p.cop, p.free_moment
            cols += [p.force, point, mom]
            flabels += [f"{c}{p.number}_{i}" for c in "fpm" for i in (1, 2, 3)]
        forces = Table(
            name=path.stem + "_grf", time=np.arange(n) / analog_rate, labels=flabels,
            data=np.hstack(cols), in_degrees=False,
            metadata={"DataRate": f"{analog_rate:.6f}", "force_units": platforms[0].force_unit,
                      "position_units": platforms[0].length_unit,
                      "moment_units": platforms[0].moment_unit},
            source=path)

    events = []
    try:
        ev_t = np.asarray(params["EVENT"]["TIMES"]["value"], dtype=float)
        ev_l = _strings(params, "EVENT", "LABELS")
        ev_c = _strings(params, "EVENT", "CONTEXTS")
        for j, lab in enumerate(ev_l):
            t = float(ev_t[0, j] * 60 + ev_t[1, j]) if ev_t.ndim == 2 else float(ev_t[j])
            ctx = ev_c[j] + " " if j < len(ev_c) and ev_c[j] else ""
            events.append((ctx + lab, t))
    except (KeyError, IndexError, ValueError):
        events = []

    return C3DTrial(markers=markers, analogs=analogs, forces=forces, platforms=platforms,
                    point_rate=point_rate, analog_rate=analog_rate,
                    force_location=force_location, rotation=R, source=path, events=events)
