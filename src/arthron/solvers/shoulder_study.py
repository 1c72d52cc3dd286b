"""The glenohumeral joint reaction during scapular-plane abduction and its parameter study, after
Sarshari E, Boulanaache Y, Terrier A, Farron A, Mullhaupt P, Pioletti D (2021) "A Matlab
toolbox for scaled-generic modeling of shoulder and elbow", Sci Rep 11:20806 (their Fig. 5).

Pipeline for one subject (:func:`run_abduction`):

1. scale the generic model (:func:`scale_subject`): segment masses from gender and body mass,
   the upper limb's mass centres where Dumas, Chèze & Verriest (2007) put them for the gender
   (from the scaled landmarks GH, EL, EM, US, RS; :mod:`arthron.solvers.dumas2007`),
   geometry by the matrix S of their Eq. 13 (height; shoulder width), the ribcage ellipsoids
   re-dilated by Eq. 14 through the scaled TS and AI, PCSAs and maximum forces × r_m / r_m,generic
   (Eq. 17), optionally the rotator cuff's PCSAs × a factor (:func:`arthron.solvers.scaling.scale_anthropometric`
   does the masses, geometry and muscle strength);
2. the glenoid's inclination and version (Eqs. 15–16) rotate the stability cone's axis about
   the scapular-plane normal ŷ_s and about ẑ_s, the in-plane axis ⟂ SN − TS (:func:`glenoid_cone`);
3. abduction without measurements (de Groot & Brand 2001 rhythm, constraints held:
   :func:`arthron.solvers.shoulder_kinematics.solve_abduction`);
4. load sharing with the cone and the glenohumeral reaction
   (:mod:`arthron.solvers.shoulder_forces`).

:data:`SARSHARI_2021` holds the figures printed in the paper; :data:`PARAMETER_STUDY` the
variants of their Fig. 5.
"""
from __future__ import annotations

import math
from dataclasses import dataclass, field, replace

import numpy as np

from ..errors import OptionError
from ..models.model import GROUND, Model
from ..multibody.constraints import compile_constraints
from ..multibody.kinematics import compile_model, forward_kinematics, marker_positions
from .load_sharing_cone import DEFAULT_HALF_ANGLES, StabilityCone
from .scaling import scale_anthropometric
from .shoulder_forces import ShoulderForces, abduction_problem, shoulder_load_sharing
from .shoulder_kinematics import AbductionKinematics, solve_abduction

__all__ = ["Subject", "StudySpec", "AbductionResult", "scale_subject", "glenoid_cone",
           "run_abduction", "summarize", "SARSHARI_2021", "PARAMETER_STUDY", "SUMMARY_ANGLES",
           "ROTATOR_CUFF"]

#: figures printed by Sarshari et al. (2021) (N; None: not printed)
SARSHARI_2021 = {
    "generic": {20: 276.0, 60: 422.0, "peak": 585.0, "peak_deg": 122.0, "peak_percent_bw": 69.8},
    "female": {"shift": -95.0},
    "mass_60": {"peak_change": -0.30, "percent_bw_90": 70.0},
    "mass_100": {"peak": 684.0, "peak_change": 0.17, "percent_bw_90": 70.0},
    "height_160": {"note": "almost no effect"},
    "height_195": {"note": "almost no effect"},
    "inclination_-7": {"below_60_change": -0.10},
    "inclination_15": {60: 456.0},
    "rc_pcsa_50": {"below_60_change_max": 0.03, "peak": 682.0, "peak_deg": 130.0},
}
#: humerothoracic elevations (deg) the summary reports
SUMMARY_ANGLES = (20.0, 60.0, 90.0, 120.0)
#: the rotator-cuff muscles (group names)
ROTATOR_CUFF = ("supraspinatus", "infraspinatus", "subscapularis", "teres_minor")


