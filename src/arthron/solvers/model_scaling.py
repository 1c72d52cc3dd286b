"""Model scaling like OpenSim 4.6's ScaleTool: scale factors and the scaled model (the setup-driven
workflow with marker placement is :mod:`arthron.tools.scale_tool`; anthropometric scaling is
:mod:`arthron.solvers.scaling`).

Pipeline (``ScaleTool``):

1. **GenericModelMaker**: read the generic model; markers of ``marker_set_file`` replace or
   extend the model's markers.
2. **ModelScaler**: one scale entry per physical frame (ground, bodies, offset frames; factors
   1), then, in ``scaling_order``:

   * ``measurements``: per measurement, the mean over its marker pairs of
     (distance of the pair in the static trial, averaged over the frames of ``time_range``) /
     (distance of the pair on the model in the default pose); the factor is written on the
     listed axes of the listed bodies;
   * ``manualScale``: the factors of the manual ScaleSet replace those of the named segments.

   Then the model is scaled (:func:`scale_model`).
3. **MarkerPlacer**: average the static trial over its ``time_range``, drop model markers the
   trial lacks, solve one IK frame with the IK tasks (constraints exact), and move every
   non-fixed marker that has data to the measured position, expressed in its frame.

Scaling rules of :func:`scale_model` (OpenSim 4.6, confirmed on its outputs for Gait2354 and
Rajagopal; see ``opensim-reference/README.md``). ``s`` is the factor of the *base body* of the
frame a quantity is expressed in:

* body mass centre, offset-frame translations, marker locations, path-point locations, wrap
  object translations, attached geometry scale factors: elementwise ``× s``;
* CustomJoint translation axes whose function is not the identity ``LinearFunction(1, 0)``:
  wrapped in ``MultiplierFunction`` (or its scale multiplied) by ``|axis| · s_parent``;
  MovingPathPoint x/y/z functions likewise by ``s_x``, ``s_y``, ``s_z``;
* wrap objects: ellipsoid radius i ``× |R[:, i] ∘ s|`` (``R`` the wrap frame's rotation in the
  body); cylinder radius ``× ½(|R[:,0] ∘ s| + |R[:,1] ∘ s|)``, length ``× |R[:,2] ∘ s|``;
  sphere radius ``×`` the mean of the three; torus radii like the cylinder radius;
* ScapulothoracicJoint: ellipsoid radii ``× s_parent``, winging-axis origin ``× s_child[:2]``;
* inertia: ``I s²`` for uniform ``s``; otherwise the cylinder fit of
  ``Body::scaleInertialProperties`` (axis = smallest moment; radius and length from the moments;
  length × s_axis, radius² × product of the two other factors; products of inertia × s_i s_j);
  with ``preserve_mass_distribution`` false the mass (and inertia) is also scaled by
  ``|s_x s_y s_z|``; finally, when a subject mass is given, every body's mass and inertia are
  scaled by ``mass / Σ m``;
* muscles: ``optimal_fiber_length`` and ``tendon_slack_length`` ``× L/L0``, the default-pose
  path lengths after and before scaling (Ligament ``resting_length``, PathSpring
  ``resting_length`` and Blankevoort1991Ligament ``slack_length`` likewise).

Source: OpenSim 4.6 ``ScaleTool``, ``ModelScaler``, ``MarkerPlacer``, ``MarkerData``
(frame-range and averaging rules), ``Model::scale``, ``Body::scaleInertialProperties``,
``SpatialTransform::scale``, ``WrapCylinder/WrapEllipsoid::extendScale``,
``ScapulothoracicJoint::extendScale``, re-implemented from their documented behaviour.
"""
from __future__ import annotations

import math
import warnings
from dataclasses import dataclass

import numpy as np

from ..errors import ArthronWarning, DataFileError, ModelFileError
from ..models.functions import Constant, LinearFunction, scale_function
from ..multibody.kinematics import compile_model, marker_positions
from ..models.model import GROUND, Model, rotation_xyz

