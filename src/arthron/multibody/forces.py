"""Generalized forces of a model's passive force elements, as OpenSim applies them.

OpenSim's tools (InverseDynamicsTool, AnalyzeTool) apply every force element that is not
excluded; inverse dynamics then reports the residual ``τ = M q̈ + c − g − τ_applied``. arthron
evaluates, vectorized over frames:

* ``SpringGeneralizedForce``: ``τ = −stiffness (q − rest_length) − viscosity q̇`` on its
  coordinate (OpenSim ``SpringGeneralizedForce::computeForceMagnitude``);
* ``CoordinateLimitForce``: stiffness ``K_up`` above ``upper_limit`` and ``K_low`` below
  ``lower_limit`` (N·m/deg and degrees for rotational coordinates), switched on by SimTK's
  quintic step over ``transition``, plus damping scaled by the same steps
  (OpenSim ``CoordinateLimitForce::calcLimitForce``);
* ``Blankevoort1991Ligament``, ``Ligament`` and ``PathSpring``: path tensions from their force
  laws (:mod:`arthron.models.muscles`; PathSpring: ``stiffness · max(l − resting_length, 0) ·
  (1 + dissipation · l̇)``, OpenSim ``PathSpring::getTension``) applied along their paths
  (:mod:`arthron.multibody.paths`);
* ``PointToPointSpring``: ``stiffness (d − rest_length)`` along the line between its two body
  points (Simbody ``TwoPointLinearSpring``), applied as point forces on the two bodies;
* ``SmoothSphereHalfSpaceForce`` (Serrancolí et al. 2019): Simbody's smooth Hertz force,
  Hunt–Crossley dissipation and Stribeck friction between a ContactSphere and a
  ContactHalfSpace, applied at the contact point midway through the indentation
  (Simbody ``SmoothSphereHalfSpaceForceImpl::calcForce``);
* ``HuntCrossleyForce`` between a ContactHalfSpace and a ContactSphere (Simbody
  ``HuntCrossleyForceImpl::calcForce`` with its half-space/sphere contact: Hertz force
  ``4/3 k δ sqrt(R k δ)``, dissipation ``(1 + 3/2 c v_n)``, Stribeck friction), and between two
  ContactSpheres; as in OpenSim 4.6 (Simbody 3.9), a contact that pulls ends the force: it and
  the contacts after it in the contact subsystem's sweep-and-prune order apply nothing
  (``_hunt_crossley_loads``); other geometry pairs are refused by name;
* ``ElasticFoundationForce`` between ContactSpheres and ContactHalfSpaces: no force, as in
  OpenSim 4.6 (Simbody's elastic foundation acts on triangle meshes only); on meshes it is
  refused by name;
* ``BushingForce`` on frames of the model: ``f = −K dq − D dq̇`` on the deflection dq
  (body-fixed X-Y-Z angles and translation of frame2 in frame1), mapped to a force and moment on
  each frame as OpenSim's ``TwoFrameLinker`` does; the frames may be offset frames the
  bushing owns (its ``<frames>``, as in OpenSim's ToyLanding models and 3.x bushings upgraded);
* ``ExpressionBasedCoordinateForce``: ``expression(q, qdot)`` on its coordinate, and
  ``ExpressionBasedPointToPointForce``: ``expression(d, ddot)`` along the line between its two
  points (OpenSim's Lepton grammar, :func:`arthron.models.expressions.lepton_expression`);
* actuators (CoordinateActuator, PathActuator, muscles when not excluded, ...) produce force
  only from controls or activations, which inverse dynamics does not have: CoordinateActuator
  and PathActuator give zero (control 0), muscles are reported as not applied (the solvers
  apply their default-state forces: :mod:`arthron.solvers.muscle_states`); an
  ActivationCoordinateActuator applies ``default_activation × optimal_force``, as OpenSim's
  InverseDynamicsTool does with the model's default activation state.

OpenSim's own force classes that need what arthron does not evaluate (expression-based and
coupled bushings, clutched springs, prescribed forces: :data:`REFUSED_FORCES`; contact on
meshes or between spheres) make
:func:`passive_forces` raise :class:`~arthron.errors.UnsupportedFeature` naming them, unless they
are excluded (``forces_to_exclude``), since leaving them out would change the result silently.
Other classes (plugins such as ``Smith2018ArticularContactForce``, which OpenSim itself only
applies with its plugin library) are listed as not applied, so callers can warn.
"""
from __future__ import annotations

import posixpath
from dataclasses import dataclass, field

import numpy as np

from ..models.functions import StepFunction
from .kinematics import Tree
from ..models.model import Model
from .force_exclusion import ZERO_WITHOUT_CONTROLS, forces_to_exclude

__all__ = ["PASSIVE_COORDINATE_FORCES", "LIGAMENT_TYPES", "active_forces", "PassiveForces",
           "passive_forces", "applied_generalized_forces", "passive_generalized_forces",
           "activation_coordinate_force",
           "coordinate_force", "coordinate_limit_potential_energy", "two_point_forces",
           "bushing_body_forces", "contact_body_forces"]

PASSIVE_COORDINATE_FORCES = ("SpringGeneralizedForce", "CoordinateLimitForce")
LIGAMENT_TYPES = ("Blankevoort1991Ligament", "Ligament")
PATH_TENSION_TYPES = LIGAMENT_TYPES + ("PathSpring",)
POINT_FORCE_TYPES = ("PointToPointSpring", "ExpressionBasedPointToPointForce")
CONTACT_FORCE_TYPES = ("SmoothSphereHalfSpaceForce", "HuntCrossleyForce", "BushingForce")
#: OpenSim force classes arthron does not evaluate: refused by name unless excluded.
REFUSED_FORCES = ("ExpressionBasedBushingForce", "ClutchedPathSpring", "FunctionBasedBushingForce",
                  "CoupledBushingForce", "PrescribedForce")
