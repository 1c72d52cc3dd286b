"""The built-in generic shoulder–elbow model (structure of Sarshari et al. 2021, numbers from
open data).

Sarshari E, Boulanaache Y, Terrier A, Farron A, Mullhaupt P, Pioletti D (2021) "A Matlab toolbox
for scaled-generic modeling of shoulder and elbow", Sci Rep 11:20806, describes the model; its
data are not published. :func:`build_shoulder_elbow_model` keeps the paper's structure and takes
the numbers from the Dynamic Arm Simulator model DAS4 (Chadwick EK, Blana D, Kirsch RF, van den
Bogert AJ (2014) "Real-time simulation of three-dimensional shoulder girdle and arm dynamics",
IEEE Trans Biomed Eng 61(7):1947–1956; MIT licence, notice in ``data/shoulder_elbow/``), with
the corrections listed in ``data/shoulder_elbow/SOURCES.md``. The tables are derived from
``das4_v4.osim`` by ``scripts/derive_shoulder_elbow.py``; this module only assembles them (no
kinematics is computed here: the script precomputes every frame).

Model (SI units, radians; body frames are DAS4's):

* bodies ``thorax`` (welded to ground), ``clavicle``, ``scapula``, ``humerus``, ``ulna``,
  ``radius`` (the hand, DAS4's ``palm``, carpal and finger bodies at the neutral wrist, added
  by the parallel-axis theorem); the humerus's and the forearm + hand's mass centres where
  Dumas, Chèze & Verriest (2007, J Biomech 40:543–553; values as HuMoD, Wojtusch & von Stryk
  2015, implements them) put them for the generic male, from the landmarks (DAS4's masses and
  inertias; :data:`MASS_CENTER_MAP`);
* 11 coordinates: ``SC_y SC_z SC_x`` (CustomJoint ``sc``: body-fixed Y–Z–X rotations of the
  clavicle about the SC landmark), ``AC_y AC_z AC_x`` (``ac``: of the scapula about the AC
  landmark), ``GH_y GH_z GH_yy`` (Y–Z–Y about GH: as DAS4, joints ``gh1 gh2 gh3`` through
  the massless bodies ``humerus_1``, ``humerus_2``, since OpenSim rejects a CustomJoint with
  collinear axes), ``EL_x`` (``hu``: elbow flexion
  about x̂_u of Eq. 1, through HU along EM→EL) and ``PS_y`` (``ur``: pronation about ẑ_r of
  Eq. 2, through the capitulum/radial-head centre CP and US); names as DAS4's;
* two :class:`~arthron.models.model.Constraint` of type ``PointOnEllipsoidConstraint``
  (``TS_on_ribcage``, ``AI_on_ribcage``; Eq. 10) on isotropic dilations (Eq. 14) of the base
  ellipsoid, DAS4's thorax wrap ellipsoid ``serr_ant``;
* 42 muscles as groups of ``Thelen2003Muscle`` strings (DAS4 elements; subclavius from anatomy,
  optional), DAS4's wrap objects, markers for the landmarks
  IJ C7 T8 PX SC AC AA TS AI GH EL EM HU US RS CP GC, display meshes (decimated DAS4 meshes).

:func:`shoulder_elbow_info` returns the metadata studies need (:class:`ShoulderElbowInfo`).
"""
from __future__ import annotations

import csv
import json
from dataclasses import dataclass, field
from functools import lru_cache
from pathlib import Path

import numpy as np

from ..errors import OptionError
from .forces import Thelen2003Muscle
from .functions import Constant, LinearFunction, SimmSpline
from .model import (Body, Constraint, Coordinate, Geometry, GeometryPath, Joint, Marker, Model,
                    OffsetFrame, PathPoint, PathWrap, TransformAxis)
from .wrap_objects import WRAP_TYPES, WrapEllipsoid

__all__ = ["build_shoulder_elbow_model", "shoulder_elbow_info", "ShoulderElbowInfo", "DATA_DIR",
           "MESH_DIR", "load_tables", "RIBCAGE_CONSTRAINTS", "COORDINATES", "MASS_CENTER_MAP"]

#: Folder of the shipped tables (model.json, strings.csv, path_points.csv, SOURCES.md, LICENSE)
DATA_DIR = Path(__file__).resolve().parent / "data" / "shoulder_elbow"
#: Folder of the display meshes (Wavefront OBJ, metres, in the body frames)
MESH_DIR = DATA_DIR / "meshes"
#: Names of the two scapulothoracic PointOnEllipsoidConstraints (Eq. 10)
RIBCAGE_CONSTRAINTS = ("TS_on_ribcage", "AI_on_ribcage")
#: Body -> the Dumas et al. (2007) segments whose mass centre it takes (the radius carries the hand)
MASS_CENTER_MAP = {"humerus": ("arm",), "ulna": ("forearm", "hand"), "radius": ("forearm", "hand")}
#: The 11 generalized coordinates (q1..q11 of the paper, in this order)
COORDINATES = ("SC_y", "SC_z", "SC_x", "AC_y", "AC_z", "AC_x", "GH_y", "GH_z", "GH_yy", "EL_x",
               "PS_y")