@dataclass(frozen=True)
class Subject:
    """gender "male"/"female"; height m; mass kg; shoulder_width m or None (S's width ratio =
    height ratio); inclination_deg, version_deg: glenoid angles (absolute, degrees; None: the
    generic model's); rc_pcsa_factor: factor on the rotator cuff's PCSAs (and maximum forces)."""

    gender: str = "male"
    height: float = 1.86
    mass: float = 85.5
    shoulder_width: float | None = None
    inclination_deg: float | None = None
    version_deg: float | None = None
    rc_pcsa_factor: float = 1.0

    def check(self):
        """OptionError naming the bad value."""
        g = str(self.gender).lower()
        if g not in ("m", "male", "f", "female"):
            raise OptionError(f"gender must be m or f, got {self.gender!r}")
        for k, lo, hi in (("height", 0.5, 2.6), ("mass", 20.0, 300.0)):
            v = getattr(self, k)
            if not (isinstance(v, (int, float)) and math.isfinite(v) and lo <= v <= hi):
                raise OptionError(f"{k} must lie in [{lo:g}, {hi:g}] ({'m' if k == 'height' else 'kg'}), got {v!r}")
        if self.shoulder_width is not None and not (0.2 <= self.shoulder_width <= 0.7):
            raise OptionError(f"shoulder width must lie in [0.2, 0.7] m, got {self.shoulder_width!r}")
        for k in ("inclination_deg", "version_deg"):
            v = getattr(self, k)
            if v is not None and not (math.isfinite(v) and -45.0 <= v <= 45.0):
                raise OptionError(f"glenoid {k[:-4]} must lie in [-45°, 45°], got {v!r}")
        f = self.rc_pcsa_factor
        if not (math.isfinite(f) and 0.0 < f <= 5.0):
            raise OptionError(f"rotator-cuff PCSA factor must lie in (0, 5], got {f!r}")
        return replace(self, gender="female" if g.startswith("f") else "male")


