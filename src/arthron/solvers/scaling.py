"""Anthropometric model scaling (Dumas et al. 2007 segment masses, body height and width
ratios, ribcage ellipsoid dilation and glenoid adaptation), on top of the ScaleTool rules of
:mod:`arthron.solvers.model_scaling`, whose public names this module re-exports (``from
arthron.solvers.scaling import scale_model`` keeps working)."""
from __future__ import annotations

import math

import numpy as np

from ..errors import DataFileError, ModelFileError, OptionError
from ..multibody.kinematics import compile_model, marker_positions
from ..geometry.spatial import rotation_xyz, xyz_from_matrix as _xyz_from_matrix
from ..models.model import GROUND, Model, require_model
from .dumas2007 import (DUMAS2007_COM_PERCENT, DUMAS2007_MASS_PERCENT, HAND_LENGTH_PER_HEIGHT,
                        dumas_mass_centers)
from .model_scaling import (  # noqa: F401  (re-exported: the ScaleTool part)
    Measurement, ScaleEntry, _base_body_name, _inertia_scaled, _num_equal, average_static,
    body_factors, compute_scale_set, default_path_lengths, frame_range, frame_scale_entries,
    measurement_factor, scale_model,
)

__all__ = ["ScaleEntry", "Measurement", "frame_scale_entries",
           "average_static", "frame_range", "measurement_factor", "compute_scale_set",
           "scale_model", "body_factors", "default_path_lengths",
           "DUMAS2007_MASS_PERCENT", "DUMAS2007_COM_PERCENT", "dumas_mass_centers", "DEFAULT_SEGMENT_MAP", "body_muscle_fraction",
           "default_segment_map", "segment_masses", "scale_anthropometric", "landmark_factors",
           "ellipsoid_dilation", "dilate_ribcage_ellipsoid", "dilate_point_on_ellipsoid", "scapula_frame", "glenoid_angles",
           "adapt_glenoid"]


# ------------------------------------------------------------------ anthropometric (the shoulder–elbow model paper)
# Segment masses (% of body mass) and the upper limb's mass centres: Dumas, Chèze & Verriest
# 2007 (the shoulder–elbow model paper's ref. 38), in arthron.solvers.dumas2007 (with what they
# were verified against); DUMAS2007_MASS_PERCENT is re-exported here.

#: Default body -> segments map for common OpenSim body names (Gait23xx, Rajagopal, arm26,
#: Thoracoscapular). A body listing several segments carries their summed mass; bodies of the
#: same side mapped to the same segments share it in proportion to their generic masses.
DEFAULT_SEGMENT_MAP = {
    "pelvis": ("pelvis",), "torso": ("torso", "head_neck"), "thorax": ("torso", "head_neck"),
    "clavicle": ("torso", "head_neck"), "scapula": ("torso", "head_neck"),
    "femur": ("thigh",), "tibia": ("leg",), "patella": ("leg",), "talus": ("foot",),
    "calcn": ("foot",), "toes": ("foot",), "humerus": ("arm",), "ulna": ("forearm",),
    "radius": ("forearm",), "hand": ("hand",), "ulna_radius_hand": ("forearm", "hand"),
}


#: A height (m) at or above this is not a person's: a height in centimetres or millimetres.
MAX_HEIGHT_M = 3.0


def body_muscle_fraction(mass: float, height: float, gender: str) -> float:
    """Body muscle fraction r_m from the BMI (the shoulder–elbow model paper, Eq. 17; BMI = mass / height², kg/m²).

    male: 1.09 − 0.0149 BMI + 0.00009 BMI²; female: 1.08 − 0.0203 BMI + 0.000156 BMI².
    """
    bmi = float(mass) / float(height) ** 2
    g = _gender(gender)
    if g == "male":
        return 1.09 - 0.0149 * bmi + 0.00009 * bmi * bmi
    return 1.08 - 0.0203 * bmi + 0.000156 * bmi * bmi


def _gender(g) -> str:
    s = str(g).strip().lower()
    if s in ("m", "male", "man"):
        return "male"
    if s in ("f", "female", "woman"):
        return "female"
    raise DataFileError(f"gender must be 'male'/'m' or 'female'/'f', got {g!r}")