@dataclass(frozen=True)
class ShoulderElbowInfo:
    """What a study needs to know about the built-in shoulder–elbow model.

    Attributes
    ----------
    muscle_groups : dict seed muscle name -> tuple of string (force) names in the model
    pcsa_cm2 : dict seed muscle -> PCSA (cm²): Σ DAS4 max_isometric_force / σ, except the
        rotator cuff (supraspinatus 20.84, infraspinatus 33.32, subscapularis 35.68, teres minor
        6.80 cm²: twice the halved values printed by Sarshari et al. 2021) and subclavius
    pcsa_source : dict seed muscle -> where its PCSA comes from
    string_pcsa_cm2 : dict string -> its share of the group's PCSA (cm², ∝ its DAS4 force)
    specific_tension : σ, N/cm² (33; each string's max_isometric_force = σ × its PCSA)
    glenohumeral_joint, cone_body : "gh3" (the joint whose child is the humerus; its reaction
        is the glenoid's force on the humerus), "scapula"
    cone_axis : (3,) unit vector in the scapula frame from the glenoid centre GC to GH (into
        the joint), the axis of the stability cone (Eq. 12)
    glenoid_center, glenohumeral_center : (3,) m in the scapula frame
    scapular_plane_normal : (3,) unit, (AA − AI) × (AA − TS) in the scapula frame (ŷ_s of
        Eq. 15 with AA in place of SN, which DAS4 lacks): the axis of inclination changes
    generic_gender, generic_height (m), generic_mass (kg), generic_glenoid_inclination_deg:
        the generic subject of Sarshari et al. 2021 (male, 1.86 m, 85.5 kg, 7°)
    generic_shoulder_width : m, AA to AA at the rest pose (twice AA's distance from the
        mid-sagittal plane x = 0 of the thorax)
    rest_pose : dict coordinate -> value (rad), the model's default pose: clavicle and scapula
        at the rest orientation of de Groot & Brand 2001, humerus aligned with the thorax,
        elbow extended; the ribcage ellipsoids are dilated to pass through TS and AI here
    ribcage_constraints : the two constraint names
    ribcage_center, ribcage_base_radii : (3,) m in the thorax frame (DAS4's ``serr_ant``)
    ribcage_dilation : dict "TS"/"AI" -> δ (m, Eq. 14)
    segment_map : body -> segments for :func:`arthron.solvers.scaling.scale_anthropometric`
        (humerus: arm, ulna and radius: forearm; the other bodies scale with body mass)
    mass_center_map : body -> Dumas et al. 2007 segments whose mass centre the body (group)
        takes (humerus: arm; ulna and radius, which carries the hand: forearm and hand), for
        ``scale_anthropometric(mass_centers=...)``; the shipped tables hold the male values
    landmarks : marker names
    """

    muscle_groups: dict
    pcsa_cm2: dict
    pcsa_source: dict
    string_pcsa_cm2: dict
    specific_tension: float
    glenohumeral_joint: str
    cone_body: str
    cone_axis: tuple
    glenoid_center: tuple
    glenohumeral_center: tuple
    scapular_plane_normal: tuple
    generic_gender: str
    generic_height: float
    generic_mass: float
    generic_glenoid_inclination_deg: float
    generic_shoulder_width: float
    rest_pose: dict
    ribcage_constraints: tuple
    ribcage_center: tuple
    ribcage_base_radii: tuple
    ribcage_dilation: dict
    segment_map: dict = field(default_factory=dict)
    landmarks: tuple = ()
    mass_center_map: dict = field(default_factory=dict)


@lru_cache(maxsize=2)
def _read_tables(folder: str) -> dict:
    d = Path(folder)
    with open(d / "model.json", encoding="utf-8") as fh:
        model = json.load(fh)
    with open(d / "strings.csv", encoding="utf-8", newline="") as fh:
        strings = list(csv.DictReader(fh))
    with open(d / "path_points.csv", encoding="utf-8", newline="") as fh:
        points = list(csv.DictReader(fh))
    return {"model": model, "strings": strings, "path_points": points}


def load_tables(folder=None) -> dict:
    """The shipped tables (parsed once and cached): ``{"model": model.json as dict, "strings":
    rows of strings.csv, "path_points": rows of path_points.csv}``. ``folder`` defaults to
    :data:`DATA_DIR`. Treat the result as read-only."""
    return _read_tables(str(Path(folder) if folder is not None else DATA_DIR))


def _v(x) -> np.ndarray:
    return np.asarray(x, float)