__all__ = ["ScaleEntry", "Measurement", "frame_scale_entries",
           "average_static", "frame_range", "measurement_factor", "compute_scale_set",
           "scale_model", "body_factors", "default_path_lengths"]

_LENGTH_PROPS = {  # force class -> properties scaled by the default-pose path-length ratio
    "Ligament": ("resting_length",),
    "PathSpring": ("resting_length",),
    "Blankevoort1991Ligament": ("slack_length",),
}
_MUSCLE_PROPS = ("optimal_fiber_length", "tendon_slack_length")


# ------------------------------------------------------------------------------ scale sets
@dataclass
class ScaleEntry:
    """One ``<Scale>``: a segment (frame) name, XYZ factors, apply flag."""

    segment: str
    factors: np.ndarray
    apply: bool = True


def frame_scale_entries(model: Model) -> list[ScaleEntry]:
    """One entry (factors 1) per physical frame in OpenSim's component order: ground and its
    frames, each body followed by the frames it owns, the joints' offset frames in JointSet
    order, then model-level frames. Offset-frame names may repeat (as in 4.6's output)."""
    out = [ScaleEntry("ground", np.ones(3))]
    out += [ScaleEntry(f.name, np.ones(3)) for f in model.frames.values() if f.owner == "ground"]
    for b in model.bodies.values():
        out.append(ScaleEntry(b.name, np.ones(3)))
        out += [ScaleEntry(f.name, np.ones(3)) for f in model.frames.values()
                if f.owner == f"body:{b.name}"]
    for j in model.joints.values():
        out += [ScaleEntry(f.name, np.ones(3)) for f in model.frames.values()
                if f.owner == f"joint:{j.name}"]
    out += [ScaleEntry(f.name, np.ones(3)) for f in model.frames.values()
            if f.owner not in ("ground",) and not f.owner.startswith(("body:", "joint:"))]
    return out


def body_factors(model: Model, entries) -> dict:
    """Factors per body name (and ``ground``) from a scale-entry list: the first applied entry
    named after the body (offset-frame rows never stand for their body)."""
    out = {"ground": np.ones(3)}
    for b in model.bodies:
        out[b] = np.ones(3)
    seen = set()
    for e in entries:
        if e.segment in out and e.segment not in seen and e.apply:
            out[e.segment] = np.asarray(e.factors, float).copy()
            seen.add(e.segment)
    return out


# --------------------------------------------------------------------------- static trial
def frame_range(times, t0, t1) -> tuple[int, int]:
    """OpenSim's ``MarkerData::findFrameRange``: the last frame at or before ``t0`` (else the
    first frame) to the first frame from there at or after ``t1`` (else the last frame)."""
    times = np.asarray(times, float)
    if t0 > t1:
        raise DataFileError(f"time range start {t0:g} s is after its end {t1:g} s")
    i0 = 0
    k = np.flatnonzero(times <= t0)
    if k.size:
        i0 = int(k[-1])
    i1 = len(times) - 1
    k = np.flatnonzero(times[i0:] >= t1)
    if k.size:
        i1 = i0 + int(k[0])
    return i0, i1


def average_static(trial, time_range, max_marker_movement=-1.0) -> np.ndarray:
    """Marker positions averaged over the frames of ``time_range`` (``MarkerData::averageFrames``):
    (n_markers, 3) metres, NaN frames skipped, NaN for markers without data. A warning is
    issued when a marker moves more than ``max_marker_movement`` (metres, if positive)."""
    i0, i1 = frame_range(trial.time, *time_range)
    P = np.asarray(trial.positions, float)[i0:i1 + 1]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", RuntimeWarning)
        avg = np.nanmean(P, axis=0)
        if max_marker_movement is not None and max_marker_movement > 0:
            span = np.nanmax(P, axis=0) - np.nanmin(P, axis=0)
            for j in np.flatnonzero(np.nanmax(span, axis=1) > max_marker_movement):
                warnings.warn(f"marker {trial.labels[j]} moves {np.nanmax(span[j]):g} m in the "
                              f"averaged static frames", ArthronWarning, stacklevel=2)
    return avg