def _split_side(name: str):
    for pre, side in (("r_", "r"), ("l_", "l")):
        if name.startswith(pre):
            return name[2:], side
    for suf, side in (("_r", "r"), ("_l", "l")):
        if name.endswith(suf):
            return name[:-2], side
    return name, ""


def default_segment_map(model: Model) -> dict:
    """Body -> segments for the bodies of ``model`` that :data:`DEFAULT_SEGMENT_MAP` knows.

    A model without arm bodies (Gait2354's torso is head, arms and trunk) gets both arms
    added to its torso."""
    out = {}
    for b in model.bodies:
        base, _ = _split_side(b)
        if base in DEFAULT_SEGMENT_MAP:
            out[b] = tuple(DEFAULT_SEGMENT_MAP[base])
    has_arm = any("arm" in v for v in out.values())
    if not has_arm:
        for b, segs in out.items():
            if "torso" in segs and _split_side(b)[0] in ("torso",):
                out[b] = segs + ("arm", "arm", "forearm", "forearm", "hand", "hand")
    return out


def segment_masses(model: Model, mass: float, gender: str, segment_map=None,
                   table=None) -> dict:
    """Body masses (kg) from the regression table (see :data:`DUMAS2007_MASS_PERCENT`), its
    fractions as printed (not normalized: bodies carrying a whole body's segments weigh
    :data:`~arthron.solvers.dumas2007.DUMAS2007_BODY_PERCENT` of ``mass``, 100.2 % male and
    99.9 % female, the table's rounding).

    Returns a dict body -> mass for the mapped bodies (unmapped bodies are absent).

    Raises
    ------
    ModelFileError for a map naming a body the model lacks; DataFileError for an unknown
    segment name.
    """
    table = (table or DUMAS2007_MASS_PERCENT)[_gender(gender)]
    smap = default_segment_map(model) if segment_map is None else dict(segment_map)
    groups: dict = {}
    for b, segs in smap.items():
        if b not in model.bodies:
            raise ModelFileError(f"segment map names body '{b}' that model '{model.name}' lacks",
                                 model.source)
        segs = (segs,) if isinstance(segs, str) else tuple(segs)
        for sname in segs:
            if sname not in table:
                raise DataFileError(f"unknown segment '{sname}' for body '{b}' (known: "
                                    f"{', '.join(table)})")
        groups.setdefault((segs, _split_side(b)[1]), []).append(b)
    out = {}
    for (segs, _), bodies in groups.items():
        total = float(mass) * sum(table[s] for s in segs) / 100.0
        gm = np.array([model.bodies[b].mass for b in bodies], float)
        share = gm / gm.sum() if gm.sum() > 0 else np.full(len(bodies), 1.0 / len(bodies))
        for b, f in zip(bodies, share):
            out[b] = total * float(f)
    return out


