#!/usr/bin/env python
"""Derive the built-in shoulder–elbow model's tables from DAS4.

Reads ``das4_v4.osim`` (Dynamic Arm Simulator; Chadwick, Blana, Kirsch & van den Bogert 2014,
IEEE TBME 61(7):1947–1956; MIT licence) and writes, under
``src/arthron/models/data/shoulder_elbow/``: ``model.json`` (bodies, joints, landmarks, ribcage
ellipsoids, wrap objects, muscle groups, generic subject, glenoid), ``strings.csv`` (one row
per muscle string), ``path_points.csv``, ``meshes/*.obj`` (decimated display meshes in the body
frames), ``LICENSE-DAS4.txt`` and ``SOURCES.md``. Every correction to DAS4 is applied here (see
SOURCES.md); :mod:`arthron.models.shoulder_elbow` only assembles the tables.

    python scripts/derive_shoulder_elbow.py [--das4 PATH] [--out DIR]

``derive(das4)`` returns ``{relative file name: bytes}`` (the test compares it with the shipped
files).
"""
from __future__ import annotations

import argparse
import csv
import io
import json
import math
from pathlib import Path

import numpy as np

from arthron.geometry.spatial import rotation_xyz, xyz_from_matrix
from arthron.io.osim import read_osim
from arthron.models.shoulder_elbow import MASS_CENTER_MAP, build_shoulder_elbow_model
from arthron.multibody.constraints import assemble
from arthron.multibody.kinematics import compile_model, forward_kinematics, marker_positions
from arthron.solvers.dumas2007 import DUMAS2007_COM_PERCENT, HAND_LENGTH_PER_HEIGHT, dumas_mass_centers
from arthron.solvers.scaling import ellipsoid_dilation

REPO = Path(__file__).resolve().parents[1]
DAS4 = REPO.parent / "shared" / "data" / "arm-model" / "das4_v4.osim"
OUT = REPO / "src" / "arthron" / "models" / "data" / "shoulder_elbow"

SIGMA = 33.0                       # N/cm², specific tension (convention stated in SOURCES.md)
#: rotator cuff PCSAs (cm²): twice the halved values printed by Sarshari et al. 2021
ROTATOR_CUFF = {"supraspinatus": 20.84, "infraspinatus": 33.32, "subscapularis": 35.68,
                "teres_minor": 6.80}
#: isotropic dilations (m) of the base ellipsoid at the Delft model's rest pose, as quoted in
#: arthron's design notes (docs/shoulder-elbow.md): the rest pose is solved to have them
DELFT_REST_DILATION = {"TS": 0.0388, "AI": 0.0268}
SUBCLAVIUS_PCSA = 4.4              # cm², Garner & Pandy 2001 (as quoted in the design notes)
#: de Groot & Brand 2001 rest orientation (deg): clavicle and scapula, thorax-based Y-Z-X
C0 = (-28.573, 11.680, 7.482)
S0 = (32.047, 10.669, -10.320)

BODIES = {"thorax": "thorax", "clavicle": "clavicle_r", "scapula": "scapula_r",
          "humerus": "humerus_r", "ulna": "ulna_r", "radius": "radius_r"}
HAND = ("proximal_row", "palm", "firstmc1", "firstmc", "proximal_thumb", "distal_thumb",
        "2proxph", "2midph", "2distph", "3proxph", "3midph", "3distph", "4proxph", "4midph",
        "4distph", "5proxph", "5midph", "5distph")
#: (mesh file in DAS4's Geometry, DAS4 frame it is attached to, body, shipped name, target faces)
MESHES = (("ground_ribs.vtp", "/bodyset/thorax/thorax_geom_frame_1", "thorax", "thorax_ribs.obj", 1400),
          ("ground_spine.vtp", "/bodyset/thorax/thorax_geom_frame_2", "thorax", "thorax_spine.obj", 1000),
          ("rclavicle.vtp", "/bodyset/clavicle_r", "clavicle", "clavicle.obj", None),
          ("rscapula.vtp", "/bodyset/scapula_r", "scapula", "scapula.obj", 1000),
          ("rhumerus.vtp", "/bodyset/humerus_r", "humerus", "humerus.obj", None),
          ("rulna.vtp", "/bodyset/ulna_r/ulna_r_geom_frame_1", "ulna", "ulna.obj", None),
          ("rradius.vtp", "/bodyset/radius_r/radius_r_geom_frame_1", "radius", "radius.obj", None))


def _das4_names(base, lo, hi):
    return [f"{base}_{i}" if i < 10 else f"{base}{i}" for i in range(lo, hi + 1)]