@dataclass
class StudySpec:
    """What the study needs to know about a model.

    coordinates : the solved coordinates (rows of the equations of motion);
    glenohumeral_joint, cone_body : names; cone_axis : (3,) in the cone body's frame (from the
    glenoid into the joint); scapular_plane_normal : (3,) ŷ_s in the cone body's frame (axis of
    inclination changes); muscle_groups : {group: strings}; pcsa_cm2 : {string: cm²};
    generic : the generic :class:`Subject` (inclination_deg its glenoid inclination);
    ribcage_constraints : names of the PointOnEllipsoidConstraints re-dilated by Eq. 14;
    segment_map : body → segments for the masses; mass_center_map : body → Dumas et al. 2007
    segments whose mass centre the body takes for the subject's gender (see
    :func:`arthron.solvers.dumas2007.dumas_mass_centers`; empty: mass centres follow S);
    half_angles_deg : cone (AP, SI);
    stress_per_muscle : False (default): Sarshari et al.'s Eq. 12 as printed, whose unknowns are
    the strings' forces ("42 times the number of strings"), each string a muscle of its share of
    the PCSA, Σ_s (f_s/A_s)²; True: the stress of the muscles of ``muscle_groups``, each string
    weighted by its share of its muscle's PCSA (Σ_m (f_m/A_m)² at equal string stress, invariant
    to how many strings a muscle has; :func:`arthron.solvers.shoulder_forces.shoulder_load_sharing`'s
    ``groups``). The generic reaction's peak is 411 N at 102° with False, 392 N at 91° with True.
    landmarks : {role: marker} for :func:`arthron.solvers.shoulder_kinematics.solve_abduction`
    (default its ``LANDMARKS``); rotator_cuff : the groups the rotator-cuff factor acts on;
    scale : False: the model is used as it is for its generic subject (a model that is not
    the built-in one, :meth:`for_model`, until a subject of its own is given); builtin : the
    built-in model, whose results are compared with Sarshari et al.'s printed values;
    humeral_rotation_deg : external rotation of the humerus about its long axis during the
    abduction, from Codman's "no axial rotation" (degrees, default 0;
    :func:`arthron.solvers.shoulder_kinematics.abduction_targets`); fixed_coordinates :
    {coordinate: value (rad)} held during the abduction instead of their defaults (e.g. the
    built-in model's elbow flexion ``EL_x``; ``fixed`` of
    :func:`arthron.solvers.shoulder_kinematics.solve_abduction`).
    """

    coordinates: tuple
    glenohumeral_joint: str
    cone_body: str
    cone_axis: tuple
    scapular_plane_normal: tuple
    muscle_groups: dict
    pcsa_cm2: dict
    generic: Subject
    ribcage_constraints: tuple = ()
    segment_map: dict = field(default_factory=dict)
    half_angles_deg: tuple = DEFAULT_HALF_ANGLES
    generic_shoulder_width: float | None = None
    stress_per_muscle: bool = False
    landmarks: dict = field(default_factory=dict)
    rotator_cuff: tuple = ROTATOR_CUFF
    scale: bool = True
    builtin: bool = True
    mass_center_map: dict = field(default_factory=dict)
    humeral_rotation_deg: float = 0.0
    fixed_coordinates: dict = field(default_factory=dict)

    @classmethod
    def for_model(cls, model: Model, *, glenohumeral_joint: str, cone_body: str, cone_axis,
                      half_angles_deg=DEFAULT_HALF_ANGLES, coordinates=None, landmarks=None,
                      rotator_cuff=(), specific_tension: float | None = None,
                      generic: Subject | None = None) -> "StudySpec":
        """The study's description of any model (not the built-in one).

        glenohumeral_joint, cone_body : names; cone_axis : (3,) in the cone body's frame, from the
        glenoid into the joint; half_angles_deg : (AP, SI) of the stability cone;
        coordinates : the solved coordinates (default: every unlocked coordinate of the joints
        not attached to ground, i.e. the thorax stays where the model puts it); landmarks : {role:
        marker} for the roles of :data:`arthron.solvers.shoulder_kinematics.LANDMARKS` the model
        names differently; rotator_cuff : muscle names the rotator-cuff factor acts on;
        specific_tension : N/m² (PCSA = max_isometric_force / σ; default
        :data:`arthron.solvers.load_sharing.DEFAULT_SPECIFIC_TENSION`), each muscle its own group;
        generic : the subject the model stands for: given, the parameter study's subjects are
        scaled from it (:func:`scale_subject`); None, the model is used as it is.

        The scapular-plane normal ŷ_s (the axis of glenoid inclination changes) is (AA − AI) ×
        (AA − TS) at the default pose, in the cone body's frame.

        Raises OptionError naming what the model lacks (joint, body, landmark markers, muscles,
        coordinates) or a bad value.
        """
        from .load_sharing import DEFAULT_SPECIFIC_TENSION
        from .shoulder_kinematics import LANDMARKS
        if glenohumeral_joint not in model.joints:
            raise OptionError(f"model '{model.name}' has no joint '{glenohumeral_joint}'")
        if cone_body not in model.bodies:
            raise OptionError(f"model '{model.name}' has no body '{cone_body}'")
        axis = np.asarray(cone_axis, float).reshape(-1)
        if axis.shape != (3,) or not np.all(np.isfinite(axis)) or np.linalg.norm(axis) < 1e-12:
            raise OptionError(f"the cone axis must be 3 finite numbers, not all zero, got {cone_axis!r}")
        roles = dict(LANDMARKS, **(landmarks or {}))
        bad = [r for r in (landmarks or {}) if r not in LANDMARKS]
        if bad:
            raise OptionError(f"unknown landmark role(s) {', '.join(bad)}; roles: {', '.join(LANDMARKS)}")
        missing = [f"{r}={m}" for r, m in roles.items() if m not in model.markers]
        if missing:
            raise OptionError(f"model '{model.name}' lacks the landmark marker(s) {', '.join(missing)}: "
                              "name the model's markers with --landmarks ROLE=MARKER,...")
        if coordinates is None:
            grounded = {j.name for j in model.joints.values() if model.frame_in_base(j.parent_frame)[0] == GROUND}
            coordinates = [c for c, co in model.coordinates.items()
                           if not co.locked and not co.prescribed and co.joint not in grounded]
        for c in coordinates:
            if c not in model.coordinates:
                raise OptionError(f"model '{model.name}' has no coordinate '{c}'")
        muscles = [n for n, f in model.forces.items() if f.is_muscle and getattr(f, "max_isometric_force", None)]
        if not muscles:
            raise OptionError(f"model '{model.name}' has no muscles to share the load")
        sigma = DEFAULT_SPECIFIC_TENSION if specific_tension is None else float(specific_tension)
        if not (np.isfinite(sigma) and sigma > 0):
            raise OptionError(f"specific tension must be a positive number (N/m²), got {specific_tension!r}")
        rc = tuple(rotator_cuff)
        bad = [m for m in rc if m not in model.forces]
        if bad:
            raise OptionError(f"rotator-cuff muscle(s) {', '.join(bad)} are not forces of model '{model.name}'")
        tree = compile_model(model)
        _, P = marker_positions(tree, tree.default_q[None], [roles["AA"], roles["AI"], roles["TS"]])
        aa, ai, ts = P[0]
        Rb = forward_kinematics(tree, tree.default_q[None]).R[0, tree.body_node[tree.body_names.index(cone_body)]]
        ys = Rb.T @ np.cross(aa - ai, aa - ts)
        return cls(coordinates=tuple(coordinates), glenohumeral_joint=glenohumeral_joint,
                   cone_body=cone_body, cone_axis=tuple(axis / np.linalg.norm(axis)),
                   scapular_plane_normal=tuple(ys / np.linalg.norm(ys)),
                   muscle_groups={n: (n,) for n in muscles},
                   pcsa_cm2={n: model.forces[n].max_isometric_force / sigma * 1e4 for n in muscles},
                   generic=generic or Subject(), ribcage_constraints=(), segment_map={},
                   half_angles_deg=tuple(half_angles_deg), landmarks=dict(landmarks or {}),
                   rotator_cuff=rc, scale=generic is not None, builtin=False)

    @classmethod
    def from_info(cls, info) -> "StudySpec":
        """From :class:`arthron.models.shoulder_elbow.ShoulderElbowInfo`."""
        from ..models.shoulder_elbow import COORDINATES
        gen = Subject(gender=info.generic_gender, height=info.generic_height, mass=info.generic_mass,
                      inclination_deg=info.generic_glenoid_inclination_deg, version_deg=0.0)
        return cls(coordinates=tuple(COORDINATES), glenohumeral_joint=info.glenohumeral_joint,
                   cone_body=info.cone_body, cone_axis=tuple(info.cone_axis),
                   scapular_plane_normal=tuple(info.scapular_plane_normal),
                   muscle_groups=dict(info.muscle_groups), pcsa_cm2=dict(info.string_pcsa_cm2),
                   generic=gen, ribcage_constraints=tuple(info.ribcage_constraints),
                   segment_map=dict(info.segment_map),
                   generic_shoulder_width=float(info.generic_shoulder_width),
                   mass_center_map=dict(info.mass_center_map))


