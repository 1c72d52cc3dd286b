"""``arthron convert``: write a model as OpenSim 4.x, optionally checking that it means the same.

:func:`convert_model` reads any ``.osim`` (4.x, or 2.x/3.x upgraded the way OpenSim 4.6 upgrades
them in memory, :mod:`arthron.io.osim_upgrade`) and writes a ``Version="40000"`` file.
:func:`check_conversion` reads the written file back with arthron and compares it with the
reading of the original: counts, masses, mass centers and inertias, the numeric properties of
the force elements arthron models (muscle parameters ...), offset frames, body poses and marker
positions at the default pose and at random coordinate values, and the lengths of every
geometry path. With the official OpenSim installed it also loads the written file there
(``Model(path).initSystem()``) and compares OpenSim's default-pose body positions with
arthron's.
"""
from __future__ import annotations

from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from ..io.osim import read_osim, write_osim
from ..models.model import Model

__all__ = ["convert_model", "check_conversion", "ConversionCheck"]


#: how :attr:`ConversionCheck.opensim` starts when OpenSim refuses the original as well as the
#: converted file, for a plugin class it does not know (not a fault of the conversion)
PLUGIN_NOTE = "not loaded: the original needs plugin class"


@dataclass
class ConversionCheck:
    """Largest differences between the original reading and the converted file's reading.

    ``rows``: (quantity, largest absolute difference in SI units or radians-free rotation-matrix
    entries, where it occurs). ``count_mismatches``: component kinds whose counts or names
    differ. ``opensim``: None (OpenSim not installed), ``"loaded"`` or the error OpenSim gave.
    ``tolerance``: what :attr:`ok` accepts.
    """

    rows: list = field(default_factory=list)
    count_mismatches: list = field(default_factory=list)
    opensim: str | None = None
    tolerance: float = 1e-9

    @property
    def largest(self) -> float:
        return max((r[1] for r in self.rows), default=0.0)

    @property
    def ok(self) -> bool:
        return (not self.count_mismatches and self.largest <= self.tolerance
                and (self.opensim in (None, "loaded") or self.opensim.startswith(PLUGIN_NOTE)))

    def report(self) -> str:
        lines = [f"{'quantity':<38} {'largest |diff|':>15}  where"]
        for q, d, where in self.rows:
            lines.append(f"{q:<38} {d:15.3e}  {where}")
        for m in self.count_mismatches:
            lines.append(f"MISMATCH {m}")
        if self.opensim is not None:
            lines.append(f"OpenSim 4: {self.opensim}")
        lines.append(f"check {'passed' if self.ok else 'FAILED'} (tolerance {self.tolerance:g})")
        return "\n".join(lines)


def convert_model(src, dst, exclude_types=()):
    """Read ``src`` and write it as OpenSim 4.x to ``dst``; returns the model read."""
    model = read_osim(src)
    write_osim(dst, model, exclude_types=tuple(exclude_types))
    return model


def _worst(pairs):
    """(largest difference, key) over ``{key: diff}``."""
    if not pairs:
        return 0.0, "-"
    k = max(pairs, key=pairs.get)
    return float(pairs[k]), (k if pairs[k] > 0 else "-")


def _random_q(model: Model, names, n, seed):
    rng = np.random.default_rng(seed)
    lo = np.array([max(model.coordinates[c].range[0], -np.pi) for c in names])
    hi = np.array([min(model.coordinates[c].range[1], np.pi) for c in names])
    hi = np.where(hi > lo, hi, lo)
    q0 = np.array([model.coordinates[c].default_value for c in names])
    return np.vstack([q0[None], lo + (hi - lo) * rng.random((n, len(names)))])