# ---------------------------------------------------------------------------- measurements
@dataclass
class Measurement:
    """A ModelScaler measurement: marker pairs and the body axes its factor applies to."""

    name: str
    pairs: list                    # [(marker1, marker2)]
    bodies: list                   # [(body name, axes string like "XYZ")]
    apply: bool = True


def measurement_factor(model: Model, trial, meas: Measurement, time_range, *, tree=None,
                       q=None, source=None, model_positions=None) -> float:
    """The factor of one measurement (see the module docstring). ``model_positions``: the
    model's marker positions at ``q`` (dict name -> (3,) m) if already computed.

    Raises
    ------
    ModelFileError if the model lacks a marker of a pair.
    DataFileError if the trial lacks a marker of a pair or has no frame where both are
    present in the time range.
    """
    tree = tree if tree is not None else compile_model(model)
    q = tree.default_q if q is None else q
    i0, i1 = frame_range(trial.time, *time_range)
    total = 0.0
    for a, b in meas.pairs:
        for n in (a, b):
            if n not in tree.markers:
                raise ModelFileError(f"measurement '{meas.name}': marker '{n}' is not in model "
                                     f"'{model.name}'", model.source)
            if n not in trial.labels:
                raise DataFileError(f"measurement '{meas.name}': marker '{n}' is not in the static "
                                    "trial", source or getattr(trial, "source", None))
    # the model's markers of every pair at the pose: one kinematics pass
    names = list(dict.fromkeys(n for pair in meas.pairs for n in pair))
    if model_positions is None or any(n not in model_positions for n in names):
        _, Pall = marker_positions(tree, q[None], names) if names else (None, np.zeros((1, 0, 3)))
        model_positions = dict(zip(names, Pall[0]))
    for a, b in meas.pairs:
        lm = float(np.linalg.norm(model_positions[a] - model_positions[b]))
        if not lm > 0.0:
            raise ModelFileError(f"measurement '{meas.name}': markers '{a}' and '{b}' coincide in "
                                 "the model (no distance to scale)", model.source)
        pa = np.asarray(trial.positions, float)[i0:i1 + 1, trial.labels.index(a)]
        pb = np.asarray(trial.positions, float)[i0:i1 + 1, trial.labels.index(b)]
        d = np.linalg.norm(pb - pa, axis=1)
        ok = np.isfinite(d)
        if not np.any(ok):
            raise DataFileError(f"measurement '{meas.name}': markers '{a}' and '{b}' have no "
                                f"frame with data in {time_range[0]:g}–{time_range[1]:g} s",
                                source or getattr(trial, "source", None))
        total += float(np.mean(d[ok])) / lm
    if not meas.pairs:
        raise DataFileError(f"measurement '{meas.name}' has no marker pair", source)
    return total / len(meas.pairs)