#: the variants of Fig. 5 of Sarshari et al. (2021): (key, label, changes to the generic subject)
PARAMETER_STUDY = (
    ("generic", "generic male 1.86 m, 85.5 kg", {}),
    ("female", "female", {"gender": "female"}),
    ("mass_60", "60 kg", {"mass": 60.0}),
    ("mass_100", "100 kg", {"mass": 100.0}),
    ("height_160", "1.60 m", {"height": 1.60}),
    ("height_195", "1.95 m", {"height": 1.95}),
    ("inclination_-7", "glenoid inclination -7°", {"inclination_deg": -7.0}),
    ("inclination_15", "glenoid inclination 15°", {"inclination_deg": 15.0}),
    ("rc_pcsa_50", "rotator-cuff PCSA -50 %", {"rc_pcsa_factor": 0.5}),
)


def _rc_strings(spec: StudySpec) -> list:
    out = []
    rc = {g.lower().replace(" ", "_") for g in spec.rotator_cuff}
    for g, strings in spec.muscle_groups.items():
        if g.lower().replace(" ", "_") in rc:
            out += list(strings)
    return out


def scale_subject(model: Model, spec: StudySpec, subject: Subject):
    """Scaled copy of the generic ``model`` for ``subject`` (see the module docstring, step 1).

    Returns (model, pcsa {string: m²}, report dict: ``S``, ``r_m``, ``r_m_generic``,
    ``arm_mass`` (kg, upper arm + forearm + hand bodies), ``dilation`` {constraint: δ m}).
    """
    subject = subject.check()
    gen = spec.generic
    if not spec.scale:
        if (subject.gender, subject.height, subject.mass, subject.shoulder_width) != \
                (gen.gender, gen.height, gen.mass, gen.shoulder_width):
            raise OptionError(f"model '{model.name}' is used as it is: give the subject it stands for "
                              "before scaling it to another one")
        out = model.copy()
        return out, _subject_pcsa(out, spec, subject, 1.0), {
            "S": np.ones(3), "r_m": 1.0, "r_m_generic": 1.0, "dilation": {}, "arm_mass": float("nan")}
    out, rep = scale_anthropometric(model, subject.mass, subject.height, subject.gender,
                                    generic_mass=gen.mass, generic_height=gen.height,
                                    generic_gender=gen.gender, shoulder_width=subject.shoulder_width,
                                    generic_shoulder_width=None if subject.shoulder_width is None
                                    else spec.generic_shoulder_width,
                                    segment_map=spec.segment_map or None, ribcage="dilate",
                                    mass_centers=spec.mass_center_map or None)
    dil = {n: float(v["delta"]) for n, v in rep.get("ribcage", {}).items()
           if not spec.ribcage_constraints or n in spec.ribcage_constraints}
    pcsa = _subject_pcsa(out, spec, subject, rep["r_m"] / rep["r_m_generic"])
    arm = sum(out.bodies[b].mass for b in spec.segment_map if b in out.bodies)
    rep = dict(rep, arm_mass=arm, dilation=dil)
    return out, pcsa, rep