#: seed muscle -> DAS4 elements (the design notes' table; subclavius from anatomy)
GROUPS = [
    ("subclavius", ["subclavius"]),
    ("serratus_anterior_superior", _das4_names("serr_ant", 9, 12)),
    ("serratus_anterior_middle", _das4_names("serr_ant", 7, 8)),
    ("serratus_anterior_inferior", _das4_names("serr_ant", 1, 6)),
    ("trapezius_C1_C6", _das4_names("trap_clav", 1, 2)),
    ("trapezius_C7", _das4_names("trap_scap", 1, 2)),
    ("trapezius_T1", _das4_names("trap_scap", 3, 5)),
    ("trapezius_T2_T7", _das4_names("trap_scap", 6, 11)),
    ("levator_scapulae", _das4_names("lev_scap", 1, 2)),
    ("rhomboid_minor", _das4_names("rhomboid", 1, 2)),
    ("rhomboid_major_T1_T2", _das4_names("rhomboid", 3, 4)),
    ("rhomboid_major_T3_T4", _das4_names("rhomboid", 5, 5)),
    ("pectoralis_minor", _das4_names("pect_min", 1, 4)),
    ("pectoralis_major_clavicular", _das4_names("pect_maj_c", 1, 2)),
    ("pectoralis_major_sternal", _das4_names("pect_maj_t", 4, 6)),
    ("pectoralis_major_ribs", _das4_names("pect_maj_t", 1, 3)),
    ("latissimus_dorsi_thoracic", _das4_names("lat_dorsi", 1, 2)),
    ("latissimus_dorsi_lumbar", _das4_names("lat_dorsi", 3, 4)),
    ("latissimus_dorsi_iliac", _das4_names("lat_dorsi", 5, 6)),
    ("deltoid_clavicular", _das4_names("delt_clav", 1, 4)),
    ("deltoid_acromial", _das4_names("delt_scap", 4, 11)),
    ("deltoid_scapular", _das4_names("delt_scap", 1, 3)),
    ("supraspinatus", _das4_names("supra", 1, 4)),
    ("infraspinatus", _das4_names("infra", 1, 6)),
    ("subscapularis", _das4_names("subscap", 1, 11)),
    ("teres_minor", _das4_names("ter_min", 1, 3)),
    ("teres_major", _das4_names("ter_maj", 1, 4)),
    ("coracobrachialis", _das4_names("coracobr", 1, 3)),
    ("triceps_long", _das4_names("tric_long", 1, 4)),
    ("triceps_medial", _das4_names("tric_med", 1, 5)),
    ("triceps_lateral", _das4_names("tric_lat", 1, 5)),
    ("biceps_short", _das4_names("bic_b", 1, 2)),
    ("biceps_long", ["bic_l"]),
    ("brachialis", _das4_names("brachialis", 1, 7)),
    ("brachioradialis", _das4_names("brachiorad", 1, 3)),
    ("supinator", _das4_names("supinator", 1, 5)),
    ("pronator_teres", _das4_names("pron_teres", 1, 2)),
    ("flexor_carpi_radialis", ["FCR"]),
    ("flexor_carpi_ulnaris", ["FCU"]),
    ("extensor_carpi_radialis_longus", ["ECRL"]),
    ("extensor_carpi_radialis_brevis", ["ECRB"]),
    ("extensor_carpi_ulnaris", ["ECU"]),
]


def _r(x, nd=10):
    """Round for the tables (1e-10 m; stable across BLAS builds)."""
    if isinstance(x, (list, tuple, np.ndarray)):
        return [_r(v, nd) for v in np.asarray(x, float).tolist()]
    v = round(float(x), nd)
    return 0.0 if v == 0 else v


def _unit(v):
    v = np.asarray(v, float)
    return v / np.linalg.norm(v)


class _Das4:
    """DAS4 read, its default pose (wrist couplers assembled) and body poses there."""

    def __init__(self, path: Path):
        self.path = Path(path)
        self.m = read_osim(self.path)
        self.tree = compile_model(self.m)
        self.q = assemble(self.m, self.tree, self.tree.default_q[None])[0]
        self.kin = forward_kinematics(self.tree, self.q[None])

    def pose(self, body):
        n = self.tree.body_node[self.tree.body_index(body)]
        return self.kin.R[0, n], self.kin.o[0, n]

    def world(self, body, p):
        R, o = self.pose(body)
        return R @ np.asarray(p, float) + o

    def local(self, body, p):
        R, o = self.pose(body)
        return R.T @ (np.asarray(p, float) - o)

    def marker(self, name):
        return np.asarray(self.m.markers[name].location, float)

    def frame(self, path):
        """(DAS4 body name, transform of the frame in that body)."""
        b, X = self.m.frame_in_base(path)
        return b.rsplit("/", 1)[-1], X


def _ry(a):
    return rotation_xyz([0.0, a, 0.0])


def _rz(a):
    return rotation_xyz([0.0, 0.0, a])


def _rx(a):
    return rotation_xyz([a, 0.0, 0.0])


def _yzx(R):
    """Angles (a, b, c) with R = Ry(a) Rz(b) Rx(c)."""
    return np.array([math.atan2(-R[2, 0], R[0, 0]), math.asin(max(-1.0, min(1.0, R[1, 0]))),
                     math.atan2(-R[1, 2], R[1, 1])])


def _yzy(R):
    """Angles (a, b, c) with R = Ry(a) Rz(b) Ry(c): of the two solutions (b and −b) the one
    with the smaller |a| + |c|."""
    b = math.acos(max(-1.0, min(1.0, R[1, 1])))
    a = math.atan2(R[2, 1], -R[0, 1])
    c = math.atan2(R[1, 2], R[1, 0])
    w = lambda x: (x + math.pi) % (2 * math.pi) - math.pi   # noqa: E731
    alt = (w(a + math.pi), -b, w(c + math.pi))
    return np.array(min(((a, b, c), alt), key=lambda t: abs(t[0]) + abs(t[2])))


def _landmarks(d: _Das4) -> dict:
    aa = d.marker("AA")
    L = {}
    for n in ("IJ", "C7", "T8", "PX"):
        L[n] = ("thorax", d.marker(n), f"DAS4 marker {n}")
    L["SC"] = ("clavicle", d.marker("SC"), "DAS4 marker SC")
    for n in ("AC", "AA", "TS", "AI"):
        L[n] = ("scapula", d.marker(n) - aa,
                f"DAS4 marker {n} minus DAS4 marker AA (the scapular markers sit a constant offset "
                "from the bony landmarks; the scapula frame's origin is the acromial angle)")
    L["GH"] = ("humerus", d.marker("GH"), "DAS4 marker GH (humeral head centre)")
    L["EL"] = ("humerus", d.marker("EL"), "DAS4 marker EL")
    L["EM"] = ("humerus", d.marker("EM"), "DAS4 marker EM")
    L["HU"] = ("humerus", 0.5 * (d.marker("EL") + d.marker("EM")),
               "midpoint of EL and EM (Sarshari et al. 2021; DAS4 marker mid_elbow)")
    L["US"] = ("ulna", d.marker("US"), "DAS4 marker US")
    L["RS"] = ("radius", d.marker("RS"), "DAS4 marker RS")
    L["CP"] = ("ulna", np.asarray(d.m.frames["/jointset/ur/ulna_r_offset"].translation, float),
               "centre of the radial head against the capitulum: DAS4 joint 'ur' location in "
               "ulna_r (DAS4's pronation axis passes through it and US)")
    return L