def compute_scale_set(model: Model, *, scaling_order=("measurements", "manualScale"),
                      measurements=(), manual=(), static_trial=None, time_range=None,
                      source=None, tree=None) -> tuple[list, dict]:
    """The ModelScaler's scale set.

    Parameters
    ----------
    measurements : list of Measurement
    manual : list of ScaleEntry (manual scale set)
    static_trial : MarkerTrial for the measurements; time_range : (t0, t1) s
    tree : the model's compiled tree, if already at hand (compiled here otherwise)

    Returns
    -------
    entries : list of ScaleEntry (all frames, OpenSim order); measured : dict measurement -> factor

    Raises
    ------
    ModelFileError if a manual scale names a segment the model lacks.
    DataFileError for measurements without a static trial (see also :func:`measurement_factor`).
    """
    entries = frame_scale_entries(model)
    names = {e.segment for e in entries}
    measured = {}
    tree = tree if tree is not None else compile_model(model)
    # the model's markers of every applied measurement at the default pose: one kinematics pass
    used = [n for m in measurements if m.apply for pair in m.pairs for n in pair if n in tree.markers]
    used = list(dict.fromkeys(used))
    positions = dict(zip(used, marker_positions(tree, tree.default_q[None], used)[1][0])) if used else {}
    for step in scaling_order:
        if step == "measurements":
            for m in measurements:
                if not m.apply:
                    continue
                if static_trial is None:
                    raise DataFileError("measurements are used but no static marker file is set",
                                        source)
                f = measurement_factor(model, static_trial, m, time_range, tree=tree, source=source,
                                       model_positions=positions)
                measured[m.name] = f
                for body, axes in m.bodies:
                    hit = False
                    for e in entries:
                        if e.segment == body:
                            hit = True
                            for ax in axes.upper():
                                if ax in "XYZ":
                                    e.factors["XYZ".index(ax)] = f
                    if not hit:
                        warnings.warn(f"measurement '{m.name}' names body '{body}' that model "
                                      f"'{model.name}' lacks; ignored (as OpenSim does)",
                                      ArthronWarning, stacklevel=2)
        elif step == "manualScale":
            for s in manual:
                if not s.apply:
                    continue
                if s.segment not in names:
                    raise ModelFileError(f"manual scale names segment '{s.segment}' that model "
                                         f"'{model.name}' lacks", source)
                for e in entries:
                    if e.segment == s.segment:
                        e.factors = np.asarray(s.factors, float).copy()
        else:
            raise DataFileError(f"unknown scaling_order step '{step}' (expecting 'measurements' "
                                "or 'manualScale')", source)
    return entries, measured


# ------------------------------------------------------------------------------- scaling
def _inertia_scaled(I, m_old, m_new, s, scale_mass):
    """``Body::scaleInertialProperties`` for one body (I about the COM, body frame)."""
    I = np.array(I, float)
    s = np.asarray(s, float)
    msf = abs(s[0] * s[1] * s[2])
    if m_new <= np.finfo(float).eps:
        return np.zeros((3, 3))
    if _num_equal(s[0], s[1]) and _num_equal(s[1], s[2]):
        if scale_mass:
            I = I * msf
        return I * (s[0] * s[0])
    d = np.diag(I)
    if d[0] <= d[1]:
        axis = 0 if d[0] <= d[2] else 2
    elif d[1] <= d[2]:
        axis = 1
    else:
        axis = 2
    term = 2.0 * I[axis, axis] / m_old
    radius = math.sqrt(term) if term >= 0 else 0.0
    oa = 1 if axis == 0 else 0
    term = 12.0 * (I[oa, oa] - 0.25 * m_old * radius * radius) / m_old
    length = math.sqrt(term) if term >= 0 else 0.0
    length *= s[axis]
    others = [k for k in range(3) if k != axis]
    rad_sqr = radius * s[others[0]] * radius * s[others[1]]
    out = I.copy()
    for k in range(3):
        out[k, k] = (0.5 * m_new * rad_sqr if k == axis
                     else m_new * ((length * length / 12.0) + 0.25 * rad_sqr))
    for i in range(3):
        for j in range(3):
            if i != j:
                out[i, j] = I[i, j] * (s[i] * s[j]) * (msf if scale_mass else 1.0)
    return out


def _num_equal(a, b):
    """SimTK::isNumericallyEqual for doubles (relative tolerance 1e-13 about the larger)."""
    scale = max(abs(a), abs(b), 1.0)
    return abs(a - b) <= 1e-13 * scale


def _base_body_name(model: Model, frame_path: str) -> str:
    base, _ = model.frame_in_base(frame_path)
    return "ground" if base == GROUND else base[len("/bodyset/"):]