def active_forces(model: Model, exclude=()) -> list:
    """Force elements that apply force and are not excluded (OpenSim's ``forces_to_exclude``,
    read by :func:`forces_to_exclude`)."""
    ex = forces_to_exclude(model, exclude)[0]
    return [f for f in model.forces.values() if f.applies_force and f.name not in ex]


COORDINATE_FORCE_TYPES = PASSIVE_COORDINATE_FORCES + ("ExpressionBasedCoordinateForce",)


def coordinate_force(model: Model, tree: Tree, f, q, qd) -> np.ndarray:
    """Generalized force (T,) N·m or N of one SpringGeneralizedForce, CoordinateLimitForce or
    ExpressionBasedCoordinateForce on its coordinate (see the module docstring); q, qd (T, nq)."""
    c = _coordinate_index(model, tree, f)
    if f.type == "SpringGeneralizedForce":
        k, r, b = float(f.stiffness), float(f.rest_length), float(f.viscosity)
        return -k * (q[:, c] - r) - b * qd[:, c]
    if f.type == "ExpressionBasedCoordinateForce":
        return np.broadcast_to(_expression(model, f, ("q", "qdot"))(q[:, c], qd[:, c]), q[:, c].shape)
    K_up, K_lo, q_up, q_lo, damp, dq = _limit_parameters(model, f)
    ku = StepFunction(q_up, q_up + dq, 0.0, K_up).value(q[:, c])
    kl = StepFunction(q_lo - dq, q_lo, K_lo, 0.0).value(q[:, c])
    return (-ku * (q[:, c] - q_up) + kl * (q_lo - q[:, c])
            - damp * (ku / K_up + kl / K_lo) * qd[:, c])


def _limit_parameters(model, f):
    """CoordinateLimitForce's (K_up, K_low, q_up, q_low, damping, transition) in SI units
    (per radian for rotational coordinates, as OpenSim converts them)."""
    rot = model.coordinates[f.coordinate].motion_type == "rotational"
    w = np.pi / 180.0 if rot else 1.0
    return (float(f.upper_stiffness) / w, float(f.lower_stiffness) / w, w * float(f.upper_limit),
            w * float(f.lower_limit), float(f.damping) / w, w * float(f.transition))


def coordinate_limit_potential_energy(model: Model, tree: Tree, f, q) -> np.ndarray:
    """Potential energy (T,) J of a CoordinateLimitForce: OpenSim's
    ``CoordinateLimitForce::computePotentialEnergy`` (the integral of the quintic-step
    stiffness over the penetration past the active limit, linear spring beyond the
    transition)."""
    c = _coordinate_index(model, tree, f)
    K_up, K_lo, q_up, q_lo, _, trans = _limit_parameters(model, f)
    x = q[:, c]
    K = np.where(x > q_up, K_up, np.where(x < q_lo, K_lo, 0.0))
    d = np.where(x > q_up, x - q_up, np.where(x < q_lo, q_lo - x, 0.0))
    r = d / trans
    return np.where(d >= trans, K * ((-2.0 / 14.0) * trans * trans + 0.5 * d * d),
                    K * r ** 3 * (2.0 - 2.5 * r + (6.0 / 7.0) * r * r) * d * d)


def _coordinate_index(model, tree, f):
    from ..errors import ModelFileError
    if f.coordinate is None or f.coordinate not in model.coordinates:
        raise ModelFileError(f"{f.type} '{f.name}' names coordinate '{f.coordinate}', which the "
                             "model does not have", model.source)
    return tree.coordinate_index(f.coordinate)


@dataclass
class PassiveForces:
    """What the passive elements apply at T frames.

    mobility : (T, nq) generalized forces of coordinate-space elements (springs, limit forces)
    path_names : names of the path elements (ligaments, path springs), in ``tensions`` order
    tensions : (T, n) N, their path tensions (to apply along the paths as body forces)
    not_applied : (type, name) of active elements arthron cannot evaluate without states
    loads : list of :class:`~arthron.multibody.inverse_dynamics.ExternalLoad`, the point forces
        of body-to-body elements (PointToPointSpring) in ground, at the T frames
    paths : the compiled PathSet of ``path_names`` (None when there are none), to apply the
        tensions along without compiling the paths again
    coordinate_forces : {name: (T,) N·m or N} the coordinate-space elements' terms of ``mobility``;
    lengths, speeds : (T, n) m, m/s of the paths (None without); two_point : the
    :func:`two_point_forces` tuples; kinematics : forward kinematics at q, q̇ (None when unused)
    (what :func:`arthron.multibody.force_records.force_records` records, not evaluated again)
    """

    mobility: np.ndarray
    path_names: list
    tensions: np.ndarray
    not_applied: list
    loads: list = None
    paths: object = field(default=None, repr=False)
    coordinate_forces: dict = field(default_factory=dict, repr=False)
    lengths: np.ndarray | None = field(default=None, repr=False)
    speeds: np.ndarray | None = field(default=None, repr=False)
    two_point: list = field(default_factory=list, repr=False)
    kinematics: object = field(default=None, repr=False)


def activation_coordinate_force(f, states=None, T: int = 1) -> np.ndarray:
    """The generalized force (T,) N·m or N of an ActivationCoordinateActuator ``f``: its
    activation × ``optimal_force`` (OpenSim's ``ActivationCoordinateActuator::computeActuation``),
    the activation the ``states`` file's (``{f.name: {"activation": (T,)}}``) where it has one,
    else ``default_activation`` (the model's default state, which OpenSim's tools evaluate)."""
    a = ((states or {}).get(f.name) or {}).get("activation")
    a = float(f.default_activation) if a is None else np.asarray(a, float)
    return np.broadcast_to(a * float(f.optimal_force), (T,)).copy()