def check_conversion(original, converted, *, n_poses=5, seed=0, tolerance=1e-9,
                     use_opensim=True, original_file=None, exclude_types=()) -> ConversionCheck:
    """Compare arthron's reading of ``original`` with its reading of ``converted``.

    Parameters
    ----------
    original, converted : path or Model
    n_poses : random poses (uniform in each coordinate's range, clipped to ±π) besides the
        default pose.
    tolerance : largest accepted difference (m, kg, kg·m², rotation-matrix entries).
    use_opensim : also load ``converted`` in the official OpenSim when it is installed.
    original_file : the original's path when ``original`` is a Model: when OpenSim refuses both
        files for the same plugin class, that is reported, not counted as a failed check.
    exclude_types : the classes left out when converting (:func:`convert_model`): the original's
        components of those classes are not missing from the converted file.

    Returns
    -------
    ConversionCheck
    """
    from ..multibody.kinematics import forward_kinematics, marker_positions
    from ..multibody.paths import compile_paths, path_lengths
    from ..multibody.tree import compile_model

    m1 = original if isinstance(original, Model) else read_osim(original)
    m2 = converted if isinstance(converted, Model) else read_osim(converted)
    out = ConversionCheck(tolerance=tolerance)
    excluded = set(exclude_types)
    for kind in ("bodies", "joints", "coordinates", "markers", "forces"):
        a, b = getattr(m1, kind), getattr(m2, kind)
        if excluded:
            a = [n for n, c in a.items()
                 if getattr(c, "type", None) not in excluded and type(c).__name__ not in excluded]
        if list(a) != list(b):
            out.count_mismatches.append(f"{kind}: {len(a)} vs {len(b)} "
                                        f"(only in original: {sorted(set(a) - set(b))[:5]}, "
                                        f"only in converted: {sorted(set(b) - set(a))[:5]})")
    if len(m1.constraints) != len(m2.constraints):
        out.count_mismatches.append(f"constraints: {len(m1.constraints)} vs {len(m2.constraints)}")
    common = [b for b in m1.bodies if b in m2.bodies]
    for label, get in (("mass (kg)", lambda b: np.atleast_1d(b.mass)),
                       ("mass center (m)", lambda b: b.mass_center),
                       ("inertia (kg m^2)", lambda b: b.inertia)):
        d, w = _worst({n: float(np.max(np.abs(np.asarray(get(m1.bodies[n]), float)
                                                 - np.asarray(get(m2.bodies[n]), float))))
                       for n in common})
        out.rows.append((label, d, w))
    fp = {}
    for n, f1 in m1.forces.items():
        f2 = m2.forces.get(n)
        if f2 is None or not f1.modelled or not f2.modelled or f1.type != f2.type:
            continue
        for attr, kind in f1.property_fields():
            a, b = getattr(f1, attr), getattr(f2, attr)
            if kind in ("float", "vec") and a is not None and b is not None:
                d = float(np.max(np.abs(np.asarray(a, float) - np.asarray(b, float))))
                if d >= fp.get(n, (-1.0,))[0]:
                    fp[n] = (d, f"{n}.{attr}")
            elif kind in ("str", "bool") and a != b:
                fp[n] = (np.inf, f"{n}.{attr}")
    d, w = _worst({v[1]: v[0] for v in fp.values()})
    out.rows.append(("force properties",) + (d, w))
    fr = {}
    for p, f in m1.frames.items():
        if p in m2.frames:
            b1, X1 = m1.frame_in_base(p)
            b2, X2 = m2.frame_in_base(p)
            fr[p] = np.inf if b1 != b2 else float(max(np.max(np.abs(X1.R - X2.R)),
                                                     np.max(np.abs(X1.p - X2.p))))
    out.rows.append(("offset frames in their body",) + _worst(fr))
    t1, t2 = compile_model(m1), compile_model(m2)
    names = [c for c in t1.coordinate_names if c in t2.coordinate_names]
    if names == list(t1.coordinate_names) == list(t2.coordinate_names):
        q = _random_q(m1, names, n_poses, seed)
        k1, k2 = forward_kinematics(t1, q), forward_kinematics(t2, q)
        dp, dr = {}, {}
        for i, b in enumerate(t1.body_names):
            if b not in t2.body_names:
                continue
            n1, n2 = t1.body_node[i], t2.body_node[t2.body_names.index(b)]
            dp[b] = float(np.max(np.abs(k1.o[:, n1] - k2.o[:, n2])))
            dr[b] = float(np.max(np.abs(k1.R[:, n1] - k2.R[:, n2])))
        out.rows.append((f"body origins, {len(q)} poses (m)",) + _worst(dp))
        out.rows.append((f"body rotations, {len(q)} poses",) + _worst(dr))
        mk = [n for n in t1.markers if n in t2.markers]
        if mk:
            _, p1 = marker_positions(t1, q, mk, kin=k1)
            _, p2 = marker_positions(t2, q, mk, kin=k2)
            d = np.max(np.abs(p1 - p2), axis=(0, 2))
            out.rows.append((f"markers, {len(q)} poses (m)",) + _worst(dict(zip(mk, d.tolist()))))
        ps1, ps2 = compile_paths(m1, t1), compile_paths(m2, t2)
        if ps1.names:
            if ps1.names != ps2.names:
                out.count_mismatches.append("geometry paths differ")
            else:
                d = np.max(np.abs(path_lengths(ps1, t1, q, k1) - path_lengths(ps2, t2, q, k2)), axis=0)
                out.rows.append((f"path lengths, {len(q)} poses (m)",)
                                + _worst(dict(zip(ps1.names, d.tolist()))))
    else:
        out.count_mismatches.append("coordinates differ: poses not compared")
    if use_opensim and not isinstance(converted, Model):
        out.opensim = _opensim_load(converted, t2, m2, out,
                                    original=original_file if isinstance(original, Model) else original)
    return out