def default_path_lengths(model: Model, names=None, *, tree=None) -> dict:
    """Default-pose lengths (m) of the model's path forces, by name (constraints assembled).

    Uses :mod:`arthron.multibody.paths` (wrapping included); ``tree``: the model's compiled
    tree if already at hand."""
    from ..multibody.paths import compile_paths, path_lengths
    tree = tree if tree is not None else compile_model(model)
    q = tree.default_q.copy()
    if model.constraints and any(c.enabled for c in model.constraints):
        from ..multibody.constraints import assemble
        q = np.asarray(assemble(model, tree, q[None]))[0]
    ps = compile_paths(model, tree, forces=names)
    if not ps.names:
        return {}
    L = path_lengths(ps, tree, q[None])[0]
    return dict(zip(ps.names, map(float, L)))


def scale_model(model: Model, factors, *, mass: float | None = None,
                preserve_mass_distribution: bool = True, path_lengths_before=None,
                in_place: bool = False) -> Model:
    """Scale a copy of ``model`` by per-body factors (see the module docstring for the rules).

    Parameters
    ----------
    model : Model (not modified, unless ``in_place``)
    factors : dict body name -> (3,) factors, or a list of ScaleEntry (body rows are used);
        bodies not listed keep factors 1
    mass : float, optional, kg: subject mass (all masses rescaled to sum to it)
    preserve_mass_distribution : bool, as ScaleTool's ModelScaler
    path_lengths_before : dict, the path lengths of ``model`` if already computed
        (:func:`default_path_lengths`)
    in_place : bool, scale ``model`` itself instead of a copy (for a caller that owns it and
        no longer needs it unscaled, like the ScaleTool: saves the copy)

    Returns
    -------
    Model, the scaled copy (its ``source`` is None).

    Raises
    ------
    ModelFileError if ``factors`` names a body the model lacks.
    """
    if isinstance(factors, (list, tuple)):
        fac = body_factors(model, factors)
    else:
        fac = {"ground": np.ones(3)}
        for b in model.bodies:
            fac[b] = np.ones(3)
        for k, v in dict(factors).items():
            if k not in fac:
                raise ModelFileError(f"scale factors name body '{k}' that model '{model.name}' "
                                     "lacks", model.source)
            fac[k] = np.broadcast_to(np.asarray(v, float), (3,)).copy()
    if path_lengths_before is None:
        path_lengths_before = default_path_lengths(model)
    out = model if in_place else model.copy()
    out.source = None

    base_of: dict = {}          # frame path -> its base body (fixed while scaling)

    def sf(frame_path):
        b = base_of.get(frame_path)
        if b is None:
            b = base_of[frame_path] = _base_body_name(out, frame_path)
        return fac[b]

    # offset frames
    for f in out.frames.values():
        f.translation = np.asarray(f.translation, float) * sf(f.parent)
    # bodies: mass centre, wrap objects, geometry
    for b in out.bodies.values():
        s = fac[b.name]
        b.mass_center = np.asarray(b.mass_center, float) * s
        _scale_wraps(b.wrap_objects, s)
        for g in b.geometry:
            g.scale_factors = np.asarray(g.scale_factors, float) * s
    # joints
    for j in out.joints.values():
        sp = sf(j.parent_frame)
        if j.type == "CustomJoint" and j.spatial_transform is not None:
            tr = j.spatial_transform[3:]
            for a in tr:
                ax = a.axis  # as written (4.x files keep their axes)
                f = a.function
                if f is None:
                    if a.coordinates:
                        continue  # identity LinearFunction: a degree of freedom
                    f = Constant(0.0)
                if isinstance(f, LinearFunction) and f.slope == 1.0 and f.intercept == 0.0:
                    continue
                k = float(np.abs(np.asarray(ax, float)) @ sp)
                a.function = scale_function(f, k)
        if j.type == "ScapulothoracicJoint":
            p = j.parameters
            p["thoracic_ellipsoid_radii_x_y_z"] = np.asarray(p["thoracic_ellipsoid_radii_x_y_z"], float) * sp
            sc = sf(j.child_frame)
            wo = np.array(p.get("scapula_winging_axis_origin", np.zeros(2)), float).copy()
            wo[0] *= sc[0]
            wo[1] *= sc[1]
            p["scapula_winging_axis_origin"] = wo
        if j.type == "EllipsoidJoint" and "radii_x_y_z" in j.parameters:
            j.parameters["radii_x_y_z"] = np.asarray(j.parameters["radii_x_y_z"], float) * sp
    # markers
    for mk in out.markers.values():
        mk.location = np.asarray(mk.location, float) * sf(mk.parent_frame)
    # PointOnEllipsoidConstraints: the point with its body, the ellipsoid with its frame's body
    # (radii along the ellipsoid axes, as a WrapEllipsoid's)
    for c in out.constraints:
        if c.type != "PointOnEllipsoidConstraint":
            continue
        p = c.properties
        p["location"] = np.asarray(p["location"], float) * sf(p["socket_body"])
        se = sf(p.get("socket_ellipsoid_frame", GROUND))
        R = rotation_xyz(np.asarray(p.get("orientation", np.zeros(3)), float))
        axes = np.array([np.linalg.norm(R[:, i] * se) for i in range(3)])
        for k in ("center", "reference_point"):
            if k in p:
                p[k] = np.asarray(p[k], float) * se
        for k in ("radii", "base_radii"):
            if k in p:
                p[k] = np.asarray(p[k], float) * axes
    # ground wraps are scaled by ground's factors (1)
    # path points
    for f in out.forces.values():
        if f.path is None:
            continue
        for p in f.path.points:
            s = sf(p.parent_frame)
            p.location = np.asarray(p.location, float) * s
            if p.kind == "MovingPathPoint" and p.location_functions is not None:
                p.location_functions = tuple(
                    None if fn_ is None else scale_function(fn_, s[i])
                    for i, fn_ in enumerate(p.location_functions))
    # inertial properties
    for b in out.bodies.values():
        s = fac[b.name]
        m_old = float(b.mass)
        m_new = m_old * abs(s[0] * s[1] * s[2]) if not preserve_mass_distribution else m_old
        b.inertia = _inertia_scaled(b.inertia, m_old, m_new, s, not preserve_mass_distribution)
        b.mass = m_new
    if mass is not None and mass > 0:
        tot = out.total_mass()
        if tot > 0:
            k = float(mass) / tot
            for b in out.bodies.values():
                b.mass = b.mass * k
                b.inertia = b.inertia * k
    # path-length dependent properties
    after = default_path_lengths(out) if path_lengths_before else {}
    for name, L0 in path_lengths_before.items():
        f = out.forces.get(name)
        if f is None or L0 <= 0.0 or name not in after:
            continue
        r = after[name] / L0
        props = _MUSCLE_PROPS if f.is_muscle else _LENGTH_PROPS.get(f.type, ())
        for pname in props:
            if getattr(f, pname, None) is not None:
                setattr(f, pname, getattr(f, pname) * r)
    return out


def _scale_wraps(wraps, s):
    for w in wraps:
        w.translation = np.asarray(w.translation, float) * s
        R = rotation_xyz(np.asarray(w.xyz_body_rotation, float))
        loc = [float(np.linalg.norm(R[:, i] * s)) for i in range(3)]
        t = w.type
        if t == "WrapEllipsoid" and w.radii is not None:
            w.radii = np.asarray(w.radii, float) * np.array(loc)
        elif t == "WrapCylinder":
            if w.radius is not None:
                w.radius = float(w.radius) * (loc[0] + loc[1]) * 0.5
            if w.length is not None:
                w.length = float(w.length) * loc[2]
        elif t == "WrapSphere" and w.radius is not None:
            w.radius = float(w.radius) * (loc[0] + loc[1] + loc[2]) / 3.0
        elif t == "WrapTorus":
            for k in ("inner_radius", "outer_radius"):
                if getattr(w, k) is not None:
                    setattr(w, k, float(getattr(w, k)) * (loc[0] + loc[1]) * 0.5)