def passive_forces(model: Model, tree: Tree, q, qd, exclude=("Muscles",)) -> PassiveForces:
    """Evaluate the passive force elements OpenSim would apply (see the module docstring).

    Parameters
    ----------
    q, qd : (T, nq) coordinates and their rates (rad, m; rad/s, m/s), model order
    exclude : OpenSim ``forces_to_exclude`` (names, classes, ``Muscles``, ``Actuators``, ``All``)
    """
    q = np.atleast_2d(np.asarray(q, float))
    qd = np.atleast_2d(np.asarray(qd, float))
    T = q.shape[0]
    tau = np.zeros((T, tree.nq))
    not_applied, refused, points, contacts = [], [], [], []
    ligaments = []
    coord = {}
    for f in active_forces(model, exclude):
        if f.type in COORDINATE_FORCE_TYPES:
            coord[f.name] = v = coordinate_force(model, tree, f, q, qd)
            tau[:, _coordinate_index(model, tree, f)] += v
        elif f.type in PATH_TENSION_TYPES:
            ligaments.append(f.name)
        elif f.type in POINT_FORCE_TYPES:
            points.append(f)
        elif f.type in CONTACT_FORCE_TYPES:
            contacts.append(f)
        elif f.type == "ElasticFoundationForce":
            # Simbody's elastic foundation acts on triangle meshes only: between spheres and
            # half-spaces OpenSim 4.6 applies no force (checked in tests/test_forces_applied.py)
            names = [g for p_ in f.extra.get("contact_parameters", []) for g in p_["geometry"]]
            other = [g for g in names if g not in model.contact_geometry]
            if other:
                refused.append(f"ElasticFoundationForce '{f.name}' (on {', '.join(other)})")
        elif f.type == "ActivationCoordinateActuator":
            # its force follows an activation state; OpenSim's tools evaluate it in the
            # model's default state: default_activation × optimal_force
            c = _coordinate_index(model, tree, f)
            tau[:, c] += activation_coordinate_force(f, T=T)
        elif f.type in ZERO_WITHOUT_CONTROLS:
            continue
        elif f.type in REFUSED_FORCES:
            refused.append(f"{f.type} '{f.name}'")
        else:
            not_applied.append((f.type, f.name))
    if refused:
        from ..errors import UnsupportedFeature
        raise UnsupportedFeature(
            f"arthron does not apply {', '.join(refused)}, which OpenSim would apply; exclude "
            "them (forces_to_exclude / --exclude) to compute without them", model.source)
    tension = np.zeros((T, 0))
    ps = L = V = None
    if ligaments:
        from ..models.muscles import ligament_forces
        from .paths import compile_paths, lengthening_speeds, path_lengths
        ps = compile_paths(model, tree, forces=ligaments)
        ligaments = list(ps.names)
        L, V = path_lengths(ps, tree, q), lengthening_speeds(ps, tree, q, qd)
        tension = ligament_forces(model, ligaments, L, V)
    kin = None
    if points or contacts:
        from .kinematics import forward_kinematics
        kin = forward_kinematics(tree, q, qd)
    two = two_point_forces(model, tree, q, qd, points, kin=kin)
    # their point forces (ground frame) on the two bodies (body2 gets −F1)
    from .inverse_dynamics import ExternalLoad
    loads = [ExternalLoad(body=body, force=F, point=P, name=f.name) for f, b1, b2, P1, P2, F1 in two
             for body, P, F in ((b1, P1, F1), (b2, P2, -F1)) if body is not None]
    if contacts:
        loads += _contact_loads(model, tree, q, qd, contacts, kin=kin)
    return PassiveForces(tau, ligaments, tension, not_applied, loads, ps, coord, L, V, two, kin)