def _glenoid_center(d: _Das4, gh_s) -> tuple:
    """Glenoid centre on the scapula mesh: centroid of the vertices within 4 mm of the
    nearest approach of the mesh to GH (the glenoid fossa's deepest region)."""
    import pyvista as pv
    mesh = pv.read(str(d.path.parent / "Geometry" / "rscapula.vtp"))
    V = np.asarray(mesh.points, float)
    dist = np.linalg.norm(V - gh_s, axis=1)
    sel = V[dist < dist.min() + 0.004]
    return sel.mean(axis=0), int(len(sel))


def _hand_into_radius(d: _Das4) -> dict:
    """Radius + hand bodies at the neutral wrist: mass, mass centre and inertia about it in the
    radius frame (parallel-axis theorem). DAS4's hand bodies carry a negative third principal
    moment (unphysical; a sign slip of a mirrored conversion): its absolute value is used."""
    Rr, orr = d.pose("radius_r")
    parts = [("radius_r", d.m.bodies["radius_r"])] + [(n, d.m.bodies[n]) for n in HAND]
    M = 0.0
    c = np.zeros(3)
    for n, b in parts:
        R, o = d.pose(n)
        M += b.mass
        c += b.mass * (Rr.T @ (R @ b.mass_center + o - orr))
    c /= M
    I = np.zeros((3, 3))
    for n, b in parts:
        R, o = d.pose(n)
        Ib = np.array(b.inertia, float)
        Ib[np.diag_indices(3)] = np.abs(np.diag(Ib))
        Rb = Rr.T @ R
        r = Rr.T @ (R @ b.mass_center + o - orr) - c
        I += Rb @ Ib @ Rb.T + b.mass * (r @ r * np.eye(3) - np.outer(r, r))
    hand_mass = float(sum(b.mass for n, b in parts[1:]))
    return {"mass": M, "mass_center": c, "inertia": I, "hand_mass": hand_mass}


def _joints(d: _Das4, L: dict) -> list:
    rng = {c.name: [float(c.range[0]), float(c.range[1])] for c in d.m.coordinates.values()}
    J = [{"name": "ground_thorax", "type": "WeldJoint", "parent": "ground", "child": "thorax",
          "parent_location": [0, 0, 0], "parent_orientation": [0, 0, 0],
          "child_location": [0, 0, 0], "child_orientation": [0, 0, 0],
          "source": "DAS4 joint 'base' at zero (thorax fixed)"}]
    def about_landmark(name, parent, child, das_parent, das_child, lm, coords, joints, frame):
        """DAS4's three one-axis joints of a shoulder joint as one CustomJoint rotating about
        the landmark ``lm`` (its location in the child, DAS4's child frame ``das_child``)."""
        c_loc = L[lm][1]
        return {"name": name, "type": "CustomJoint", "parent": parent, "child": child,
                "parent_location": d.local(das_parent, d.world(das_child, c_loc)),
                "parent_orientation": [0, 0, 0], "child_location": c_loc,
                "child_orientation": [0, 0, 0],
                "coordinates": [{"name": n, "axis": a, "range": rng[n]} for n, a in
                                zip(coords, ([0, 1, 0], [0, 0, 1], [1, 0, 0]))],
                "source": f"DAS4 joints {joints} (same axes and angles), rotating about the {lm} "
                          f"landmark instead of the {frame} frame origin; the {frame} coincides "
                          f"with DAS4's at DAS4's default pose"}

    J.append(about_landmark("sc", "thorax", "clavicle", "thorax", "clavicle_r", "SC",
                            ("SC_y", "SC_z", "SC_x"), "sc1-sc3", "clavicle"))
    J.append(about_landmark("ac", "clavicle", "scapula", "clavicle_r", "scapula_r", "AC",
                            ("AC_y", "AC_z", "AC_x"), "ac1-ac3", "scapula"))
    gh = np.asarray(d.m.frames["/jointset/gh1/scapula_r_offset"].translation, float)
    # OpenSim rejects a CustomJoint with collinear rotation axes (Y-Z-Y): as DAS4, a chain of
    # three one-axis joints through two massless bodies at GH
    chain = (("gh1", "scapula", "humerus_1", "GH_y", [0, 1, 0], gh),
             ("gh2", "humerus_1", "humerus_2", "GH_z", [0, 0, 1], [0, 0, 0]),
             ("gh3", "humerus_2", "humerus", "GH_yy", [0, 1, 0], [0, 0, 0]))
    for jn, par, ch, cn, ax, loc in chain:
        J.append({"name": jn, "type": "CustomJoint", "parent": par, "child": ch,
                  "parent_location": loc, "parent_orientation": [0, 0, 0],
                  "child_location": [0, 0, 0], "child_orientation": [0, 0, 0],
                  "coordinates": [{"name": cn, "axis": ax, "range": rng[cn]}],
                  "source": f"DAS4 joint {jn} (Y-Z-Y about GH through massless bodies)"})
    # elbow flexion: Eq. 1 frame at DAS4's default pose (EL_x = PS_y = 0)
    W = {n: d.world({"humerus": "humerus_r", "ulna": "ulna_r", "radius": "radius_r",
                     "scapula": "scapula_r", "clavicle": "clavicle_r", "thorax": "thorax"}[b], p)
         for n, (b, p, _) in L.items()}
    x = _unit(W["EL"] - W["HU"])
    y = _unit(np.cross(W["US"] - W["EL"], W["EM"] - W["EL"]))
    Ru = np.column_stack([x, y, np.cross(x, y)])
    Rh, _ = d.pose("humerus_r")
    Rul, _ = d.pose("ulna_r")
    J.append({"name": "hu", "type": "CustomJoint", "parent": "humerus", "child": "ulna",
              "parent_location": L["HU"][1], "parent_orientation": xyz_from_matrix(Rh.T @ Ru),
              "child_location": d.local("ulna_r", W["HU"]),
              "child_orientation": xyz_from_matrix(Rul.T @ Ru),
              "coordinates": [{"name": "EL_x", "axis": [1, 0, 0], "range": rng["EL_x"]}],
              "source": "Sarshari et al. 2021 Eqs. 1, 3, 4: ulna frame from EL, EM, HU (humerus) "
                        "and US (ulna) at DAS4's default pose; flexion about its x axis"})
    z = _unit(W["CP"] - W["US"])
    y = _unit(np.cross(W["CP"] - W["RS"], W["RS"] - W["US"]))
    Rr_ = np.column_stack([np.cross(y, z), y, z])
    Rra, _ = d.pose("radius_r")
    J.append({"name": "ur", "type": "CustomJoint", "parent": "ulna", "child": "radius",
              "parent_location": L["CP"][1], "parent_orientation": xyz_from_matrix(Rul.T @ Rr_),
              "child_location": d.local("radius_r", W["CP"]),
              "child_orientation": xyz_from_matrix(Rra.T @ Rr_),
              "coordinates": [{"name": "PS_y", "axis": [0, 0, 1], "range": rng["PS_y"]}],
              "source": "Sarshari et al. 2021 Eqs. 2-4 with the capitulum/radial-head centre CP "
                        "(on the ulna) in place of EL: radius frame from CP, US (ulna) and RS "
                        "(radius) at DAS4's default pose; pronation about its z axis (CP->US "
                        "reversed), which is DAS4's pronation axis"})
    for j in J:
        for k in ("parent_location", "parent_orientation", "child_location", "child_orientation"):
            j[k] = _r(j[k])
    return J


