"""Body segment inertial parameters of Dumas R, Chèze L, Verriest J-P (2007) "Adjustments to
McConville et al. and Young et al. body segment inertial parameters", J Biomech 40:543–553: the
segment masses in % of body mass (:data:`DUMAS2007_MASS_PERCENT`) and the upper limb's mass
centres in % of segment length in the ISB segment frames (:data:`DUMAS2007_COM_PERCENT`), placed
on a model from its own landmarks (:func:`upper_limb_frames`, :func:`dumas_mass_centers`).

Values were read from the open implementation of Dumas et al. (2007) in HuMoD (Wojtusch J, von
Stryk O (2015) "HuMoD — a versatile and open database for the investigation, modeling and
simulation of human motion dynamics on actuation level", IEEE-RAS Humanoids; file
``SubjectParameterEstimation.m``, BSD 3-clause licence), not from the paper itself, and checked
against OpenMA's (``dumasmcconvilleyoungtable.cpp``): masses and the upper limb's mass centres
equal.
"""
from __future__ import annotations

import numpy as np

from ..errors import DataFileError, ModelFileError
from ..models.model import Model
from ..multibody.kinematics import compile_model, forward_kinematics, marker_positions

__all__ = ["DUMAS2007_MASS_PERCENT", "DUMAS2007_BODY_PERCENT", "DUMAS2007_COM_PERCENT", "HAND_LENGTH_PER_HEIGHT",
           "UPPER_LIMB_LANDMARKS", "upper_limb_frames", "dumas_mass_centers"]

#: Segment masses in % of body mass, by gender: Dumas et al. 2007, Table 2 (the shoulder–elbow
#: model paper's ref. 38, its "3D predictive equations"). ``torso`` is the thorax with the abdomen.
#:
#: The table's own values, not normalized: they are rounded to 0.1 %, and a whole body (head
#: and neck, torso, pelvis and both limbs) sums to 100.2 % of the body mass for men and 99.9 % for
#: women (:data:`DUMAS2007_BODY_PERCENT`), so a model whose bodies all carry segments of the
#: table (:func:`arthron.solvers.scaling.segment_masses`) weighs that share of the subject's mass.
#: The shoulder–elbow model paper uses them as printed: its generic subject's (85.5 kg) "arm
#: weight from almost 3.51 kg to 2.99 kg" is upper arm + forearm, 4.1 % male (3.506 kg) and
#: 3.5 % female (2.993 kg); normalized they would be 3.499 and 2.996 kg.
#:
#: Sources (the paper itself was not available to this project): two independent open
#: implementations of Table 2 agree on every entry: HuMoD (Wojtusch & von Stryk 2015,
#: ``SubjectParameterEstimation.m``, BSD 3-clause) and OpenMA (Moveck Solution 2016,
#: ``dumasmcconvilleyoungtable.cpp``, BSD; head and neck "from the corrigendum"): head 6.7/6.7,
#: torso 33.3/30.4, pelvis 14.2/14.6, upper arm 2.4/2.2, forearm 1.7/1.3, hand 0.6/0.5, thigh
#: 12.3/14.6, shank 4.8/4.5, foot 1.2/1.0 % male/female. The female pelvis was 14.7 here before:
#: that is the revised table of Dumas & Wojtusch (2018, "Estimation of the body segment inertial
#: parameters for the rigid body biomechanical models used in motion analysis", Handbook of Human
#: Motion), whose female upper arm and forearm (2.3, 1.4 %) differ from 2007's too. Consistent
#: with the CusToM toolbox (``WholeBodySegMass.m``, citing Dumas et al. 2007: trunk with head and
#: pelvis 54.2 %, upper limb 4.7 %, lower limb 18.3 %, male). The shoulder–elbow model does not
#: use the pelvis.
DUMAS2007_MASS_PERCENT = {
    "male": {"head_neck": 6.7, "torso": 33.3, "pelvis": 14.2, "arm": 2.4, "forearm": 1.7,
             "hand": 0.6, "thigh": 12.3, "leg": 4.8, "foot": 1.2},
    "female": {"head_neck": 6.7, "torso": 30.4, "pelvis": 14.6, "arm": 2.2, "forearm": 1.3,
               "hand": 0.5, "thigh": 14.6, "leg": 4.5, "foot": 1.0},
}