def _contact_loads(model, tree, q, qd, forces, ground=False, kin=None):
    """Point forces (ground frame) of SmoothSphereHalfSpaceForces on the sphere's and the
    half-space's bodies, vectorized over frames (Simbody's smooth contact law); with ``ground``
    also those on the ground (body None). ``kin``: the forward kinematics at q, qd when the
    caller has them."""
    from ..errors import ModelFileError
    from ..geometry.spatial import rotation_xyz
    from ..models.model import GROUND
    from .inverse_dynamics import ExternalLoad
    from .kinematics import forward_kinematics
    if kin is None:
        kin = forward_kinematics(tree, q, qd)
    Rb, ob = kin.body_R(tree), kin.body_origin(tree)
    T = q.shape[0]

    def geometry(f, ref, kind):
        g = model.contact_geometry.get((ref or "").rstrip("/").split("/")[-1])
        if g is None or g.kind != kind:
            raise ModelFileError(f"{f.type} '{f.name}' names {kind} '{ref}', which the model's "
                                 "ContactGeometrySet does not have", model.source)
        base, X = model.frame_in_base(g.frame)
        R_BG = X.R @ rotation_xyz(g.orientation)
        p_BG = X.R @ np.asarray(g.location, float) + X.p
        if base == GROUND:
            I = np.broadcast_to(np.eye(3), (T, 3, 3))
            z = np.zeros((T, 3))
            return g, None, I, z, z, z, R_BG, p_BG
        b = tree.body_names.index(base.rstrip("/").split("/")[-1])
        n = tree.body_node[b]
        return g, base.split("/")[-1], Rb[:, b], ob[:, b], kin.node("w", n), kin.node("v", n), R_BG, p_BG

    loads = []
    for f in forces:
        if f.type == "HuntCrossleyForce":
            loads += _hunt_crossley_loads(model, f, geometry, ground)
            continue
        if f.type == "BushingForce":
            loads += _bushing_loads(model, tree, kin, f, ground)
            continue
        gs, bs, Rs, os_, ws, vs, _, ps = geometry(f, f.sphere, "ContactSphere")
        _, bh, Rh, oh, wh, vh, RGh, ph = geometry(f, f.half_space, "ContactHalfSpace")
        r = float(gs.radius)
        C = os_ + Rs @ ps                                   # sphere centre in ground
        nrm = Rh @ RGh[:, 0]                                # half-space x axis: into the solid
        Oh = oh + Rh @ ph
        depth = r + np.einsum("ti,ti->t", C - Oh, nrm)      # indentation
        P = C + (r - 0.5 * depth)[:, None] * nrm            # contact point, mid-indentation
        v = (vs + np.cross(ws, P - os_)) - (vh + np.cross(wh, P - oh))
        vn = np.einsum("ti,ti->t", v, nrm)
        vt = v - vn[:, None] * nrm
        k = 0.5 * float(f.stiffness) ** (2.0 / 3.0)
        cf, bd, bv = float(f.constant_contact_force), float(f.hertz_smoothing), float(f.hunt_crossley_smoothing)
        fh = (4.0 / 3.0) * k * np.sqrt(r * k) * np.sqrt(depth ** 2 + cf) ** 1.5
        fh = fh * (0.5 + 0.5 * np.tanh(bd * depth))
        c = float(f.dissipation)
        fhc = fh * (1.0 + 1.5 * c * vn)
        if c != 0.0:
            fhc = fhc * (0.5 + 0.5 * np.tanh(bv * (vn + 2.0 / (3.0 * c))))
        vslip = np.sqrt(np.einsum("ti,ti->t", vt, vt) + cf)
        vrel = vslip / float(f.transition_velocity)
        us, ud, uv = float(f.static_friction), float(f.dynamic_friction), float(f.viscous_friction)
        ff = fhc * (np.minimum(vrel, 1.0) * (ud + 2.0 * (us - ud) / (1.0 + vrel ** 2)) + uv * vslip)
        force = fhc[:, None] * nrm + (ff / vslip)[:, None] * vt
        for body, F in ((bs, -force), (bh, force)):
            if body is not None or ground:
                loads.append(ExternalLoad(body=body, force=F, point=P.copy(), name=f.name))
    return loads


def _bushing_loads(model, tree, kin, f, ground=False):
    """Forces and moments of a BushingForce on its two frames (OpenSim BushingForce /
    TwoFrameLinker), vectorized over frames; with ``ground`` also the load on a frame fixed to
    the ground (body None)."""
    from ..errors import ModelFileError, UnsupportedFeature
    from ..models.model import GROUND
    from .inverse_dynamics import ExternalLoad
    T = kin.body_R(tree).shape[0]

    def frame(ref):
        if not ref:
            raise UnsupportedFeature(f"BushingForce '{f.name}' names no socket_frame1/2 (the 3.x "
                                     "body_1/location_body_1 form is not applied by arthron)",
                                     model.source)
        # a relative socket path is resolved from the force first (the offset frames a
        # bushing owns are /forceset/<name>/<frame>), then from the model's root
        owned = posixpath.normpath(posixpath.join(f"/forceset/{f.name}", ref))
        cands = [ref] if ref.startswith("/") else [owned, f"/{ref}"]
        for cand in cands:
            try:
                base, X = model.frame_in_base(cand)
                break
            except ModelFileError:
                continue
        else:
            raise UnsupportedFeature(f"BushingForce '{f.name}': frame '{ref}' is not a frame of "
                                     "the model", model.source)
        if base == GROUND:
            z = np.zeros((T, 3))
            return None, np.broadcast_to(np.eye(3), (T, 3, 3)), z, z, z, X
        b = tree.body_names.index(base.split("/")[-1])
        n = tree.body_node[b]
        return (base.split("/")[-1], kin.body_R(tree)[:, b], kin.body_origin(tree)[:, b],
                kin.node("w", n), kin.node("v", n), X)

    b1, RB1, oB1, w1, v1, X1 = frame(f.frame1)
    b2, RB2, oB2, w2, v2, X2 = frame(f.frame2)
    R1, R2 = RB1 @ X1.R, RB2 @ X2.R                      # R_GF, R_GM
    r1, r2 = RB1 @ X1.p, RB2 @ X2.p                      # body origin -> frame origin, ground
    p1, p2 = oB1 + r1, oB2 + r2
    R1T = np.swapaxes(R1, -1, -2)
    R_FM = R1T @ R2
    p_FM = np.einsum("tij,tj->ti", R1T, p2 - p1)
    b = np.arcsin(np.clip(R_FM[:, 0, 2], -1.0, 1.0))
    a = np.arctan2(-R_FM[:, 1, 2], R_FM[:, 2, 2])
    c = np.arctan2(-R_FM[:, 0, 1], R_FM[:, 0, 0])
    # relative velocity of M in F, derivative taken in F
    VF = v1 + np.cross(w1, r1)
    VM = v2 + np.cross(w2, r2)
    p_FM_G = p2 - p1
    w_FM = np.einsum("tij,tj->ti", R1T, w2 - w1)
    v_FM = np.einsum("tij,tj->ti", R1T, VM - VF - np.cross(w1, p_FM_G))
    w_FM_M = np.einsum("tji,tj->ti", R_FM, w_FM)
    # w_M = B(q) q̇ for body-fixed X-Y-Z angles; N = B⁻¹ (Simbody calcNForBodyXYZInBodyFrame)
    cb, sb, cc, sc = np.cos(b), np.sin(b), np.cos(c), np.sin(c)
    B = np.zeros((T, 3, 3))
    B[:, 0, 0], B[:, 0, 1] = cb * cc, sc
    B[:, 1, 0], B[:, 1, 1] = -cb * sc, cc
    B[:, 2, 0], B[:, 2, 2] = sb, 1.0
    N = np.linalg.inv(B)
    dq_rot = np.stack([a, b, c], 1)
    dqdot_rot = np.einsum("tij,tj->ti", N, w_FM_M)
    f_rot = -np.asarray(f.rotational_stiffness, float) * dq_rot \
        - np.asarray(f.rotational_damping, float) * dqdot_rot
    f_tr = -np.asarray(f.translational_stiffness, float) * p_FM \
        - np.asarray(f.translational_damping, float) * v_FM
    m2 = np.einsum("tij,tj->ti", R2, np.einsum("tji,tj->ti", N, f_rot))   # moment on frame2, G
    fM = np.einsum("tij,tj->ti", R1, f_tr)                                 # force on frame2, G
    loads = []
    if b2 is not None or ground:
        loads.append(ExternalLoad(body=b2, force=fM, point=p2, torque=m2, name=f.name))
    if b1 is not None or ground:
        loads.append(ExternalLoad(body=b1, force=-fM, point=p1,
                                  torque=-(m2 + np.cross(p_FM_G, fM)), name=f.name))
    return loads