def _unregistered_class(error):
    """The class OpenSim names in ``error`` (its refusal to load a file) when the refusal is for
    an unregistered (plugin) type, or None."""
    import re
    m = re.search(r"object type '\{?(\w+)\}?' is not a registered Object", str(error))
    return m.group(1) if m else None


def _opensim_load(path, tree, model, out, original=None):
    """Load the file in the official OpenSim if it is installed; compare default-pose body
    origins with arthron's. Returns None when OpenSim is absent. When OpenSim refuses the
    converted file for a plugin class it does not know and refuses ``original`` (a path) for the
    same class (the original holds it too), the result starts with :data:`PLUGIN_NOTE` (kept components are written as read;
    ``--exclude CLASS`` checks the rest in OpenSim)."""
    try:
        import opensim as osim
    except ImportError:
        return None
    from ..multibody.kinematics import forward_kinematics
    try:        # off while loading: a refusal is reported from OpenSim's exception, not its "[error]" line
        osim.Logger.setLevelString("off")
        m = osim.Model(str(path))
        s = m.initSystem()
    except Exception as e:             # OpenSim's refusal is the result being reported
        osim.Logger.setLevelString("error")
        cls = None if original is None else _unregistered_class(e)
        if cls is not None and f"<{cls}" in Path(original).read_text(errors="replace"):
            return (f"{PLUGIN_NOTE} {cls}, which OpenSim 4.6 does not know (it refuses the original "
                    f"too); --exclude {cls} to load the rest in OpenSim")
        return f"refused the file: {str(e).strip().splitlines()[0]}"
    osim.Logger.setLevelString("error")
    q = np.array([[model.coordinates[c].default_value for c in tree.coordinate_names]])
    cs = m.getCoordinateSet()
    for c, v in zip(tree.coordinate_names, q[0]):
        cs.get(c).setValue(s, float(v), False)
    m.realizePosition(s)
    kin = forward_kinematics(tree, q)
    d = {}
    for i, b in enumerate(tree.body_names):
        p = m.getBodySet().get(b).getPositionInGround(s)
        d[b] = float(np.max(np.abs(kin.o[0, tree.body_node[i]] - np.array([p.get(k) for k in range(3)]))))
    out.rows.append(("OpenSim vs arthron, default pose (m)",) + _worst(d))
    return "loaded"