def scale_anthropometric(model: Model, mass: float, height: float, gender: str = "male", *,
                         generic_mass: float | None = None, generic_height: float | None = None,
                         generic_gender: str | None = None, shoulder_width: float | None = None,
                         generic_shoulder_width: float | None = None, vertical_axis: str = "y",
                         segment_map=None, segment_factors: dict | None = None,
                         keep_max_isometric_force: dict | None = None,
                         scale_forces: bool = True, ribcage: str = "dilate",
                         ribcage_landmarks: dict | None = None,
                         delta_glenoid_inclination: float = 0.0, delta_glenoid_version: float = 0.0,
                         scapula_landmarks: dict | None = None,
                         glenohumeral_joint: str = "GlenoHumeral",
                         mass_centers: dict | None = None) -> tuple[Model, dict]:
    """Scale a model from the subject's gender, mass and height (the shoulder–elbow model paper, "Model scaling").

    * Geometry: every body is scaled by the anisotropic matrix ``S`` of the paper's Eq. 13,
      ``S = diag(l_W/l_Wg, l_W/l_Wg, l_H/l_Hg)`` with the height axis along
      ``vertical_axis`` (OpenSim models: ``"y"``); without shoulder widths the width ratio is
      the height ratio. ``segment_factors`` (body -> (3,) factors, e.g. from landmark
      distances of a static trial, see :func:`measurement_factor`) override S per body.
      Frames, markers, path points, wrap objects, joint functions and muscle lengths follow
      the OpenSim 4.6 rules of :func:`scale_model`.
    * Masses: mapped bodies get the regression masses of :func:`segment_masses` (Dumas et al.
      2007's fractions as printed: a model whose bodies all map weighs 100.2 % of ``mass`` for
      a man, 99.9 % for a woman); unmapped bodies are scaled by ``mass / generic_mass``. Inertias are the generic ones scaled
      geometrically by S (OpenSim's rule, cylinder fit for anisotropic S) and by the mass
      ratio of the body.
    * Mass centres (``mass_centers``: body → Dumas segments, e.g. ``{"humerus": ("arm",),
      "ulna": ("forearm", "hand"), "radius": ("forearm", "hand")}``): the mapped bodies' mass
      centres are put where Dumas et al. 2007 put them for ``gender``, in the ISB segment frames
      built from the scaled model's landmarks GH, EL, EM, US, RS at its default pose, hand length
      0.108 × ``height`` (:func:`arthron.solvers.dumas2007.dumas_mass_centers`; inertias about
      the mass centre stay as above). Without it mass centres follow S.
    * Muscle strength: ``max_isometric_force`` (∝ PCSA) × ``r_m / r_m,generic``, the body
      muscle fractions of the paper's Eq. 17 (:func:`body_muscle_fraction`); forces named in
      ``keep_max_isometric_force`` get the given values instead (user PCSAs).
    * Ribcage (``ribcage="dilate"``, the paper's Eq. 14): every ScapulothoracicJoint ellipsoid is the
      generic one dilated isotropically to pass through the scaled gliding point
      (:func:`dilate_ribcage_ellipsoid`; ``ribcage_landmarks`` joint -> measured point in the
      scaled thorax), and so is every PointOnEllipsoidConstraint's ellipsoid that carries
      ``base_radii`` (:func:`dilate_point_on_ellipsoid`; ``ribcage_landmarks`` constraint name
      -> measured point); ``ribcage="opensim"`` scales the radii by S as OpenSim's ScaleTool does.
    * Glenoid (the paper's Eq. 16): with a non-zero ``delta_glenoid_inclination`` /
      ``delta_glenoid_version`` (radians) the glenohumeral joint frame is rotated about SN
      (:func:`adapt_glenoid`; ``scapula_landmarks`` SN/AI/TS in the scaled scapula frame, the
      model's scapula markers filling in the rest).

    Not implemented: segment lengths from tabulated length fractions and inertias from radii
    of gyration. The shoulder–elbow model paper says its Table 1 gives masses and lengths as
    fractions of body mass and height by gender, but does not print it: lengths follow S and
    inertias the generic ones (OpenSim's geometric rule × mass ratio). Dumas et al.'s radii of
    gyration are not used: the signs of their products of inertia could not be checked against
    the paper (the open implementations disagree or drop them).

    Parameters
    ----------
    mass : kg; height : m; gender : "male"/"m" or "female"/"f"
    generic_mass : kg (default: the model's total mass); generic_height : m (default: the
        vertical extent of the model's markers in the default pose); generic_gender (default
        ``gender``)

    Returns
    -------
    (scaled Model, report dict with ``S``, ``r_m``, ``r_m_generic``, ``masses``,
    ``mass_centers`` {body: (3,) m} when ``mass_centers`` is given)

    Raises
    ------
    OptionError for a model that is not a Model or a height (or generic height) of
    :data:`MAX_HEIGHT_M` or more (centimetres given for metres);
    DataFileError for non-positive mass/height, an unknown gender, or no way to tell the
    generic height (no markers and no ``generic_height``); ModelFileError for a segment map or
    factors naming bodies the model lacks.
    """
    require_model(model)
    if not (mass > 0 and height > 0):
        raise DataFileError(f"mass and height must be positive (got {mass!r} kg, {height!r} m)")
    for what, h in (("height", height), ("generic_height", generic_height)):
        if h is not None and not (math.isfinite(h) and h < MAX_HEIGHT_M):    # 175 (cm) would scale by ~100
            raise OptionError(f"{what} is in metres: {h:g} is no person's height (centimetres? give {h / 100:g})")
    gender = _gender(gender)
    generic_gender = _gender(generic_gender or gender)
    gm_total = float(generic_mass) if generic_mass else model.total_mass()
    if generic_height is None:
        tree = compile_model(model)
        if len(tree.markers) < 2:
            raise DataFileError(f"model '{model.name}' has fewer than 2 markers: give generic_height")
        _, P = marker_positions(tree, tree.default_q[None])
        ax = "xyz".index(vertical_axis)
        generic_height = float(P[0, :, ax].max() - P[0, :, ax].min())
    rh = float(height) / float(generic_height)
    rw = (float(shoulder_width) / float(generic_shoulder_width)
          if shoulder_width and generic_shoulder_width else rh)
    ax = "xyz".index(vertical_axis)
    S = np.full(3, rw)
    S[ax] = rh
    factors = {b: S.copy() for b in model.bodies}
    for b, f in (segment_factors or {}).items():
        if b not in model.bodies:
            raise ModelFileError(f"segment factors name body '{b}' that model '{model.name}' lacks",
                                 model.source)
        factors[b] = np.broadcast_to(np.asarray(f, float), (3,)).copy()
    out = scale_model(model, factors, preserve_mass_distribution=True, mass=None)
    masses = segment_masses(model, mass, gender, segment_map)
    for b, body in out.bodies.items():
        m0 = model.bodies[b].mass
        m1 = masses.get(b, m0 * float(mass) / gm_total if gm_total > 0 else m0)
        if m0 > 0:
            body.inertia = body.inertia * (m1 / m0)
        body.mass = m1
    mc = {}
    if mass_centers:
        mc = dumas_mass_centers(out, gender, mass_centers,
                                hand_length=HAND_LENGTH_PER_HEIGHT * float(height))
        for b, c in mc.items():
            out.bodies[b].mass_center = c
    rib = {}
    if ribcage not in ("dilate", "opensim"):
        raise DataFileError(f"ribcage must be 'dilate' or 'opensim', got {ribcage!r}")
    if ribcage == "dilate":
        for jn, j in model.joints.items():
            if j.type == "ScapulothoracicJoint":
                pb, _ = model.frame_in_base(j.parent_frame)
                s_par = factors.get(pb.split("/")[-1], S) if pb != GROUND else np.ones(3)
                rib[jn] = dilate_ribcage_ellipsoid(model, out, s_par, joint=jn,
                                                   landmark=(ribcage_landmarks or {}).get(jn))
        for c in model.constraints:
            if c.type == "PointOnEllipsoidConstraint" and "base_radii" in c.properties:
                eb, _ = model.frame_in_base(c.properties.get("socket_ellipsoid_frame", GROUND))
                s_par = factors.get(eb.split("/")[-1], S) if eb != GROUND else np.ones(3)
                rib[c.name] = dilate_point_on_ellipsoid(
                    model, out, s_par, constraint=c.name,
                    landmark=(ribcage_landmarks or {}).get(c.name))
    if delta_glenoid_inclination or delta_glenoid_version:
        out = adapt_glenoid(out, delta_glenoid_inclination, delta_glenoid_version,
                            landmarks=scapula_landmarks, joint=glenohumeral_joint)
    rm = body_muscle_fraction(mass, height, gender)
    rmg = body_muscle_fraction(gm_total, generic_height, generic_gender)
    keep = dict(keep_max_isometric_force or {})
    for n, f in out.forces.items():
        if getattr(f, "max_isometric_force", None) is None:
            continue
        if n in keep:
            f.max_isometric_force = float(keep[n])
        elif scale_forces and f.is_muscle:
            f.max_isometric_force *= rm / rmg
    report = {"S": S, "height_ratio": rh, "width_ratio": rw, "generic_height": generic_height,
              "generic_mass": gm_total, "r_m": rm, "r_m_generic": rmg, "masses": masses,
              "total_mass": out.total_mass(), "ribcage": rib}
    if mc:
        report["mass_centers"] = mc
    return out, report