def contact_body_forces(model: Model, tree: Tree, q, qd, f, kin=None):
    """What OpenSim 4.6 reports for a HuntCrossleyForce or an ElasticFoundationForce
    (``<name>.<frame>``: one entry per geometry of its contact parameters, in their order; the
    elastic foundation's are 0 on spheres and half-spaces) or a SmoothSphereHalfSpaceForce
    (``<name>.Sphere``, ``<name>.HalfSpace``): (label, force (T, 3) N, torque (T, 3) N·m), the
    force's spatial force on the geometry's body in ground, torque about the body's origin
    (ground: its origin), summed over the force's contacts on that body. ``kin``: the forward
    kinematics at q, qd when the caller has them."""
    from ..models.model import GROUND
    from .kinematics import forward_kinematics
    q, qd = np.atleast_2d(q), np.atleast_2d(qd)
    kin = forward_kinematics(tree, q, qd) if kin is None else kin
    o = kin.body_origin(tree)
    T = q.shape[0]
    total = {}
    # an ElasticFoundationForce on spheres and half-spaces applies nothing (module docstring)
    loads = [] if f.type == "ElasticFoundationForce" else _contact_loads(model, tree, q, qd, [f], True, kin)
    for ld in loads:
        org = np.zeros((T, 3)) if ld.body is None else o[:, tree.body_names.index(ld.body)]
        F, M = total.get(ld.body, (0.0, 0.0))
        tq = 0.0 if ld.torque is None else ld.torque
        total[ld.body] = (F + ld.force, M + tq + np.cross(ld.point - org, ld.force))

    def body(name):
        g = model.contact_geometry[(name or "").rstrip("/").split("/")[-1]]
        base = model.frame_in_base(g.frame)[0]
        return g, (None if base == GROUND else base.split("/")[-1])

    if f.type == "SmoothSphereHalfSpaceForce":
        items = [("Sphere", body(f.sphere)[1]), ("HalfSpace", body(f.half_space)[1])]
    else:
        items = []
        for p_ in f.extra.get("contact_parameters", []):
            for name in p_["geometry"]:
                g, b = body(name)
                items.append((str(g.frame).rstrip("/").split("/")[-1], b))
    zero = np.zeros((T, 3))
    return [(lab, *(np.broadcast_to(v, (T, 3)) for v in total.get(b, (zero, zero)))) for lab, b in items]


def bushing_body_forces(model: Model, tree: Tree, q, qd, f, kin=None):
    """What OpenSim's ``TwoFrameLinker::getRecordValues`` reports for a BushingForce: for
    frame1 then frame2, (frame name, force (T, 3) N, torque (T, 3) N·m) of the bushing's spatial
    force on the body the frame is fixed to, in ground, the torque about the body's origin
    (the ground's origin for a frame fixed to the ground); a body holding both frames gets the
    sum. ``kin``: the forward kinematics at q, qd when the caller has them."""
    from .kinematics import forward_kinematics
    kin = forward_kinematics(tree, np.atleast_2d(q), np.atleast_2d(qd)) if kin is None else kin
    o = kin.body_origin(tree)
    loads = _bushing_loads(model, tree, kin, f, ground=True)      # [on frame2, on frame1]
    T = o.shape[0]
    total = {}
    for ld in loads:
        org = np.zeros((T, 3)) if ld.body is None else o[:, tree.body_names.index(ld.body)]
        F, M = total.get(ld.body, (0.0, 0.0))
        total[ld.body] = (F + ld.force, M + ld.torque + np.cross(ld.point - org, ld.force))
    out = []
    for ref, ld in ((f.frame1, loads[1]), (f.frame2, loads[0])):
        F, M = total[ld.body]
        out.append((ref.rstrip("/").split("/")[-1], np.broadcast_to(F, (T, 3)), np.broadcast_to(M, (T, 3))))
    return out