def _function(spec):
    t = spec["type"]
    if t == "SimmSpline":
        return SimmSpline(_v(spec["x"]), _v(spec["y"]))
    if t == "Constant":
        return Constant(float(spec["value"]))
    raise ValueError(f"unknown function type {t!r} in the shoulder–elbow tables")


def build_shoulder_elbow_model(*, subclavius: bool = True, muscles: bool = True,
                               meshes: bool = True, name: str = "shoulder_elbow",
                               tables: dict | None = None) -> Model:
    """Build the generic shoulder–elbow model (see the module docstring).

    Parameters
    ----------
    subclavius : include the subclavius (defined from anatomy, not from DAS4; see SOURCES.md)
    muscles : include the 42 (or 41) muscles as Thelen2003Muscle strings; False: skeleton,
        constraints and wrap objects only
    meshes : attach the display meshes (file names in :data:`MESH_DIR`)
    name : the model's name
    tables : tables as :func:`load_tables` returns them (default: the shipped ones)

    Returns
    -------
    Model in its rest pose (coordinate defaults; the ribcage constraints hold there to 1e-12).

    Raises
    ------
    OptionError for arguments of the wrong type or an empty name.
    """
    for k, v in (("subclavius", subclavius), ("muscles", muscles), ("meshes", meshes)):
        if not isinstance(v, (bool, np.bool_)):
            raise OptionError(f"build_shoulder_elbow_model: {k} must be True or False, got {v!r}")
    if not isinstance(name, str) or not name.strip():
        raise OptionError(f"build_shoulder_elbow_model: name must be a non-empty string, got {name!r}")
    tb = tables if tables is not None else load_tables()
    T = tb["model"]
    m = Model(name=name)
    m.credits = T["credits"]
    m.publications = T["publications"]
    m.gravity = _v(T["gravity"])
    for bn in T["body_order"]:
        b = T["bodies"][bn]
        body = Body(bn, float(b["mass"]), _v(b["mass_center"]), _v(b["inertia"]))
        if meshes:
            for mf in T["meshes"].get(bn, []):
                body.geometry.append(Geometry(f"{bn}_{Path(mf).stem}", "Mesh", mesh_file=mf))
        m.bodies[bn] = body
    for w in T["wrap_objects"]:
        w = dict(w)
        cls = WRAP_TYPES[w.pop("class")]
        for k in ("translation", "xyz_body_rotation", "radii"):
            if k in w:
                w[k] = _v(w[k])
        m.bodies[w["body"]].wrap_objects.append(cls(**w))
    rib = T["ribcage"]
    for pt in ("TS", "AI"):     # the ribcage ellipsoids as (inactive) wrap ellipsoids: display
        m.bodies["thorax"].wrap_objects.append(WrapEllipsoid(
            f"ribcage_{pt}", body="thorax", translation=_v(rib["center"]),
            xyz_body_rotation=_v(rib["orientation"]), active=False,
            radii=_v(rib["points"][pt]["radii"])))
    rest = T["rest_pose"]
    for j in T["joints"]:
        jn = j["name"]

        def frame(tag, parent, loc, ori):
            f = OffsetFrame(f"{parent}_offset", f"/jointset/{jn}/{parent}_offset",
                            "/ground" if parent == "ground" else f"/bodyset/{parent}",
                            _v(loc), _v(ori), owner=f"joint:{jn}")
            m.frames[f.path] = f
            return f.path
        pf = frame("parent", j["parent"], j["parent_location"], j["parent_orientation"])
        cf = frame("child", j["child"], j["child_location"], j["child_orientation"])
        if j["type"] == "WeldJoint":
            m.joints[jn] = Joint(jn, "WeldJoint", pf, cf)
            continue
        coords, axes = [], []
        for i, c in enumerate(j["coordinates"]):
            coords.append(Coordinate(c["name"], jn, float(rest[c["name"]]),
                                     range=tuple(float(x) for x in c["range"])))
            axes.append(TransformAxis(f"rotation{i + 1}", [c["name"]], _v(c["axis"]),
                                      LinearFunction(1.0, 0.0)))
        used = [a.axis for a in axes]
        for i in range(len(axes), 3):   # remaining rotations: constant 0 about independent axes
            ax = next(e for e in np.eye(3) if np.linalg.matrix_rank(np.array(used + [e])) == len(used) + 1)
            used.append(ax)
            axes.append(TransformAxis(f"rotation{i + 1}", [], ax, Constant(0.0)))
        axes += [TransformAxis(f"translation{i + 1}", [], np.eye(3)[i], Constant(0.0)) for i in range(3)]
        m.joints[jn] = Joint(jn, "CustomJoint", pf, cf, coords, spatial_transform=axes)
    for ln, lm in T["landmarks"].items():
        m.markers[ln] = Marker(ln, f"/bodyset/{lm['body']}", _v(lm["location"]), fixed=True)
    for pt in ("TS", "AI"):
        ref = rib["points"][pt]
        m.constraints.append(Constraint(f"{pt}_on_ribcage", "PointOnEllipsoidConstraint", {
            "socket_body": f"/bodyset/{T['landmarks'][pt]['body']}",
            "location": _v(T["landmarks"][pt]["location"]),
            "socket_ellipsoid_frame": "/bodyset/thorax", "center": _v(rib["center"]),
            "radii": _v(ref["radii"]), "orientation": _v(rib["orientation"]),
            "base_radii": _v(rib["base_radii"]), "reference_point": _v(ref["reference_point"])}))
    if muscles:
        _add_muscles(m, tb, subclavius)
    return m