def landmark_factors(model: Model, static_trial, time_range=None, *, bodies=None,
                     min_distance: float = 0.05) -> dict:
    """Per-body isotropic factors from a static trial: for every body with two or more
    markers present in the trial, the mean over its marker pairs (at least ``min_distance``
    apart on the model) of measured distance / model distance (distances averaged over the
    frames of ``time_range`` like a ModelScaler measurement).

    Returns dict body -> factor (bodies without a usable pair are absent).
    """
    tree = compile_model(model)
    _, P = marker_positions(tree, tree.default_q[None])
    names = list(tree.markers)
    if time_range is None:
        time_range = (static_trial.time[0], static_trial.time[-1])
    i0, i1 = frame_range(static_trial.time, *time_range)
    Y = np.asarray(static_trial.positions, float)[i0:i1 + 1]
    by_body: dict = {}
    for i, n in enumerate(names):
        if n in static_trial.labels:
            base = _base_body_name(model, model.markers[n].parent_frame)
            by_body.setdefault(base, []).append(i)
    out = {}
    for b, idx in by_body.items():
        if b == "ground" or (bodies is not None and b not in bodies):
            continue
        ratios = []
        for a in range(len(idx)):
            for c in range(a + 1, len(idx)):
                lm = float(np.linalg.norm(P[0, idx[a]] - P[0, idx[c]]))
                if lm < min_distance:
                    continue
                ja = static_trial.labels.index(names[idx[a]])
                jc = static_trial.labels.index(names[idx[c]])
                d = np.linalg.norm(Y[:, ja] - Y[:, jc], axis=1)
                d = d[np.isfinite(d)]
                if d.size:
                    ratios.append(float(d.mean()) / lm)
        if ratios:
            out[b] = float(np.mean(ratios))
    return out