def _hunt_crossley_loads(model, f, geometry, ground=False):
    """Point forces of one HuntCrossleyForce: every half-space/sphere and sphere/sphere pair on
    different bodies among its geometries (Simbody: Hertz force with the combined parameters of
    the two surfaces and their effective radius, r for a sphere on a half-space and
    r₁r₂/(r₁+r₂) for two spheres, applied at the middle of the indentation shifted by the
    relative stiffness; no force when separated). Two half-spaces never touch in Simbody;
    other geometry (meshes, ellipsoids ...) raises UnsupportedFeature naming the force.

    Contacts that pull: OpenSim 4.6's Simbody (3.9) ends ``HuntCrossleyForceImpl::calcForce``'s
    loop over the contacts at the first contact whose Hunt–Crossley force
    ``fH (1 + 3/2 c v_n)`` is not positive (it returns where skipping that one contact was
    meant), so that contact and every later one of the same force apply nothing, friction
    included. The order is the GeneralContactSubsystem's sweep-and-prune of that frame: each
    surface (one per geometry name per ContactParameters, in the order listed: OpenSim's
    ``addBody``) is bounded by a sphere (a ContactSphere's own; a ContactHalfSpace's is
    infinite, centred at its origin); the axis of the largest ``Σ|centre − mean|`` (y over x
    on a tie, z only when strictly larger) is swept, surfaces sorted by ``centre − radius`` on it (ties
    keep the listed order: libstdc++'s insertion sort below 17 surfaces), and the pairs come
    in that order (earlier surface, then later): every half-space/sphere contact before the
    sphere/sphere ones. See ``_hunt_crossley_contact_order``."""
    from ..errors import UnsupportedFeature
    from .inverse_dynamics import ExternalLoad
    surfaces = []                                   # (name, parameters), OpenSim's addBody order
    for p in f.extra.get("contact_parameters", []):
        for g in p["geometry"]:
            surfaces.append((g, p))
    if not surfaces:
        return []
    kinds = []
    for n, _ in surfaces:
        g = model.contact_geometry.get(n)
        kinds.append(g.kind if g is not None else None)
    geo = {}

    def get(i):
        if i not in geo:
            geo[i] = geometry(f, surfaces[i][0], kinds[i])
        return geo[i]

    contacts = []                                   # (i, j, P, force, pulls, touches, bodies)
    for i in range(len(surfaces)):
        for j in range(i + 1, len(surfaces)):
            a, b = surfaces[i][0], surfaces[j][0]
            pair = {kinds[i], kinds[j]}
            if pair == {"ContactHalfSpace"}:
                continue                          # Simbody has no half-space pair
            if pair == {"ContactHalfSpace", "ContactSphere"}:
                h, s_ = (i, j) if kinds[i] == "ContactHalfSpace" else (j, i)
                gh, bh, Rh, oh, wh, vh, RGh, ph = get(h)
                gs, bs, Rs, os_, ws, vs, _, ps = get(s_)
                if bh == bs:
                    continue                      # cancels on the body, and never pulls
                r = float(gs.radius)
                C = os_ + Rs @ ps
                xh = Rh @ RGh[:, 0]                   # into the half-space's solid
                normal = -xh                          # from the half-space towards the sphere
                depth = r + np.einsum("ti,ti->t", C - (oh + Rh @ ph), xh)
                origin = C - (r - 0.5 * depth)[:, None] * normal
                out = _hunt_crossley_pair(f, surfaces[h][1], surfaces[s_][1], (bh, oh, wh, vh),
                                          (bs, os_, ws, vs), normal, depth, origin, r)
                contacts.append((i, j) + out + ((bh, bs),))
            elif pair == {"ContactSphere"}:
                ga, ba, Ra, oa, wa, va, _, pa = get(i)
                gb, bb, Rb, ob, wb, vb, _, pb = get(j)
                if ba == bb:
                    continue
                ra, rb = float(ga.radius), float(gb.radius)
                Ca, Cb = oa + Ra @ pa, ob + Rb @ pb
                dist = np.linalg.norm(Cb - Ca, axis=1)
                normal = np.where(dist[:, None] > 0, (Cb - Ca) / np.where(dist > 0, dist, 1.0)[:, None],
                                  np.array([1.0, 0.0, 0.0]))      # from sphere a towards sphere b
                depth = ra + rb - dist
                origin = Ca + (ra - 0.5 * depth)[:, None] * normal
                out = _hunt_crossley_pair(f, surfaces[i][1], surfaces[j][1], (ba, oa, wa, va),
                                          (bb, ob, wb, vb), normal, depth, origin,
                                          ra * rb / (ra + rb))
                contacts.append((i, j) + out + ((ba, bb),))
            else:
                raise UnsupportedFeature(f"HuntCrossleyForce '{f.name}': contact between "
                                         f"{kinds[i] or a} '{a}' and {kinds[j] or b} '{b}' is not "
                                         "evaluated by arthron (half-space/sphere and sphere/sphere "
                                         "only)", model.source)
    if not contacts:
        return []
    pulling = np.array([c[4] for c in contacts])              # (C, T)
    keep = np.ones_like(pulling)
    if pulling.any():
        centres, radii = [], []
        for k in range(len(surfaces)):
            g, _, R, o, _, _, _, p_ = get(k)
            centres.append(o + R @ p_)
            radii.append(np.inf if kinds[k] == "ContactHalfSpace" else float(g.radius))
        rank = _hunt_crossley_contact_order(np.stack(centres, 1), np.array(radii),
                                           [(c[0], c[1]) for c in contacts])
        first = np.where(pulling, rank, np.iinfo(rank.dtype).max).min(axis=0)   # (T,)
        keep = rank < first[None, :]
    loads = []
    for c, k in zip(contacts, keep):
        _, _, P, force, _, _, (b1, b2) = c
        force = np.where(k[:, None], force, 0.0)
        loads += [ExternalLoad(body=body, force=F, point=P.copy(), name=f.name)
                  for body, F in ((b1, -force), (b2, force)) if body is not None or ground]
    return loads