def _wrap_dict(w, body, X=None) -> dict:
    """A DAS4 wrap object as a table row (moved into ``body`` by the transform X if given)."""
    t = np.asarray(w.translation, float)
    R = rotation_xyz(np.asarray(w.xyz_body_rotation, float))
    if X is not None:
        t = X.R @ t + X.p
        R = X.R @ R
    out = {"class": w.type, "name": w.name, "body": body, "translation": _r(t),
           "xyz_body_rotation": _r(xyz_from_matrix(R)), "quadrant": w.quadrant,
           "active": bool(w.active)}
    for k in w.dimension_fields:
        k = "radii" if k == "dimensions" else k
        v = getattr(w, k)
        out[k] = _r(v) if np.ndim(v) else _r(float(v))
    return out


def _function_spec(f):
    if type(f).__name__ == "SimmSpline":
        return {"type": "SimmSpline", "x": _r(f.x), "y": _r(f.y)}
    if type(f).__name__ == "Constant":
        return {"type": "Constant", "value": _r(f.value)}
    raise ValueError(f"unsupported function {type(f).__name__}")


def _hand_transform(d: _Das4, body):
    """Transform (R, p) taking a point of DAS4 hand body ``body`` into the radius frame at the
    neutral wrist."""
    from arthron.models.model import Transform
    Rr, orr = d.pose("radius_r")
    R, o = d.pose(body)
    return Transform(Rr.T @ R, Rr.T @ (o - orr))


def _muscles(d: _Das4, L: dict, clav_sc_t, rest_len_fn):
    inv = {v: k for k, v in BODIES.items()}
    strings, points, wraps_used = [], [], {}
    for g, names in GROUPS:
        if g == "subclavius":
            continue
        for n in names:
            f = d.m.forces[n]
            for i, p in enumerate(f.path.points, start=1):
                db = p.parent_frame.rsplit("/", 1)[-1]
                loc = np.asarray(p.location, float)
                extra = ""
                kind = p.kind
                if db in HAND:
                    X = _hand_transform(d, db)
                    loc = X.apply(loc)
                    db = "radius_r"
                    if kind != "PathPoint":
                        raise ValueError(f"{n}: moving/conditional point on the hand")
                if kind == "MovingPathPoint":
                    extra = json.dumps({"coordinates": list(p.location_coordinates),
                                        "functions": [_function_spec(fn) for fn in p.location_functions]},
                                       sort_keys=True)
                elif kind == "ConditionalPathPoint":
                    extra = json.dumps({"coordinate": p.coordinate, "range": _r(p.range)}, sort_keys=True)
                points.append({"string": n, "index": i, "kind": kind, "body": inv[db],
                               "x": _r(loc[0]), "y": _r(loc[1]), "z": _r(loc[2]), "extra": extra})
            ws = []
            for w in f.path.wraps:
                ws.append(f"{w.wrap_object}:{w.method}:{w.range[0]}:{w.range[1]}")
                wraps_used[w.wrap_object] = True
            strings.append({"name": n, "group": g, "das4_max_isometric_force": _r(f.max_isometric_force),
                            "optimal_fiber_length": _r(f.optimal_fiber_length),
                            "tendon_slack_length": _r(f.tendon_slack_length),
                            "pennation_angle_at_optimal": _r(f.pennation_angle_at_optimal),
                            "max_contraction_velocity": _r(f.max_contraction_velocity),
                            "wraps": ";".join(ws)})
    return strings, points, wraps_used


def _wrap_objects(d: _Das4, used: dict) -> list:
    inv = {v: k for k, v in BODIES.items()}
    out = []
    for b in d.m.bodies.values():
        for w in b.wrap_objects:
            if w.name not in used:
                continue
            if b.name in HAND:
                out.append(_wrap_dict(w, "radius", _hand_transform(d, b.name)))
            else:
                out.append(_wrap_dict(w, inv[b.name]))
    return out


def _rib_fit(d: _Das4) -> dict:
    """Cross-check (not used by the model): the axis-aligned ellipsoid fitted by least squares
    to DAS4's ribcage mesh in the thorax frame, centre held on the mid-sagittal plane."""
    import pyvista as pv
    from arthron.geometry.ellipsoid_fit import fit_ellipsoid
    _, X = d.frame("/bodyset/thorax/thorax_geom_frame_1")
    V = np.asarray(pv.read(str(d.path.parent / "Geometry" / "ground_ribs.vtp")).points, float)
    f = fit_ellipsoid(V @ X.R.T + X.p, fixed_center=[(0, 0.0)])
    return {"center": _r(f["center"], 6), "radii": _r(f["radii"], 6), "rms": _r(f["rms"], 6),
            "source": "arthron.geometry.ellipsoid_fit.fit_ellipsoid on DAS4 Geometry/ground_ribs.vtp "
                      "(all ribs; radial distance); a cross-check of the base ellipsoid, not used"}