# ------------------------------------------- ribcage ellipsoid and glenoid (the shoulder–elbow model paper, Eqs. 14–16)
def ellipsoid_dilation(radii, offset) -> float:
    """Isotropic dilation δ of the shoulder–elbow model paper Eq. 14: the root of
    ``Σ_i d_i² / (r_i + δ)² = 1`` with ``r_i + δ > 0``, i.e. the ellipsoid with axes
    ``r + δ`` (same centre) passes through the point at ``offset`` ``d`` from the centre
    (expressed along the ellipsoid axes).

    Eq. 14 multiplied out is the 6th-degree polynomial
    ``Σ_i d_i² Π_{j≠i} (r_j + δ)² − Π_j (r_j + δ)² = 0``, solved with ``numpy.roots`` as the
    seed does with Matlab's ``roots``. Its left side divided by ``Π (r_j+δ)²`` decreases strictly
    on ``δ > −min r`` towards −1, so at most one root qualifies (the seed's "positive root" when
    the scaled landmark lies outside the base ellipsoid; negative when inside).

    Raises
    ------
    DataFileError for non-positive radii, a point at the centre, or a point so far inside that
    no dilation with positive radii reaches it (possible only when it lies on the plane of the
    shortest axis).
    """
    r = np.asarray(radii, float).reshape(3)
    d = np.asarray(offset, float).reshape(3)
    if np.any(r <= 0):
        raise DataFileError(f"ellipsoid radii must be positive, got {r}")
    if not np.any(d):
        raise DataFileError("the landmark is at the ellipsoid centre: no dilation puts it on the surface")
    P = np.polynomial.Polynomial
    fac = [P([ri, 1.0]) ** 2 for ri in r]
    poly = -(fac[0] * fac[1] * fac[2])
    for i in range(3):
        others = [fac[j] for j in range(3) if j != i]
        poly = poly + d[i] ** 2 * others[0] * others[1]
    roots = np.roots(poly.coef[::-1])
    lo = -float(r.min())

    def g(delta):
        return float(np.sum((d / (r + delta)) ** 2) - 1.0)
    # real roots with positive radii that solve Eq. 14 itself (the multiplied-out polynomial
    # also vanishes at δ = −r_i when d_i = 0)
    cand = [float(z.real) for z in roots if abs(z.imag) <= 1e-9 * max(1.0, abs(z)) and z.real > lo]
    cand = [z for z in cand if abs(g(z)) < 1e-6]
    if cand:
        delta = min(cand, key=lambda z: abs(g(z)))
    else:
        from scipy.optimize import brentq
        a = lo + 1e-12 * max(1.0, abs(lo))
        if not g(a) > 0:
            raise DataFileError(f"no isotropic dilation with positive radii puts the point {d} on "
                                f"the ellipsoid with radii {r}")
        delta = brentq(g, a, float(np.linalg.norm(d)))
    # polish (roots of a 6th-degree polynomial are accurate to ~1e-12 relative)
    for _ in range(3):
        f = g(delta)
        df = float(np.sum(-2.0 * d ** 2 / (r + delta) ** 3))
        delta -= f / df
    return float(delta)