def _hunt_crossley_contact_order(centres, radii, pairs):
    """Rank of each contact pair in Simbody's GeneralContactSubsystem contact list.

    centres (T, S, 3) bounding-sphere centres of the S surfaces of one contact set in ground
    (in their ``addBody`` order), radii (S,) their radii (``inf`` for a half-space), pairs a
    list of C surface index pairs. Returns (C, T) integer ranks: a contact comes before
    another when its earlier surface in the sweep comes first, then its later one (Simbody
    ``GeneralContactSubsystemImpl::realizeSubsystemDynamicsImpl``: sweep-and-prune along the
    axis of the largest summed absolute deviation of the centres, surfaces sorted by the
    start ``centre − radius`` of their extent, ties in ``addBody`` order)."""
    centres = np.asarray(centres, float)
    T, S, _ = centres.shape
    var = np.abs(centres - centres.mean(axis=1, keepdims=True)).sum(axis=1)    # (T, 3)
    axis = np.where(var[:, 0] > var[:, 1], 0, 1)
    axis = np.where(var[:, 2] > var[np.arange(T), axis], 2, axis)
    start = centres[np.arange(T), :, axis] - np.asarray(radii, float)[None, :]  # (T, S)
    if S <= 16:                   # libstdc++'s std::sort is an insertion sort there: stable
        order = np.argsort(start, axis=1, kind="stable")
    else:                         # its introsort orders ties (two half-spaces ...) its own way
        order = np.array([_libstdcxx_sort_order(row) for row in start])
    pos = np.empty_like(order)
    np.put_along_axis(pos, order, np.arange(S)[None, :].repeat(T, 0), axis=1)
    pa = np.array([pos[:, i] for i, _ in pairs])                                # (C, T)
    pb = np.array([pos[:, j] for _, j in pairs])
    return np.minimum(pa, pb) * S + np.maximum(pa, pb)


def _libstdcxx_sort_order(keys):
    """Indices of ``keys`` in the order GCC's ``std::sort`` (introsort: median-of-three
    quicksort down to runs of 16, then insertion sort) leaves them, comparing keys only; it
    differs from a stable sort only among equal keys."""
    a = [(float(k), i) for i, k in enumerate(keys)]

    def less(x, y):
        return x[0] < y[0]

    def insertion(lo, hi):                       # std::__insertion_sort on a[lo:hi]
        for i in range(lo + 1, hi):
            v = a[i]
            if less(v, a[lo]):
                a[lo + 1:i + 1] = a[lo:i]
                a[lo] = v
            else:
                j = i
                while less(v, a[j - 1]):
                    a[j] = a[j - 1]
                    j -= 1
                a[j] = v

    def heap_sort(lo, hi):                       # depth limit reached (std::__partial_sort)
        a[lo:hi] = sorted(a[lo:hi], key=lambda x: x[0])

    def loop(lo, hi, depth):                     # std::__introsort_loop
        while hi - lo > 16:
            if depth == 0:
                heap_sort(lo, hi)
                return
            depth -= 1
            mid, b, c = lo + (hi - lo) // 2, lo + 1, hi - 1
            x, y, z = a[b], a[mid], a[c]         # std::__move_median_to_first
            if less(x, y):
                m = mid if less(y, z) else (c if less(x, z) else b)
            else:
                m = b if less(x, z) else (c if less(y, z) else mid)
            a[lo], a[m] = a[m], a[lo]
            first, last = lo + 1, hi             # std::__unguarded_partition
            while True:
                while less(a[first], a[lo]):
                    first += 1
                last -= 1
                while less(a[lo], a[last]):
                    last -= 1
                if not first < last:
                    break
                a[first], a[last] = a[last], a[first]
                first += 1
            loop(first, hi, depth)
            hi = first

    n = len(a)
    loop(0, n, 2 * (n.bit_length() - 1))
    if n > 16:                                   # std::__final_insertion_sort
        insertion(0, 16)
        for i in range(16, n):                   # unguarded: a[0:16] holds a smaller key
            v, j = a[i], i
            while less(v, a[j - 1]):
                a[j] = a[j - 1]
                j -= 1
            a[j] = v
    else:
        insertion(0, n)
    return [i for _, i in a]


def _hunt_crossley_pair(f, p1, p2, body1, body2, normal, depth, origin, radius):
    """Simbody's HuntCrossleyForce on one contact (T frames): surface 1 on ``body1`` = (body or
    None for ground, origin, ω, v), ``normal`` (T, 3) from surface 1 to surface 2, ``depth``
    (T,) indentation (≤ 0: no contact), ``origin`` (T, 3) the middle of the indentation,
    ``radius`` the effective radius. Returns the contact point P (T, 3), the force on surface
    2's body (T, 3; the opposite acts on surface 1's), whether the contact pulls
    (``fH (1 + 3/2 c v_n) ≤ 0`` while touching; no force then) and whether it touches (T,)."""
    b1, o1, w1, v1 = body1
    b2, o2, w2, v2 = body2
    # Simbody stores each surface's stiffness to the power 2/3
    k1, k2 = float(p1["stiffness"]) ** (2.0 / 3.0), float(p2["stiffness"]) ** (2.0 / 3.0)
    s1 = k2 / (k1 + k2)
    # contact point: midway in the overlap, shifted by the relative stiffness
    P = origin + (depth * (0.5 - s1))[:, None] * normal
    k = k1 * s1
    c = float(p1["dissipation"]) * s1 + float(p2["dissipation"]) * (1 - s1)
    d = np.maximum(depth, 0.0)
    fH = (4.0 / 3.0) * k * d * np.sqrt(radius * k * d)
    v = (v1 + np.cross(w1, P - o1)) - (v2 + np.cross(w2, P - o2))   # body1 - body2
    vn = np.einsum("ti,ti->t", v, normal)
    vt = v - vn[:, None] * normal
    # a pulling contact applies nothing (nor friction) and ends the force's loop (caller)
    fn = np.maximum(fH * (1.0 + 1.5 * c * vn), 0.0)
    force = fn[:, None] * normal

    def comb(key):
        x, y = float(p1[key]), float(p2[key])
        return 2 * x * y / (x + y) if (x != 0 or y != 0) else 0.0
    us, ud, uv = comb("static_friction"), comb("dynamic_friction"), comb("viscous_friction")
    vslip = np.linalg.norm(vt, axis=1)
    vrel = vslip / float(f.extra.get("transition_velocity", 0.01))
    ff = fn * (np.minimum(vrel, 1.0) * (ud + 2 * (us - ud) / (1 + vrel ** 2)) + uv * vslip)
    force = force + np.divide(ff, vslip, out=np.zeros_like(ff), where=vslip != 0)[:, None] * vt
    touches = depth > 0
    force = np.where(touches[:, None], force, 0.0)
    return P, force, touches & (fn <= 0), touches