#: A whole body's share of the body mass in the table (% : head and neck, torso, pelvis, and two
#: of each limb segment): 100.2 male, 99.9 female (the table's rounding; see above).
DUMAS2007_BODY_PERCENT = {g: round(t["head_neck"] + t["torso"] + t["pelvis"] + 2 * sum(
    t[k] for k in ("arm", "forearm", "hand", "thigh", "leg", "foot")), 6)
    for g, t in DUMAS2007_MASS_PERCENT.items()}

#: Mass centres of the upper limb's segments, Dumas et al. 2007, in % of the segment length along
#: the axes (X, Y, Z) of the right side's ISB segment frame (Wu et al. 2005; X anterior, Y
#: proximal, Z to the right): upper arm from GH (length GH–EJC), forearm from the elbow joint
#: centre EJC (length EJC–WJC), hand from the wrist joint centre WJC (length: wrist to finger tip).
#: Read from HuMoD's implementation (right side; its left side mirrors Z).
DUMAS2007_COM_PERCENT = {
    "male": {"arm": (1.7, -45.2, -2.6), "forearm": (1.0, -41.7, 1.4), "hand": (3.5, -35.7, 3.2)},
    "female": {"arm": (-7.3, -45.4, -2.8), "forearm": (2.1, -41.1, 1.9), "hand": (3.3, -32.7, 2.1)},
}

#: Hand length (wrist to finger tip) per body height: Winter DA (2009) "Biomechanics and motor
#: control of human movement", Fig. 4.1, 0.108 H — what HuMoD uses for Dumas's hand length when no
#: finger landmark is measured (the shoulder–elbow model has none either).
HAND_LENGTH_PER_HEIGHT = 0.108

#: The landmarks the frames are built from: humeral head centre, lateral and medial epicondyles,
#: ulnar and radial styloids
UPPER_LIMB_LANDMARKS = ("GH", "EL", "EM", "US", "RS")


def _unit(v, what):
    n = float(np.linalg.norm(v))
    if not n > 1e-9:
        raise DataFileError(f"degenerate upper-limb landmarks: {what} has zero length")
    return np.asarray(v, float) / n


def upper_limb_frames(points: dict, hand_length: float, side: str = "r") -> dict:
    """ISB segment frames of Dumas et al. 2007 from the landmarks (one common frame, metres).

    * arm: origin GH; Y from EJC = (EL + EM)/2 to GH; Z in the plane of GH, EL, EM, ⟂ Y, towards
      the right (lateral, EM→EL, for the right arm); X = Y × Z (anterior, ⟂ that plane);
    * forearm: origin EJC; Y from WJC = (US + RS)/2 to EJC; Z in the plane of EJC, US, RS, ⟂ Y,
      towards the right (US→RS for the right arm, forearm supinated); X = Y × Z;
    * hand: origin WJC, the forearm's axes (the hand in line with the forearm: neutral wrist),
      length ``hand_length``.

    ``points``: {"GH", "EL", "EM", "US", "RS"} → (3,). ``side``: "r" or "l" (Z stays to the
    right, i.e. medial on the left).

    Returns {segment: (origin (3,), R (3, 3) with columns X, Y, Z, length m)}.

    Raises
    ------
    DataFileError for a missing landmark, coincident landmarks or a non-positive hand length.
    """
    missing = [n for n in UPPER_LIMB_LANDMARKS if n not in points]
    if missing:
        raise DataFileError(f"upper-limb landmarks missing: {', '.join(missing)}")
    if not (hand_length > 0):
        raise DataFileError(f"hand length must be positive, got {hand_length!r} m")
    p = {k: np.asarray(points[k], float).reshape(3) for k in UPPER_LIMB_LANDMARKS}
    s = 1.0 if str(side).lower().startswith("r") else -1.0
    ejc = 0.5 * (p["EL"] + p["EM"])
    wjc = 0.5 * (p["US"] + p["RS"])

    def frame(top, bottom, lateral, what):
        y = _unit(top - bottom, what)
        z = lateral - y * (lateral @ y)
        z = _unit(s * z, f"the {what} frame's medio-lateral axis")
        return np.column_stack([np.cross(y, z), y, z])
    Ra = frame(p["GH"], ejc, p["EL"] - p["EM"], "arm")
    Rf = frame(ejc, wjc, p["RS"] - p["US"], "forearm")
    return {"arm": (p["GH"], Ra, float(np.linalg.norm(p["GH"] - ejc))),
            "forearm": (ejc, Rf, float(np.linalg.norm(ejc - wjc))),
            "hand": (wjc, Rf, float(hand_length))}