def _frame_origin_in_body(model: Model, tree, q, frame_path: str, body_path: str) -> np.ndarray:
    """Origin of ``frame_path`` expressed in the frame of body ``body_path`` (as
    :meth:`Model.frame_in_base` names it) at pose q (nq,)."""
    from ..multibody.kinematics import forward_kinematics
    kin = forward_kinematics(tree, np.asarray(q, float)[None])
    b1, X1 = model.frame_in_base(frame_path)

    def pose(b):
        if b == GROUND:
            return np.eye(3), np.zeros(3)
        n = tree.body_node[tree.body_index(b)]
        return kin.R[0, n], kin.o[0, n]
    R1, o1 = pose(b1)
    Rb, ob = pose(body_path)
    pg = o1 + R1 @ np.asarray(X1.p, float)
    return Rb.T @ (pg - ob)


def dilate_ribcage_ellipsoid(generic: Model, scaled: Model, S, *, joint: str = "scapulothoracic",
                             landmark=None) -> dict:
    """the shoulder–elbow model paper Eq. 14 on OpenSim's ScapulothoracicJoint: replace the radii of the scaled
    model's thoracic ellipsoid by the generic radii dilated isotropically by δ so that the
    ellipsoid (centred at the scaled centre ``S e0``) passes through the scaled landmark.

    The seed constrains two scapular landmarks (TS and AI) to two ellipsoids dilated from one
    base ellipsoid; the OpenSim Thoracoscapular model has one ellipsoid, on which the joint's
    child frame origin (the scapula's gliding point) moves. That point, taken in the generic
    default pose and expressed in the thorax (parent body), is the landmark here, scaled by
    ``S`` (the parent body's factors, (3,), along its axes) unless ``landmark`` gives the
    subject's (measured) position in the scaled parent body frame (the seed's variant with
    videogrammetry). The centre is the scaled joint parent frame (``S e0``, as
    :func:`scale_model` leaves it); the ellipsoid axes are those of that frame (its orientation
    in the thorax is taken into account). In the generic model (S = 1) δ = 0.

    Modifies ``scaled`` in place; returns ``{"delta": δ, "radii_generic": r, "radii": r + δ,
    "landmark": point in the scaled parent body frame}``.

    Raises
    ------
    ModelFileError when the joint is missing or not a ScapulothoracicJoint.
    """
    from ..multibody.kinematics import compile_model
    for m in (generic, scaled):
        j = m.joints.get(joint)
        if j is None or j.type != "ScapulothoracicJoint":
            raise ModelFileError(f"model '{m.name}' has no ScapulothoracicJoint '{joint}'", m.source)
    jg = generic.joints[joint]
    js = scaled.joints[joint]
    parent_body, _ = generic.frame_in_base(jg.parent_frame)
    r0 = np.asarray(jg.parameters["thoracic_ellipsoid_radii_x_y_z"], float)
    if landmark is None:
        tree = compile_model(generic)
        x = _frame_origin_in_body(generic, tree, tree.default_q, jg.child_frame, parent_body)
        landmark = np.broadcast_to(np.asarray(S, float), (3,)) * x
    landmark = np.asarray(landmark, float).reshape(3)
    _, Xs = scaled.frame_in_base(js.parent_frame)
    d = np.asarray(Xs.R, float).T @ (landmark - np.asarray(Xs.p, float))
    delta = ellipsoid_dilation(r0, d)
    js.parameters["thoracic_ellipsoid_radii_x_y_z"] = r0 + delta
    return {"delta": delta, "radii_generic": r0, "radii": r0 + delta, "landmark": landmark}