def _add_muscles(m: Model, tb: dict, subclavius: bool):
    pts: dict = {}
    for r in tb["path_points"]:
        pts.setdefault(r["string"], []).append(r)
    for r in tb["strings"]:
        if r["group"] == "subclavius" and not subclavius:
            continue
        sn = r["name"]
        path = GeometryPath()
        for p in sorted(pts[sn], key=lambda p: int(p["index"])):
            loc = _v([p["x"], p["y"], p["z"]])
            extra = json.loads(p["extra"]) if p["extra"] else {}
            pp = PathPoint(f"{sn}-P{p['index']}", p["kind"], f"/bodyset/{p['body']}", loc)
            if p["kind"] == "MovingPathPoint":
                pp.location_functions = tuple(_function(f) for f in extra["functions"])
                pp.location_coordinates = tuple(extra["coordinates"])
            elif p["kind"] == "ConditionalPathPoint":
                pp.coordinate = extra["coordinate"]
                pp.range = tuple(extra["range"])
            path.points.append(pp)
        for w in filter(None, r["wraps"].split(";")):
            wn, method, r0, r1 = w.split(":")
            path.wraps.append(PathWrap(f"{sn}-wrap-{wn}", wn, method, (int(r0), int(r1))))
        m.forces[sn] = Thelen2003Muscle(
            sn, path=path, max_isometric_force=float(r["max_isometric_force"]),
            optimal_fiber_length=float(r["optimal_fiber_length"]),
            tendon_slack_length=float(r["tendon_slack_length"]),
            pennation_angle_at_optimal=float(r["pennation_angle_at_optimal"]),
            max_contraction_velocity=float(r["max_contraction_velocity"]))


def shoulder_elbow_info(*, subclavius: bool = True, tables: dict | None = None) -> ShoulderElbowInfo:
    """The metadata of :func:`build_shoulder_elbow_model` (same ``subclavius``, ``tables``)."""
    if not isinstance(subclavius, (bool, np.bool_)):
        raise OptionError(f"shoulder_elbow_info: subclavius must be True or False, got {subclavius!r}")
    tb = tables if tables is not None else load_tables()
    T = tb["model"]
    groups = [g for g in T["groups"] if subclavius or g["name"] != "subclavius"]
    sigma = float(T["specific_tension_N_per_cm2"])
    spcsa = {r["name"]: float(r["max_isometric_force"]) / sigma for r in tb["strings"]
             if subclavius or r["group"] != "subclavius"}
    gl = T["glenoid"]
    rib = T["ribcage"]
    subj = T["subject"]
    return ShoulderElbowInfo(
        muscle_groups={g["name"]: tuple(g["strings"]) for g in groups},
        pcsa_cm2={g["name"]: float(g["pcsa_cm2"]) for g in groups},
        pcsa_source={g["name"]: g["pcsa_source"] for g in groups},
        string_pcsa_cm2=spcsa, specific_tension=sigma,
        glenohumeral_joint="gh3", cone_body="scapula", cone_axis=tuple(gl["cone_axis"]),
        glenoid_center=tuple(gl["center"]), glenohumeral_center=tuple(gl["glenohumeral_center"]),
        scapular_plane_normal=tuple(gl["scapular_plane_normal"]),
        generic_gender=subj["gender"], generic_height=float(subj["height_m"]),
        generic_mass=float(subj["mass_kg"]),
        generic_glenoid_inclination_deg=float(subj["glenoid_inclination_deg"]),
        generic_shoulder_width=float(subj["shoulder_width_m"]),
        rest_pose=dict(T["rest_pose"]), ribcage_constraints=RIBCAGE_CONSTRAINTS,
        ribcage_center=tuple(rib["center"]), ribcage_base_radii=tuple(rib["base_radii"]),
        ribcage_dilation={k: float(v["delta"]) for k, v in rib["points"].items()},
        segment_map={"humerus": ("arm",), "ulna": ("forearm",), "radius": ("forearm",)},
        landmarks=tuple(T["landmarks"]), mass_center_map=dict(MASS_CENTER_MAP))