def _obj_text(V, F) -> bytes:
    lines = ["# decimated from DAS4 (MIT licence, see LICENSE-DAS4.txt); metres, body frame"]
    lines += [f"v {x:.5f} {y:.5f} {z:.5f}" for x, y, z in V]
    lines += [f"f {a + 1} {b + 1} {c + 1}" for a, b, c in F]
    return ("\n".join(lines) + "\n").encode()


def _meshes(d: _Das4) -> dict:
    import pyvista as pv
    out = {}
    for src, frame, body, name, target in MESHES:
        mesh = pv.read(str(d.path.parent / "Geometry" / src)).triangulate().clean()
        if target is not None and mesh.n_cells > target:
            mesh = mesh.decimate(1.0 - target / mesh.n_cells).clean()
        _, X = d.frame(frame)
        V = np.asarray(mesh.points, float) @ X.R.T + X.p
        F = np.asarray(mesh.faces).reshape(-1, 4)[:, 1:]
        out[f"meshes/{name}"] = _obj_text(V, F)
    return out


def _csv(rows, cols) -> bytes:
    buf = io.StringIO()
    w = csv.DictWriter(buf, fieldnames=cols, lineterminator="\n")
    w.writeheader()
    for r in rows:
        w.writerow({k: (repr(v) if isinstance(v, float) else v) for k, v in r.items()})
    return buf.getvalue().encode()