def dilate_point_on_ellipsoid(generic: Model, scaled: Model, S, *, constraint: str,
                              landmark=None) -> dict:
    """the shoulder–elbow model paper Eq. 14 on a PointOnEllipsoidConstraint (the built-in
    shoulder–elbow model's TS and AI constraints): the scaled model's ellipsoid gets the
    generic ``base_radii`` dilated isotropically by δ so that it passes, around the scaled
    centre ``S e0``, through the scaled landmark ``S · reference_point`` (the point on the
    generic ellipsoid at the generic rest pose, in the ellipsoid frame's body) or through
    ``landmark`` (the subject's measured point in the scaled body frame, the paper's variant
    with videogrammetry).

    Modifies ``scaled`` in place; returns ``{"delta": δ, "radii_generic": base radii, "radii":
    base + δ, "landmark": point}``.

    Raises
    ------
    ModelFileError when the constraint is missing or lacks ``base_radii`` /
    ``reference_point``.
    """
    def find(m):
        c = next((c for c in m.constraints if c.name == constraint
                  and c.type == "PointOnEllipsoidConstraint"), None)
        if c is None or "base_radii" not in c.properties or "reference_point" not in c.properties:
            raise ModelFileError(f"model '{m.name}' has no PointOnEllipsoidConstraint "
                                 f"'{constraint}' with base_radii and reference_point", m.source)
        return c
    cg, cs = find(generic), find(scaled)
    S = np.broadcast_to(np.asarray(S, float), (3,))
    base = np.asarray(cg.properties["base_radii"], float)
    if landmark is None:
        landmark = S * np.asarray(cg.properties["reference_point"], float)
    landmark = np.asarray(landmark, float).reshape(3)
    ps = cs.properties
    R = rotation_xyz(np.asarray(ps.get("orientation", np.zeros(3)), float))
    d = R.T @ (landmark - np.asarray(ps.get("center", np.zeros(3)), float))
    delta = ellipsoid_dilation(base, d)
    ps["radii"] = base + delta
    ps["base_radii"] = base.copy()
    ps["reference_point"] = landmark
    return {"delta": delta, "radii_generic": base, "radii": base + delta, "landmark": landmark}


def _rodrigues(axis, angle) -> np.ndarray:
    """the shoulder–elbow model paper Eq. 16: ``u uᵀ + cos α (I − u uᵀ) + sin α [u]×``."""
    u = np.asarray(axis, float)
    u = u / np.linalg.norm(u)
    K = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
    return np.outer(u, u) + math.cos(angle) * (np.eye(3) - np.outer(u, u)) + math.sin(angle) * K


def scapula_frame(landmarks: dict) -> tuple:
    """Scapula frame of the shoulder–elbow model paper Eq. 15 from SN, AI, TS (any common frame):
    ``ŷ = (SN − AI) × (SN − TS)``, ``ẑ = (SN − TS) × ŷ``, ``x̂ = ŷ × ẑ`` (normalised), origin SN.

    Returns (origin (3,), R (3, 3) with columns x̂, ŷ, ẑ).

    Raises
    ------
    DataFileError naming the landmarks missing from ``landmarks``, or for collinear landmarks.
    """
    lm = _landmarks(landmarks, ("SN", "AI", "TS"))
    sn, ai, ts = lm["SN"], lm["AI"], lm["TS"]
    y = np.cross(sn - ai, sn - ts)
    if np.linalg.norm(y) < 1e-12:
        raise DataFileError("scapula landmarks SN, AI and TS are collinear")
    y /= np.linalg.norm(y)
    z = np.cross(sn - ts, y)
    z /= np.linalg.norm(z)
    x = np.cross(y, z)
    return sn, np.column_stack([x, y, z])


def _landmarks(landmarks: dict, need) -> dict:
    up = {str(k).upper(): np.asarray(v, float).reshape(3) for k, v in (landmarks or {}).items()}
    missing = [n for n in need if n not in up]
    if missing:
        raise DataFileError(f"scapula landmarks missing: {', '.join(missing)} (needed: "
                            f"{', '.join(need)}; the shoulder–elbow model paper Eq. 15 and Fig. 4)")
    return up