def _subject_pcsa(out: Model, spec: StudySpec, subject: Subject, ratio: float) -> dict:
    """{string: PCSA m²} of the subject: the spec's PCSAs times ``ratio`` (r_m / r_m,generic,
    Eq. 17), the rotator cuff's also times ``subject.rc_pcsa_factor``, whose maximum isometric
    forces in ``out`` are scaled by that factor too (in place)."""
    rc = set(_rc_strings(spec))
    pcsa = {}
    for n, a in spec.pcsa_cm2.items():
        if n not in out.forces:
            continue
        pcsa[n] = float(a) * 1e-4 * ratio * (subject.rc_pcsa_factor if n in rc else 1.0)
        if n in rc:
            out.forces[n].max_isometric_force *= subject.rc_pcsa_factor
    return pcsa


def glenoid_cone(model: Model, spec: StudySpec, subject: Subject, tree=None) -> StabilityCone:
    """The stability cone of the subject, after Sarshari et al. 2021, Eqs. 15–16.

    Δα_GI = inclination − generic, Δα_GV = version − generic (degrees). Eq. 15 builds the
    scapula frame from SN, AI, TS: ŷ_s = (SN − AI) × (SN − TS) (the scapular-plane normal,
    anterior on the paper's right scapula), ẑ_s = (SN − TS) × ŷ_s (in the plane, superior),
    x̂_s = ŷ_s × ẑ_s (lateral); DAS4 has no SN, AA stands for it (``spec.scapular_plane_normal``
    is ŷ_s; ẑ_s is built here from the AA and TS markers (``spec.landmarks`` roles) at the
    default pose). Eq. 16 gives R_GI = Rodrigues(ŷ_s, Δα_GI) and R_GV = Rodrigues(ẑ_s, Δα_GV)
    and the text rotates "the glenoid center (GC) around ŷ_s and ẑ_s by Δα_GI and Δα_GV,
    respectively" (inclination first: GC' − SN = R_GV R_GI (GC − SN)), then builds the cone
    from the rotated GC; our cone axis runs from GC to GH, which stays where it is. The axis is
    therefore turned by the inverse rotation,

        axis = (R_GV R_GI)ᵀ axis_generic = R_GI(−Δα_GI) R_GV(−Δα_GV) axis_generic,

    the direction of GH seen from the rotated glenoid: for a small angle the literal
    construction (GC rotated about an SN medial of GC, axis GC' → GH) turns the axis the same
    way, by the same angle when SN lies as far medial of GC as GH lies lateral
    (tests/test_shoulder_study.py). Reading Eq. 16 as a rotation of the axis itself would turn
    it the other way: +Δα_GI would tilt the cone inferiorly, against the paper's finding that
    the −7° glenoid is the "more downward" one. Signs, as Eq. 16 prints them on the right
    scapula: a positive Δα_GI tilts the axis superiorly, a positive Δα_GV posteriorly
    (retroversion of the cone); a model whose ŷ_s or ẑ_s comes out the other way (a left
    shoulder) gets the angle's sign flipped so that the directions stay these (checked at the
    default pose against the thorax's up and forward directions from IJ, C7, PX, T8).

    Returns the :class:`StabilityCone` on ``spec.cone_body`` (axis (3,) unit, in its frame;
    half-angles ``spec.half_angles_deg``). Raises OptionError for a bad subject (:meth:`Subject.check`)."""
    from .shoulder_kinematics import LANDMARKS
    subject = subject.check()
    gen = spec.generic
    d_inc = (subject.inclination_deg if subject.inclination_deg is not None else gen.inclination_deg or 0.0) \
        - (gen.inclination_deg or 0.0)
    d_ver = (subject.version_deg if subject.version_deg is not None else gen.version_deg or 0.0) \
        - (gen.version_deg or 0.0)
    axis = np.asarray(spec.cone_axis, float)
    axis = axis / np.linalg.norm(axis)
    ys = np.asarray(spec.scapular_plane_normal, float)
    ys = ys / np.linalg.norm(ys)
    tree = tree or compile_model(model)
    q0 = tree.default_q[None]
    kin = forward_kinematics(tree, q0)
    Rb = kin.R[0, tree.body_node[tree.body_names.index(spec.cone_body)]]
    roles = dict(LANDMARKS, **(spec.landmarks or {}))
    _, P = marker_positions(tree, q0, [roles["AA"], roles["TS"]])
    zs = np.cross(Rb.T @ (P[0, 0] - P[0, 1]), ys)          # Eq. 15: (SN − TS) × ŷ_s, AA for SN
    zs = zs / np.linalg.norm(zs)
    up, fwd = _thorax_up_forward(tree)

    def rod(u, a):                                          # Eq. 16
        K = np.array([[0, -u[2], u[1]], [u[2], 0, -u[0]], [-u[1], u[0], 0]])
        return np.outer(u, u) + math.cos(a) * (np.eye(3) - np.outer(u, u)) + math.sin(a) * K
    # (R_GV R_GI)ᵀ = R_GI(−Δα_GI) R_GV(−Δα_GV); the inverse of a positive R_GI lifts the axis,
    # of a positive R_GV moves it posteriorly (on the right scapula; flipped if not)
    s_inc = 1.0 if (Rb @ (rod(ys, -0.1) @ axis - axis)) @ up > 0 else -1.0
    s_ver = 1.0 if (Rb @ (rod(zs, -0.1) @ axis - axis)) @ fwd < 0 else -1.0
    a1 = rod(zs, -s_ver * math.radians(d_ver)) @ axis if d_ver else axis   # no version: inclination as before
    a2 = rod(ys, -s_inc * math.radians(d_inc)) @ a1
    return StabilityCone(joint=spec.glenohumeral_joint, body=spec.cone_body, axis=tuple(a2),
                         half_angles_deg=tuple(spec.half_angles_deg))