def dumas_mass_centers(model: Model, gender: str, body_segments: dict, *, hand_length: float,
                       landmarks: dict | None = None, q=None, side: str = "r") -> dict:
    """Mass centres of ``model``'s bodies at Dumas et al. 2007's positions for ``gender``.

    ``body_segments``: body → tuple of Dumas segments ("arm", "forearm", "hand") the body
    carries. Bodies mapped to the same tuple form one group; the group's combined mass centre is
    put at the mean of its segments' Dumas mass centres weighted by their mass fractions
    (:data:`DUMAS2007_MASS_PERCENT`) by moving every body of the group by the same vector (in
    ground at pose ``q``): each body keeps its mass and its mass centre's offset from the other
    bodies of the group. E.g. the shoulder–elbow model's ulna and radius (which carries the hand)
    map to ("forearm", "hand"): their combined mass centre goes to the forearm and hand's Dumas
    mass centre, each body keeping its own share.

    The segment frames come from the model's landmark markers (:func:`upper_limb_frames`;
    ``landmarks`` renames: {"GH": marker name, ...}) at pose ``q`` (nq,) (default: the
    coordinates' defaults). The forearm frame depends on pronation (RS moves with the radius),
    so the pose matters for the forearm; the upper arm's does not.

    Returns {body: (3,) mass centre in the body frame, m}.

    Raises
    ------
    ModelFileError for a body or landmark marker the model lacks, or a group without mass;
    DataFileError for an unknown segment or gender, degenerate landmarks.
    """
    g = str(gender).strip().lower()
    g = {"m": "male", "man": "male", "f": "female", "woman": "female"}.get(g, g)
    if g not in DUMAS2007_COM_PERCENT:
        raise DataFileError(f"gender must be 'male'/'m' or 'female'/'f', got {gender!r}")
    names = {n: (landmarks or {}).get(n, n) for n in UPPER_LIMB_LANDMARKS}
    lacking = [f"'{m}' ({k})" for k, m in names.items() if m not in model.markers]
    if lacking:
        raise ModelFileError(f"model '{model.name}' lacks the landmark marker(s) {', '.join(lacking)} "
                             "for Dumas et al. 2007's segment frames", model.source)
    tree = compile_model(model)
    q = tree.default_q if q is None else np.asarray(q, float)
    kin = forward_kinematics(tree, q[None])
    _, P = marker_positions(tree, q[None], list(names.values()), kin=kin)
    frames = upper_limb_frames(dict(zip(names, P[0])), hand_length, side)
    zs = 1.0 if str(side).lower().startswith("r") else -1.0
    target = {}
    for seg, (o, R, L) in frames.items():
        c = np.array(DUMAS2007_COM_PERCENT[g][seg], float) / 100.0 * L
        c[2] *= zs
        target[seg] = o + R @ c
    groups: dict = {}
    for b, segs in body_segments.items():
        segs = (segs,) if isinstance(segs, str) else tuple(segs)
        if b not in model.bodies:
            raise ModelFileError(f"mass-centre map names body '{b}' that model '{model.name}' lacks",
                                 model.source)
        bad = [s for s in segs if s not in target]
        if bad or not segs:
            raise DataFileError(f"body '{b}': unknown Dumas segment(s) {bad or segs} (known: arm, "
                                "forearm, hand)")
        groups.setdefault(segs, []).append(b)
    out = {}
    for segs, bodies in groups.items():
        w = np.array([DUMAS2007_MASS_PERCENT[g][s] for s in segs], float)
        want = sum(wi * target[s] for wi, s in zip(w, segs)) / w.sum()
        poses = []
        for b in bodies:
            n = tree.body_node[tree.body_index(b)]
            poses.append((kin.R[0, n], kin.o[0, n], model.bodies[b]))
        M = sum(bd.mass for _, _, bd in poses)
        if not M > 0:
            raise ModelFileError(f"bodies {bodies} of model '{model.name}' have no mass", model.source)
        now = sum(bd.mass * (R @ np.asarray(bd.mass_center, float) + o) for R, o, bd in poses) / M
        d = want - now
        for b, (R, _, bd) in zip(bodies, poses):
            out[b] = np.asarray(bd.mass_center, float) + R.T @ d
    return out