def glenoid_angles(landmarks: dict) -> tuple:
    """Glenoid inclination α_GI and version α_GV (radians) as the shoulder–elbow model paper defines them (Eq. 15,
    Fig. 4): α_GI is the angle from ẑ_s to IG→SG projected on the x̂_s ẑ_s plane, α_GV the
    angle from ŷ_s to PG→AG projected on the x̂_s ŷ_s plane. Signs (the seed gives none): the
    right-hand rotation about ŷ_s, resp. ẑ_s, that takes ẑ_s, resp. ŷ_s, onto the projected
    vector — so that the rotations R_GI and R_GV of Eq. 16 by Δα change these angles by Δα.

    ``landmarks``: SN, AI, TS, IG, SG, PG, AG positions in one frame (e.g. the scapula's).
    """
    lm = _landmarks(landmarks, ("SN", "AI", "TS", "IG", "SG", "PG", "AG"))
    _, R = scapula_frame(lm)
    x, y, z = R.T
    v = lm["SG"] - lm["IG"]
    a_gi = math.atan2(float(v @ x), float(v @ z))      # R_y(α) ẑ = cos α ẑ + sin α x̂
    w = lm["AG"] - lm["PG"]
    a_gv = math.atan2(float(-(w @ x)), float(w @ y))   # R_z(α) ŷ = cos α ŷ − sin α x̂
    return a_gi, a_gv


def adapt_glenoid(model: Model, delta_inclination: float = 0.0, delta_version: float = 0.0, *,
                  landmarks: dict | None = None, joint: str = "GlenoHumeral",
                  rotate_frame: bool = True) -> Model:
    """Adapt the glenoid inclination and version (the shoulder–elbow model paper Eq. 16): rotate the glenoid centre
    GC — the origin of the glenohumeral joint's parent frame on the scapula — about SN by
    ``R_GV(Δα_GV) R_GI(Δα_GI)`` (axes ŷ_s and ẑ_s of Eq. 15). With ``rotate_frame`` the joint
    frame's orientation is rotated with it (the glenoid face, whose normal the seed's stability
    cone follows); otherwise only its position moves.

    ``landmarks``: SN, AI, TS in the scapula body frame; names missing there are taken from
    the model's markers on the scapula (case-insensitive: the Thoracoscapular model has ``ai``
    and ``ts`` but no SN, which must then be given). Angles in radians (Δα = α_subject −
    α_generic; the seed's generic α_GI is 7°).

    Returns a new model.

    Raises
    ------
    ModelFileError when the joint is missing; DataFileError naming missing landmarks.
    """
    j = model.joints.get(joint)
    if j is None:
        raise ModelFileError(f"model '{model.name}' has no joint '{joint}'", model.source)
    body, X = model.frame_in_base(j.parent_frame)
    lm = {}
    for mk in model.markers.values():
        try:
            b, Xm = model.frame_in_base(mk.parent_frame)
        except ModelFileError:
            continue
        if b == body:
            lm[mk.name.upper()] = Xm.apply(np.asarray(mk.location, float))
    lm.update({str(k).upper(): np.asarray(v, float) for k, v in (landmarks or {}).items()})
    try:
        sn, R = scapula_frame(lm)
    except DataFileError as e:
        raise DataFileError(f"{e} for joint '{joint}' of model '{model.name}'", model.source) from None
    Rot = _rodrigues(R[:, 2], delta_version) @ _rodrigues(R[:, 1], delta_inclination)
    out = model.copy()
    f = out.frames[j.parent_frame]
    if f.parent != body:
        raise ModelFileError(f"joint '{joint}': parent frame '{j.parent_frame}' is not attached "
                             f"directly to body '{body}'", model.source)
    gc = np.asarray(f.translation, float)
    f.translation = sn + Rot @ (gc - sn)
    if rotate_frame:
        f.orientation = _xyz_from_matrix(Rot @ rotation_xyz(np.asarray(f.orientation, float)))
    return out