def derive(das4=DAS4, *, meshes: bool = True) -> dict:
    """All shipped files derived from ``das4`` as ``{relative name: bytes}``."""
    d = _Das4(Path(das4))
    L = _landmarks(d)
    hand = _hand_into_radius(d)
    bodies = {}
    for bn, db in BODIES.items():
        b = d.m.bodies[db]
        if bn == "radius":
            bodies[bn] = {"mass": _r(hand["mass"]), "mass_center": _r(hand["mass_center"]),
                          "inertia": [_r(r) for r in hand["inertia"]],
                          "source": f"DAS4 radius_r plus the hand ({', '.join(HAND)}; "
                                    f"{hand['hand_mass']:.5f} kg) at DAS4's default (neutral) "
                                    "wrist, parallel-axis theorem; the hand bodies' negative "
                                    "third moments taken as positive"}
        else:
            bodies[bn] = {"mass": _r(b.mass), "mass_center": _r(b.mass_center),
                          "inertia": [_r(r) for r in np.asarray(b.inertia, float)],
                          "source": f"DAS4 body {db}"}
    for bn in ("humerus_1", "humerus_2"):
        bodies[bn] = {"mass": 0.0, "mass_center": [0.0, 0.0, 0.0], "inertia": [[0.0] * 3] * 3,
                      "source": f"DAS4 massless body {bn} (glenohumeral rotation chain)"}
    joints = _joints(d, L)
    gh_s = np.asarray(d.m.frames["/jointset/gh1/scapula_r_offset"].translation, float)
    gc, nsel = _glenoid_center(d, gh_s)
    L["GC"] = ("scapula", gc, f"glenoid centre: centroid of the {nsel} vertices of DAS4's "
                              "rscapula.vtp within 4 mm of its nearest approach to GH")
    strings, points, used = _muscles(d, L, None, None)
    wraps = _wrap_objects(d, used)
    serr = next(w for w in d.m.bodies["thorax"].wrap_objects if w.name == "serr_ant")
    center = np.asarray(serr.translation, float)
    base = np.asarray(serr.radii, float)
    # rest pose: de Groot & Brand 2001 rest orientation of clavicle and scapula; humerus along
    # the thorax axes; elbow as DAS4's default
    Rc = _ry(math.radians(C0[0])) @ _rz(math.radians(C0[1])) @ _rx(math.radians(C0[2]))
    Rs = _ry(math.radians(S0[0])) @ _rz(math.radians(S0[1])) @ _rx(math.radians(S0[2]))
    ac = _yzx(Rc.T @ Rs)
    gh = _yzy(Rs.T)
    rest = {"SC_y": math.radians(C0[0]), "SC_z": math.radians(C0[1]), "SC_x": math.radians(C0[2]),
            "AC_y": ac[0], "AC_z": ac[1], "AC_x": ac[2], "GH_y": gh[0], "GH_z": gh[1], "GH_yy": gh[2],
            "EL_x": 0.0, "PS_y": 0.0}
    rest = {k: _r(v) for k, v in rest.items()}
    groups = []
    by_name = {s["name"]: s for s in strings}
    for g, names in GROUPS:
        if g == "subclavius":
            groups.append({"name": g, "strings": names, "pcsa_cm2": SUBCLAVIUS_PCSA,
                           "pcsa_source": "Garner & Pandy 2001 (about 4.4 cm², as quoted in "
                                          "arthron's design notes; not verified against the paper)",
                           "das4_max_isometric_force": None})
            continue
        F = sum(by_name[n]["das4_max_isometric_force"] for n in names)
        if g in ROTATOR_CUFF:
            pcsa, src = ROTATOR_CUFF[g], ("Sarshari et al. 2021 (twice the PCSA printed after "
                                          "their 50 % reduction)")
        else:
            pcsa, src = F / SIGMA, "sum of DAS4 max_isometric_force / 33 N/cm²"
        groups.append({"name": g, "strings": names, "pcsa_cm2": _r(pcsa, 12), "pcsa_source": src,
                       "das4_max_isometric_force": _r(F)})
        for n in names:
            by_name[n]["max_isometric_force"] = _r(SIGMA * pcsa * by_name[n]["das4_max_isometric_force"] / F)
    T = {
        "format": 1,
        "about": "Tables of arthron's built-in shoulder-elbow model (structure: Sarshari et al. "
                 "2021, Sci Rep 11:20806). Derived from DAS4 (das4_v4.osim; Chadwick, Blana, "
                 "Kirsch & van den Bogert 2014, IEEE TBME 61(7):1947-1956; MIT licence, see "
                 "LICENSE-DAS4.txt) by scripts/derive_shoulder_elbow.py. SI units, radians, "
                 "DAS4 body frames (thorax: x right, y up, z posterior). See SOURCES.md.",
        "credits": "arthron's built-in shoulder-elbow model after Sarshari et al. 2021, built from "
                   "DAS4 (Copyright (c) 2020 Aberdeen Biomechanics & Biomedical Engineering, MIT "
                   "licence) with corrections; see arthron/models/data/shoulder_elbow/SOURCES.md",
        "publications": "Sarshari E et al. (2021) A Matlab toolbox for scaled-generic modeling of "
                        "shoulder and elbow. Sci Rep 11:20806. Chadwick EK, Blana D, Kirsch RF, "
                        "van den Bogert AJ (2014) Real-time simulation of three-dimensional "
                        "shoulder girdle and arm dynamics. IEEE TBME 61(7):1947-1956.",
        "gravity": _r(d.m.gravity),
        "bodies": bodies,
        "meshes": {b: [n for _, _, bb, n, _ in MESHES if bb == b] for b in BODIES},
        "body_order": ["thorax", "clavicle", "scapula", "humerus_1", "humerus_2", "humerus",
                       "ulna", "radius"],
        "landmarks": {n: {"body": b, "location": _r(p), "source": s} for n, (b, p, s) in L.items()},
        "joints": joints,
        "rest_pose": rest,
        "rest_pose_source": "SC and AC coordinates: closest (unit weights) to de Groot & Brand 2001 "
                            "(Clin Biomech 16(9):735-743) rest orientation C0, S0 (thorax-based "
                            "Y-Z-X) with TS and AI on the base ellipsoid dilated by 38.8 and "
                            "26.8 mm (the Delft model's rest dilations as quoted in arthron's "
                            "design notes), Eq. 10 solved by assembly; humerus aligned with the "
                            "thorax; elbow at DAS4's default (extended, EL_x = PS_y = 0)",
        "ribcage": {"frame": "thorax", "center": _r(center), "base_radii": _r(base),
                    "orientation": [0.0, 0.0, 0.0], "points": {},
                    "source": "base ellipsoid: DAS4 thorax WrapEllipsoid 'serr_ant'; dilations "
                              "by Sarshari et al. 2021 Eq. 14 (isotropic, through TS and AI at "
                              "the rest pose)"},
        "wrap_objects": wraps,
        "specific_tension_N_per_cm2": SIGMA,
        "groups": groups,
        "subject": {"gender": "male", "height_m": 1.86, "mass_kg": 85.5,
                    "glenoid_inclination_deg": 7.0, "shoulder_width_m": None,
                    "source": "Sarshari et al. 2021 (generic subject; generic glenoid inclination); "
                              "shoulder width: AA to AA of this model at the rest pose"},
        "glenoid": {},
    }
    for p in ("TS", "AI"):
        T["ribcage"]["points"][p] = {"delta": 0.0, "radii": _r(base), "reference_point": [0.0, 0.0, 0.0]}
    # subclavius from anatomy (first rib at its costal cartilage -> subclavian groove on the
    # inferior surface of the clavicle's middle third)
    sc_c = L["SC"][1]
    ac_c = np.asarray(next(j for j in joints if j["name"] == "ac")["parent_location"], float)
    sc_t = np.asarray(next(j for j in joints if j["name"] == "sc")["parent_location"], float)
    origin = sc_t + np.array([0.020, -0.025, -0.005])
    insertion = sc_c + 0.5 * (ac_c - sc_c) + np.array([0.0, -0.008, 0.0])
    points.append({"string": "subclavius", "index": 1, "kind": "PathPoint", "body": "thorax",
                   "x": _r(origin[0]), "y": _r(origin[1]), "z": _r(origin[2]), "extra": ""})
    points.append({"string": "subclavius", "index": 2, "kind": "PathPoint", "body": "clavicle",
                   "x": _r(insertion[0]), "y": _r(insertion[1]), "z": _r(insertion[2]), "extra": ""})
    strings.insert(0, {"name": "subclavius", "group": "subclavius", "das4_max_isometric_force": "",
                       "max_isometric_force": _r(SIGMA * SUBCLAVIUS_PCSA),
                       "optimal_fiber_length": 0.0, "tendon_slack_length": 0.0,
                       "pennation_angle_at_optimal": 0.0, "max_contraction_velocity": 10.0,
                       "wraps": ""})
    tables = {"model": T, "strings": [{k: str(v) for k, v in s.items()} for s in strings],
              "path_points": [{k: str(v) for k, v in p.items()} for p in points]}
    # the rest pose: the coordinates closest to de Groot & Brand's rest orientation with TS and
    # AI on the base ellipsoid dilated by the Delft model's rest dilations (Eq. 10 solved by
    # assembly); then Eq. 14 at that pose gives the dilations back (a consistency check)
    for p in ("TS", "AI"):
        T["ribcage"]["points"][p]["radii"] = _r(base + DELFT_REST_DILATION[p])
    sk = build_shoulder_elbow_model(tables=_as_read(tables), meshes=False)
    tree = compile_model(sk)
    q0 = np.array([rest[c] for c in sk.coordinates])
    q = assemble(sk, tree, q0[None], tol=1e-13)[0]
    cn = list(sk.coordinates)
    Rc = _ry(q[0]) @ _rz(q[1]) @ _rx(q[2])
    Rs = Rc @ _ry(q[3]) @ _rz(q[4]) @ _rx(q[5])
    q[[cn.index("GH_y"), cn.index("GH_z"), cn.index("GH_yy")]] = _yzy(Rs.T)
    rest = {c: _r(v, 15) for c, v in zip(cn, q)}
    T["rest_pose"] = rest
    q = np.array([rest[c] for c in cn])
    names, P = marker_positions(tree, q[None])
    M = dict(zip(names, P[0]))
    for p in ("TS", "AI"):
        delta = ellipsoid_dilation(base, M[p] - center)
        T["ribcage"]["points"][p] = {"delta": _r(delta, 15), "radii": _r(base + delta, 15),
                                     "reference_point": _r(M[p], 15)}
    T["ribcage"]["fit_to_ribs"] = _rib_fit(d)
    T["subject"]["shoulder_width_m"] = _r(2.0 * abs(M["AA"][0]))
    _dumas_mass_centers(T, sk)
    kin = forward_kinematics(tree, q[None])
    n = tree.body_node[tree.body_index("clavicle")]
    ins_w = kin.R[0, n] @ insertion + kin.o[0, n]
    L_sub = float(np.linalg.norm(ins_w - origin))
    strings[0]["optimal_fiber_length"] = _r(0.6 * L_sub)
    strings[0]["tendon_slack_length"] = _r(0.4 * L_sub)
    aa, ts, ai = (np.asarray(T["landmarks"][k]["location"], float) for k in ("AA", "TS", "AI"))
    T["glenoid"] = {"center": _r(gc), "glenohumeral_center": _r(gh_s),
                    "cone_axis": _r(_unit(gh_s - gc)),
                    "scapular_plane_normal": _r(_unit(np.cross(aa - ai, aa - ts))),
                    "source": "GC as the landmark GC; cone axis from GC through GH (Sarshari et "
                              "al. 2021 Eq. 12); plane normal: Eq. 15's y_s with AA for SN"}
    files = {
        "model.json": (json.dumps(T, indent=1, ensure_ascii=False) + "\n").encode(),
        "strings.csv": _csv(strings, ["name", "group", "das4_max_isometric_force", "max_isometric_force",
                                      "optimal_fiber_length", "tendon_slack_length",
                                      "pennation_angle_at_optimal", "max_contraction_velocity", "wraps"]),
        "path_points.csv": _csv(points, ["string", "index", "kind", "body", "x", "y", "z", "extra"]),
        "LICENSE-DAS4.txt": (d.path.parent / "LICENSE").read_bytes(),
        "SOURCES.md": SOURCES.encode(),
    }
    if meshes:
        files.update(_meshes(d))
    return files