def _expression(model, f, variables):
    """The callable of a force's Lepton expression; UnsupportedFeature naming the force when it
    is outside the grammar arthron evaluates."""
    from ..errors import UnsupportedFeature
    from ..models.expressions import lepton_expression
    try:
        return lepton_expression(f.expression, variables)
    except ValueError as e:
        raise UnsupportedFeature(f"{f.type} '{f.name}': {e}", model.source) from None


def _body_of(model, f, ref):
    """Body name of a socket path (``/bodyset/b``, ``b``, ``/ground``); None for ground."""
    from ..errors import ModelFileError
    if not ref:
        raise ModelFileError(f"{f.type} '{f.name}' names no body", model.source)
    name = ref.rstrip("/").split("/")[-1]
    if name == "ground":
        return None
    if name not in model.bodies:
        raise ModelFileError(f"{f.type} '{f.name}' names body '{ref}', which the model does not "
                             "have", model.source)
    return name


def two_point_forces(model: Model, tree: Tree, q, qd, forces, kin=None) -> list:
    """Per PointToPointSpring / ExpressionBasedPointToPointForce of ``forces``:
    (force, body1, body2, P1, P2, F1): body names (None for ground), the two points in ground
    (T, 3) m and the force on body1 in ground (T, 3) N (towards point2 when positive; body2
    gets −F1). ``kin``: the forward kinematics at q, qd when the caller has them."""
    if not forces:
        return []
    if kin is None:
        from .kinematics import forward_kinematics
        kin = forward_kinematics(tree, q, qd)
    R, o = kin.body_R(tree), kin.body_origin(tree)
    nodes = tree.body_node
    T = q.shape[0]

    def station(body, p):
        p = np.asarray(p, float)
        if body is None:
            P = np.broadcast_to(p, (T, 3)).copy()
            return P, np.zeros_like(P)
        b = tree.body_names.index(body)
        P = o[:, b] + R[:, b] @ p
        w, v = kin.node("w", nodes[b]), kin.node("v", nodes[b])
        return P, v + np.cross(w, P - o[:, b])

    out = []
    for f in forces:
        b1, b2 = _body_of(model, f, f.body1), _body_of(model, f, f.body2)
        (P1, V1), (P2, V2) = station(b1, f.point1), station(b2, f.point2)
        r = P2 - P1
        d = np.linalg.norm(r, axis=1)
        u = np.divide(r, d[:, None], out=np.zeros_like(r), where=d[:, None] > 0)
        if f.type == "PointToPointSpring":
            mag = float(f.stiffness) * (d - float(f.rest_length))
        else:
            ddot = np.einsum("ti,ti->t", V2 - V1, u)
            mag = _expression(model, f, ("d", "ddot"))(d, ddot)
        out.append((f, b1, b2, P1, P2, mag[:, None] * u))
    return out


def applied_generalized_forces(model: Model, tree: Tree, q, qd, exclude=("Muscles",)):
    """Generalized forces (T, nq) of the passive force elements OpenSim would apply.

    Parameters
    ----------
    q, qd : (T, nq) coordinates and their rates (rad, m; rad/s, m/s), model order
    exclude : OpenSim ``forces_to_exclude``

    Returns
    -------
    tau : (T, nq) N·m / N
    not_applied : list of (type, name) of active elements arthron cannot evaluate here
        (muscles without activations, contact, bushings, plugin classes ...)
    """
    pf = passive_forces(model, tree, q, qd, exclude)
    return passive_generalized_forces(tree, q, pf), pf.not_applied


def passive_generalized_forces(tree: Tree, q, pf: PassiveForces) -> np.ndarray:
    """Generalized forces (T, nq) N·m / N of the passive elements evaluated in ``pf``
    (:func:`passive_forces` at q): the coordinate-space elements' plus Dᵀ of the point loads
    and of the path tensions along their paths."""
    tau = pf.mobility
    if pf.loads:
        from .frames_last import kinematics_frames_last, velocity_map_transpose_frames_last
        from .loads import body_wrenches_from_loads
        kin = kinematics_frames_last(tree, np.atleast_2d(q))
        F, M = body_wrenches_from_loads(tree, kin.frames_first(), pf.loads)
        tau = tau + velocity_map_transpose_frames_last(tree, kin, F, M)
    if pf.path_names:
        from .paths import path_generalized_forces
        tau = tau + path_generalized_forces(pf.paths, tree, np.atleast_2d(q), pf.tensions)
    return tau