def _thorax_up_forward(tree):
    """Thorax up and forward directions in ground (from IJ, C7, PX, T8 if present; else +y, +x)."""
    if all(n in tree.markers for n in ("IJ", "C7", "PX", "T8")):
        _, P = marker_positions(tree, tree.default_q[None], ["IJ", "C7", "PX", "T8"])
        ij, c7, px, t8 = P[0]
        up = 0.5 * (ij + c7) - 0.5 * (px + t8)
        fwd = ij - c7
        up /= np.linalg.norm(up)
        fwd -= up * (fwd @ up)
        return up, fwd / np.linalg.norm(fwd)
    return np.array([0.0, 1.0, 0.0]), np.array([1.0, 0.0, 0.0])


@dataclass
class AbductionResult:
    """One subject's abduction: ``subject``, the scaled ``model``, ``kinematics``
    (:class:`AbductionKinematics`), ``forces`` (:class:`ShoulderForces`), ``cone``, ``pcsa``,
    ``report`` (scaling report), ``summary`` (see :func:`summarize`)."""

    subject: Subject
    model: Model
    kinematics: AbductionKinematics
    forces: ShoulderForces
    cone: StabilityCone
    pcsa: dict
    report: dict
    summary: dict = field(default_factory=dict)


def run_abduction(model: Model, spec: StudySpec, subject: Subject | None = None, *,
                  elevation_deg=None, duration: float = 4.0, plane_deg: float = 30.0,
                  on_infeasible: str = "raise", progress=None,
                  kinematics: AbductionKinematics | None = None,
                  humeral_rotation_deg: float | None = None) -> AbductionResult:
    """Steps 1–4 of the module docstring for one subject (default: the generic one).

    elevation_deg : humerothoracic elevations (default 20°…150° by 1°); duration s.
    progress : callable(str) told of each step.
    kinematics : a motion already solved on a model of the same geometry (same height and
    shoulder width: masses, PCSAs and the glenoid's angles do not change the kinematics),
    reused instead of solving again.
    humeral_rotation_deg : external rotation of the humerus about its long axis from Codman's
    "no axial rotation" (degrees; :func:`arthron.solvers.shoulder_kinematics.abduction_targets`;
    None: ``spec.humeral_rotation_deg``); Sarshari et al. (2021) do not say which axial rotation
    their abduction has.
    """
    subject = (subject or spec.generic).check()
    if humeral_rotation_deg is None:
        humeral_rotation_deg = spec.humeral_rotation_deg
    say = progress or (lambda s: None)
    say("scaling the model")
    scaled, pcsa, rep = scale_subject(model, spec, subject)
    tree = compile_model(scaled)
    cs = compile_constraints(scaled, tree)
    cone = glenoid_cone(scaled, spec, subject, tree)
    if kinematics is not None:
        kin = kinematics
        if np.abs(cs.residuals(kin.q)).max() > 1e-9:
            raise OptionError("the kinematics given do not hold this model's constraints "
                              "(solved on another geometry?)")
    else:
        say("generating the abduction (de Groot & Brand 2001)")
        kin = solve_abduction(scaled, spec.coordinates, elevation_deg=elevation_deg, duration=duration,
                              plane_deg=plane_deg, constraints=cs, tree=tree,
                              landmarks=spec.landmarks or None,
                              humeral_rotation_deg=humeral_rotation_deg,
                              fixed=dict(spec.fixed_coordinates) or None)
    say("load sharing with the stability cone")
    muscles = [n for n in pcsa]
    rows = cs.row_labels()
    prob = abduction_problem(scaled, kin.q, kin.qd, kin.qdd, kin.time, spec.coordinates,
                             constraints=cs, muscles=muscles, tree=tree,
                             multiplier_names=[r[2] for r in rows], reaction_joint=cone.joint,
                             unilateral=[r[1] == "ellipsoid" for r in rows])
    forces = shoulder_load_sharing(scaled, prob, cone, pcsa, tree=tree, on_infeasible=on_infeasible,
                                   elevation_deg=kin.elevation_deg,
                                   groups=spec.muscle_groups if spec.stress_per_muscle else None)
    res = AbductionResult(subject=subject, model=scaled, kinematics=kin, forces=forces, cone=cone,
                          pcsa=pcsa, report=rep)
    known = spec.scale or spec.builtin           # a model used as it is has no body mass given
    res.summary = summarize(kin.elevation_deg, forces.reaction_magnitude,
                            subject.mass if known else float("nan"))
    return res


def summarize(elevation_deg, force, mass: float) -> dict:
    """Force (N) at :data:`SUMMARY_ANGLES` (linear interpolation; NaN outside the range), the
    peak (N) and its elevation (deg), and the force at 90° in % of body weight (g = 9.80665)."""
    el = np.asarray(elevation_deg, float)
    f = np.asarray(force, float)
    out = {}
    for a in SUMMARY_ANGLES:
        out[a] = float(np.interp(a, el, f)) if el[0] <= a <= el[-1] else float("nan")
    k = int(np.argmax(f))
    out["peak"] = float(f[k])
    out["peak_deg"] = float(el[k])
    out["percent_bw_90"] = 100.0 * out[90.0] / (9.80665 * mass) if np.isfinite(out[90.0]) else float("nan")
    return out