SOURCES = """# Sources of the built-in shoulder–elbow model's data

Structure (bodies, 11 coordinates, elbow frames of Eqs. 1–4, the two scapulothoracic
ellipsoid constraints of Eq. 10 and their dilation by Eq. 14, 42 muscles, PCSA-based load
sharing): Sarshari E, Boulanaache Y, Terrier A, Farron A, Mullhaupt P, Pioletti D (2021) A Matlab
toolbox for scaled-generic modeling of shoulder and elbow. Sci Rep 11:20806. That paper's data
are not published and none is used, except its printed values: generic subject (male, 1.86 m,
85.5 kg), generic glenoid inclination 7°, rotator-cuff PCSAs (twice the halved values it prints:
supraspinatus 20.84, infraspinatus 33.32, subscapularis 35.68, teres minor 6.80 cm²).

Numbers: DAS4, the Dynamic Arm Simulator model `das4_v4.osim`
(https://github.com/dblana/arm-model; MIT licence, notice in `LICENSE-DAS4.txt`; Copyright (c)
2020 Aberdeen Biomechanics & Biomedical Engineering). Please cite Chadwick EK, Blana D, Kirsch
RF, van den Bogert AJ (2014) Real-time simulation of three-dimensional shoulder girdle and arm
dynamics. IEEE Trans Biomed Eng 61(7):1947–1956. The tables are regenerated from it by
`scripts/derive_shoulder_elbow.py`; `model.json` gives the source of every entry.

## Corrections to DAS4
1. Scapular landmarks: DAS4's markers AC, AA, TS, AI sit a constant (−9.3, −8.6, +31.3) mm
   from the bony landmarks; the bony landmarks are each marker minus the AA marker (the scapula
   frame's origin is the acromial angle).
2. Joint centres: the clavicle rotates about the SC landmark and the scapula about the AC
   landmark (DAS4 rotates them about the frame origins, 32 and 43 mm away), with DAS4's axes and
   angle conventions; both bodies coincide with DAS4's at DAS4's default pose. SC–AC and GH–AC
   distances are then constant in every pose.
3. Wrist: the hand (DAS4's palm, carpal and finger bodies, 0.582 kg) is tied to the radius at
   DAS4's default (neutral) wrist and added to it by the parallel-axis theorem; the wrist
   muscles' points and wrap objects on the hand are expressed in the radius frame. DAS4's hand
   bodies have a negative third principal moment of inertia (unphysical); its absolute value is
   used.
4. Rest pose: DAS4's default pose is not a scapulothoracic rest pose. The model's default pose
   has the SC and AC coordinates closest to de Groot & Brand (2001) rest orientation (clavicle
   (−28.573, 11.680, 7.482)°, scapula (32.047, 10.669, −10.320)°, thorax-based Y–Z–X) with TS
   and AI on the base ellipsoid dilated by 38.8 and 26.8 mm (the Delft model's rest dilations, as
   quoted in arthron's design notes); the humerus is aligned with the thorax, the elbow extended.
   The ellipsoids' dilations are Eq. 14 at that pose (equal to those values).
5. Mass centres: DAS4 puts the humerus's mass centre 78 mm from GH, 27 % of the GH–elbow length
   (every published table: 44–58 %). The humerus, and the ulna and radius (the latter carrying
   the hand) together, have their mass centres where Dumas, Chèze & Verriest (2007, J Biomech
   40:543–553; the shoulder–elbow paper's BSIP source) put the upper arm's and the forearm +
   hand's for the generic (male) subject, in the ISB segment frames built from GH, EL, EM, US,
   RS (hand length 0.108 × body height, Winter 2009, as no finger landmark exists); the two
   forearm bodies keep their DAS4 share of the mass and move by the same vector. Values read
   from HuMoD's implementation (Wojtusch & von Stryk 2015, BSD licence). DAS4's values are kept
   in `model.json` as `das4_mass_center`; masses and inertias (about the mass centre) are
   DAS4's. Scaling recomputes these mass centres for the subject's gender and landmarks
   (`arthron.solvers.dumas2007`).

## Choices
- Elbow (Eqs. 1–4): flexion EL_x about x̂_u through HU (midpoint of EL and EM), x̂_u along
  EM→EL; pronation PS_y about ẑ_r through CP and US, where CP is the centre of the radial head
  against the capitulum (DAS4's radioulnar joint centre, fixed in the ulna). The printed Eq. 2
  uses EL, a humerus landmark, for the radius frame; a pronation axis through EL would not be
  fixed in the ulna (it moves with flexion) and lies about 2 cm lateral of the radial head, so
  the capitulum centre CP takes EL's place. The resulting axis is DAS4's pronation axis.
- Glenohumeral joint: DAS4's Y–Z–Y rotations about GH, as DAS4 a chain of three one-axis
  CustomJoints gh1–gh3 through two massless bodies humerus_1, humerus_2 (OpenSim rejects a
  CustomJoint with collinear rotation axes); the joint whose child is the humerus is gh3. Glenoid centre GC: centroid of the
  vertices of DAS4's scapula mesh within 4 mm of the mesh's nearest approach to GH; the
  stability-cone axis runs from GC through GH.
- Base ribcage ellipsoid: DAS4's thorax wrap ellipsoid `serr_ant` (the Delft model's thorax
  ellipsoid). As a cross-check `model.json` records the ellipsoid fitted to DAS4's ribcage mesh
  (`ribcage.fit_to_ribs`, not used): it lies about 4 cm anterior of `serr_ant`.
- Muscles: 41 seed muscles as groups of DAS4 elements (arthron's design notes, table of the 42
  muscles); `Thelen2003Muscle` strings with DAS4's optimal fibre length, tendon slack length,
  pennation and maximum contraction velocity (DAS4 uses Schutte 1993 curves). PCSA = Σ DAS4
  max_isometric_force / σ with σ = 33 N/cm², except the rotator cuff (values above); each
  string's max_isometric_force = σ × the group's PCSA × its share of the group's DAS4 force.
- Subclavius (in no open model): from anatomy — origin on the first rib at its costal cartilage
  (20 mm lateral, 25 mm inferior and 5 mm anterior of the SC joint centre), insertion in the
  subclavian groove on the inferior surface of the clavicle's middle third (halfway between SC
  and AC, 8 mm inferior); PCSA 4.4 cm² (Garner & Pandy 2001, as quoted in arthron's design
  notes, not verified); optimal fibre and tendon slack lengths 60 % and 40 % of its rest-pose
  length (assumed). `build_shoulder_elbow_model(subclavius=False)` leaves it out.
- Not used from DAS4: anconeus, pronator quadratus, PT (pronator teres is pron_teres_1–2), the
  hand muscles, the wrist and finger joints.
- Meshes: DAS4's meshes in the body frames, the thorax meshes decimated (VTK quadric decimation
  through pyvista) to about 1,400 and 1,000 triangles and the scapula to 1,000; Wavefront OBJ,
  metres. DAS4 has no hand mesh attached to its bodies; none is shipped.
"""


def _dumas_mass_centers(T: dict, model) -> None:
    """The upper limb's mass centres of the generic subject (male, 1.86 m) where Dumas, Chèze &
    Verriest 2007 put them (arthron.solvers.dumas2007, the same code scaling uses for a subject),
    from the model's landmarks at its default pose; DAS4's values kept as ``das4_mass_center``."""
    subj = T["subject"]
    g = subj["gender"]
    mc = dumas_mass_centers(model, g, MASS_CENTER_MAP,
                            hand_length=HAND_LENGTH_PER_HEIGHT * float(subj["height_m"]))
    com = DUMAS2007_COM_PERCENT[g]
    for b, c in mc.items():
        segs = MASS_CENTER_MAP[b]
        B = T["bodies"][b]
        B["das4_mass_center"] = B["mass_center"]
        B["mass_center"] = _r(c)
        what = ("the upper arm's" if segs == ("arm",) else
                "with the other forearm body, the forearm and hand's (mass-weighted: forearm "
                "and hand fractions; each body keeps its DAS4 share of the mass and both move by "
                "the same vector at the default pose, pronation PS_y = 0)")
        B["mass_center_source"] = (
            f"Dumas R, Chèze L, Verriest J-P (2007) J Biomech 40:543-553, {g}: {what} mass centre, "
            + "; ".join(f"{s} {com[s]} % of its length in its ISB frame" for s in segs)
            + " (values read from HuMoD, Wojtusch & von Stryk 2015, SubjectParameterEstimation.m, "
            "BSD licence); frames from the landmarks GH, EL, EM, US, RS (Wu et al. 2005 axes, "
            "Dumas's joint-centre origins); hand length 0.108 x body height (Winter 2009, as "
            "HuMoD); DAS4's value in das4_mass_center; inertia about the mass centre: DAS4's")


def _as_read(tables: dict) -> dict:
    """The tables as :func:`arthron.models.shoulder_elbow.load_tables` would read them back."""
    T = json.loads(json.dumps(tables["model"]))
    sm = [dict(r) for r in tables["strings"]]
    for r in sm:
        r.setdefault("max_isometric_force", r.get("das4_max_isometric_force") or "0")
    return {"model": T, "strings": sm, "path_points": [dict(r) for r in tables["path_points"]]}


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--das4", default=str(DAS4))
    ap.add_argument("--out", default=str(OUT))
    a = ap.parse_args(argv)
    out = Path(a.out)
    files = derive(a.das4)
    for name, data in files.items():
        p = out / name
        p.parent.mkdir(parents=True, exist_ok=True)
        p.write_bytes(data)
        print(f"{p} ({len(data)} bytes)")


if __name__ == "__main__":
    main()
