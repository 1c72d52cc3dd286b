"""Pictures of a model: bone meshes, muscle paths, markers and wrap objects, rendered
off-screen with pyvista (VTK) at chosen frames of a motion (``arthron show``).

The only module that imports pyvista, vtk and Pillow, all lazily (pyvista is a core
dependency; Pillow comes with it). It sits beside :mod:`arthron.plots` above the solvers and
never inside them.

What is drawn, as OpenSim's visualizer draws it:

* each body's attached ``Mesh`` geometry (``mesh_file`` found as OpenSim finds it: the model's
  folder, its ``Geometry`` folder, then the folders given as ``geometry_dirs``; see
  :func:`arthron.io.mesh.resolve_mesh_file`), scaled by the geometry's ``scale_factors`` and
  posed by arthron's forward kinematics (:func:`arthron.multibody.kinematics.forward_kinematics`);
  ground's geometry at rest;
* every path force's path as a polyline through its active path points and wrap tangent
  points (:func:`arthron.multibody.path_geometry.compute_paths`, the path OpenSim 4.6 computes),
  with the stretch on a wrap surface drawn on the surface (:func:`wrap_arc`: great-circle arc on a
  sphere, helix on a cylinder or on the cylinder a torus wrap lays on its tube, scaled great
  circle on an ellipsoid, a helix on each cylinder of a double-cylinder obstacle);
* markers as spheres (radius 1 cm), at their locations on their bodies;
* wrap objects (sphere, cylinder, ellipsoid, torus; the U cylinder of a double-cylinder
  obstacle) as translucent surfaces in their frames.

The camera looks at the model from its right side, a little from the front and above, with
OpenSim's y axis up; the distance fits the largest frame drawn and stays the same over an
animation, the view following the model's centre.

Off-screen rendering: with no ``DISPLAY`` (Linux), VTK is asked for its EGL window (Mesa's
EGL renders on the CPU) or, failing that, its OSMesa window; :func:`offscreen_backend` tells
which one is used or why none can be.
"""
from __future__ import annotations

import ctypes.util
import io
import os
import sys
import warnings
from dataclasses import dataclass, field
from pathlib import Path

import numpy as np

from .errors import ArthronWarning, DataFileError, ModelFileError, OptionError, UnsupportedFeature
from .io.files import atomic_write, check_output
from .models.model import Model
from .multibody.kinematics import compile_model, forward_kinematics, marker_positions

__all__ = ["offscreen_backend", "ModelScene", "parse_frames", "select_frames", "show", "render_poses", "wrap_arc"]

BONE = (0.93, 0.90, 0.82)
MUSCLE = (0.78, 0.08, 0.08)
MARKER = (1.0, 0.42, 0.71)      # OpenSim's marker pink
WRAP = (0.30, 0.62, 0.85)
MARKER_RADIUS = 0.01            # m


# ------------------------------------------------------------------------------- off-screen setup
def offscreen_backend() -> tuple[str | None, str]:
    """Which VTK render window draws without a screen here.

    Returns ``(window class, reason)``: ``("display", ...)`` when a ``DISPLAY`` is set (or not on
    Linux), ``("vtkEGLRenderWindow", ...)`` when libEGL is found, ``("vtkOSOpenGLRenderWindow",
    ...)`` when libOSMesa is found, else ``(None, reason)`` naming the libraries to install.
    ``VTK_DEFAULT_OPENGL_WINDOW`` set by the user is respected.
    """
    chosen = os.environ.get("VTK_DEFAULT_OPENGL_WINDOW")
    if chosen:
        return chosen, f"VTK_DEFAULT_OPENGL_WINDOW={chosen}"
    if not sys.platform.startswith("linux") or os.environ.get("DISPLAY") or os.environ.get("WAYLAND_DISPLAY"):
        return "display", "a display is available"
    if ctypes.util.find_library("EGL"):
        return "vtkEGLRenderWindow", "no display; EGL found (Mesa renders on the CPU)"
    if ctypes.util.find_library("OSMesa"):
        return "vtkOSOpenGLRenderWindow", "no display; OSMesa found"
    return None, ("no display, and neither libEGL nor libOSMesa is installed: off-screen rendering "
                  "needs one of them (Debian/Ubuntu: apt-get install libegl1 libegl-mesa0, or libosmesa6)")


def _pyvista():
    window, reason = offscreen_backend()
    if window is None:
        raise UnsupportedFeature(f"cannot render: {reason}")
    if window not in ("display",) and "VTK_DEFAULT_OPENGL_WINDOW" not in os.environ:
        os.environ["VTK_DEFAULT_OPENGL_WINDOW"] = window     # read when VTK makes its first window
    try:
        import pyvista as pv
    except ImportError as e:   # pragma: no cover - pyvista is a core dependency
        raise UnsupportedFeature(f"rendering needs pyvista (pip install pyvista): {e}") from None
    pv.OFF_SCREEN = True
    return pv


# ---------------------------------------------------------------------------------- the scene
def _pose_matrix(R, o):
    M = np.eye(4)
    M[:3, :3] = R
    M[:3, 3] = o
    return M


@dataclass
class ModelScene:
    """What is drawn of a model at T frames, in ground (metres).

    bodies : list of (body index or -1 for ground, vertices (V, 3) in the body frame with the
        geometry's scale factors applied (and the offset of the frame the mesh is attached
        to), faces (F, 3), geometry name); R (T, nb, 3, 3), o (T, nb, 3):
        body poses (``body_names`` their names); path_nodes : list over frames of lists of
        (K, 3) active path points and wrap tangent points of the path forces named in
        ``path_names`` (in that order); paths : the polylines drawn (the nodes, with the
        stretches on wrap surfaces as arcs); markers (T, nm, 3) named in ``marker_names``;
        wraps : list of (body index or -1, (4, 4) wrap frame in the body, kind, dims, name);
        missing : mesh files not found.
    """

    time: np.ndarray
    R: np.ndarray
    o: np.ndarray
    bodies: list = field(default_factory=list)
    paths: list = field(default_factory=list)
    markers: np.ndarray | None = None
    wraps: list = field(default_factory=list)
    missing: list = field(default_factory=list)
    body_names: list = field(default_factory=list)
    path_names: list = field(default_factory=list)
    path_nodes: list = field(default_factory=list)
    marker_names: list = field(default_factory=list)

    @classmethod
    def build(cls, model: Model, q, time=None, *, geometry_dirs=(), meshes=True, muscles=True,
              markers=True, wrap_objects=True) -> "ModelScene":
        """Pose ``model`` at coordinates ``q`` (T, nq) in model order (rad, m).

        Raises DataFileError for a mesh file that cannot be read (a missing one is listed in
        ``missing`` and left out, as OpenSim only warns)."""
        from .io.mesh import load_mesh, model_geometry
        from .models.model import GROUND
        tree = compile_model(model)
        q = np.atleast_2d(np.asarray(q, float))
        T = q.shape[0]
        time = np.arange(T, dtype=float) if time is None else np.asarray(time, float)
        kin = forward_kinematics(tree, q)
        scene = cls(time=time, R=np.asarray(kin.body_R(tree)), o=np.asarray(kin.body_origin(tree)),
                    body_names=list(tree.body_names))
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ArthronWarning)
            placed = (model_geometry(model, extra_dirs=tuple(geometry_dirs), visible_only=True)
                      if meshes else [])
        bidx = {n: i for i, n in enumerate(tree.body_names)}
        for frame, g, path in placed:
            if path is None:
                scene.missing.append(g.mesh_file)
                continue
            base, X = model.frame_in_base(frame)
            mesh = load_mesh(path)
            V = X.apply(np.asarray(mesh.vertices, float) * np.asarray(g.scale_factors, float))
            b = -1 if base == GROUND else bidx[base.rsplit("/", 1)[-1]]
            scene.bodies.append((b, V, np.asarray(mesh.faces, int), g.name))
        if muscles:
            scene.path_names, scene.path_nodes, scene.paths = _path_polylines(model, tree, q, kin)
        if markers and tree.markers:
            scene.marker_names, scene.markers = marker_positions(tree, q, kin=kin)
        if wrap_objects:
            scene.wraps = _wrap_surfaces(model, tree)
        return scene

    @property
    def n_frames(self) -> int:
        return len(self.time)

    def body_pose(self, t: int, b: int) -> np.ndarray:
        """(4, 4) pose of body ``b`` (-1: ground) in ground at frame ``t``."""
        return np.eye(4) if b < 0 else _pose_matrix(self.R[t, b], self.o[t, b])

    def points(self, t: int) -> np.ndarray:
        """The points the camera frames at frame ``t``: mesh vertices, body origins, markers, and
        the path nodes that lie within the extent of those again around them (a stray wrap
        tangent point does not shrink the model to a dot)."""
        core = [np.einsum("ij,vj->vi", self.R[t, b], V) + self.o[t, b] if b >= 0 else V
                for b, V, _, _ in self.bodies]
        if self.markers is not None:
            core.append(self.markers[t])
        core.append(self.o[t])
        core = np.concatenate([p.reshape(-1, 3) for p in core])
        core = core[np.all(np.isfinite(core), axis=1)]
        nodes = np.concatenate([p for p in self.paths[t] if len(p)]) if self.paths and any(
            len(p) for p in self.paths[t]) else np.zeros((0, 3))
        if len(core) and len(nodes):
            lo, hi = core.min(0), core.max(0)
            ext = max(float(np.max(hi - lo)), 0.1)
            nodes = nodes[np.all((nodes > lo - ext) & (nodes < hi + ext), axis=1)]
        return np.concatenate([core, nodes])


def _path_polylines(model, tree, q, kin) -> list:
    from .errors import ArthronError
    from .multibody.path_geometry import compute_paths
    from .multibody.paths import compile_paths
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ArthronWarning)
            pathset = compile_paths(model, tree).geometric()   # FunctionBasedPaths: nothing to draw
        states = compute_paths(pathset, tree, q, kin=kin) if pathset.paths else []
    except ArthronError as e:
        warnings.warn(f"{model.source or model.name}: muscle paths not drawn: {e}", ArthronWarning, stacklevel=3)
        return [], [], []
    T = q.shape[0]
    Rb, ob = np.asarray(kin.body_R(tree)), np.asarray(kin.body_origin(tree))
    nodes = [[st.P[t][st.tag[t] >= 0] for st in states] for t in range(T)]
    drawn = [[_with_arcs(st, t, pathset.wrap_objects, Rb[t], ob[t], tree.nb) for st in states]
             for t in range(T)]
    return list(pathset.names), nodes, drawn


def _with_arcs(st, t, wobjs, Rb, ob, nb, n_arc: int = 24) -> np.ndarray:
    """A path's polyline at frame ``t``: its nodes, with the stretch between the two tangent
    points on a wrap surface drawn on the surface (:func:`wrap_arc`) instead of as a chord."""
    keep = st.tag[t] >= 0
    P, w = st.P[t][keep], st.wobj[t][keep]
    if not np.any((w[:-1] >= 0) & (w[:-1] == w[1:])):
        return P
    wl = st.wlen[t][keep]
    pts = [P[:1]]
    for k in range(len(P) - 1):
        surf = _wrap_surface(wobjs, int(w[k]), Rb, ob, nb) if w[k] >= 0 and w[k] == w[k + 1] else None
        if surf is not None:
            kind, dims, Rw, pw = surf
            a, b = (P[k] - pw) @ Rw, (P[k + 1] - pw) @ Rw
            before = (P[k - 1] - pw) @ Rw if k > 0 else None
            arc = wrap_arc(kind, dims, a, b, wl[k + 1], n_arc, plane_point=before)
            if arc is not None:
                pts.append(arc @ Rw.T + pw)
        pts.append(P[k + 1:k + 2])
    return np.concatenate(pts)


def _wrap_surface(wobjs, i: int, Rb, ob, nb):
    """``(kind, dims, R, origin)`` of the surface that wrap nodes with wrap-object id ``i``
    (``PathState.wobj``) lie on, its frame in ground: the wrap object's own; for a
    WrapDoubleCylinderObst its U cylinder (id i, the object's frame) or its V cylinder (id
    i + number of wrap objects, on ``v_body`` at ``v_R``, ``v_p``), each drawn as a
    ``WrapCylinder`` of its radius (Garner & Pandy 2000's path on a cylinder is its helix).
    None for an id of nothing drawable."""
    n = len(wobjs)
    if 0 <= i < n:
        wo = wobjs[i]
        Rw = wo.R if wo.body == nb else Rb[wo.body] @ wo.R
        pw = wo.p if wo.body == nb else Rb[wo.body] @ wo.p + ob[wo.body]
        if wo.type == "WrapDoubleCylinderObst":
            return "WrapCylinder", {"radius": wo.dims["radius"]}, Rw, pw
        return wo.type, wo.dims, Rw, pw
    if n <= i < 2 * n and wobjs[i - n].type == "WrapDoubleCylinderObst":
        d = wobjs[i - n].dims
        vb = d["v_body"]
        Rv = d["v_R"] if vb == nb else Rb[vb] @ d["v_R"]
        ov = d["v_p"] if vb == nb else Rb[vb] @ d["v_p"] + ob[vb]
        return "WrapCylinder", {"radius": d["radius_v"]}, Rv, ov
    return None


def _slerp(u, v, s, long_way=False):
    """Points at fractions ``s`` (n,) along the great circle from unit ``u`` to unit ``v`` (the
    short way, or the long way round)."""
    ang = float(np.arccos(np.clip(u @ v, -1.0, 1.0)))
    perp = v - (u @ v) * u
    nrm = np.linalg.norm(perp)
    if nrm < 1e-12:
        return None
    perp /= nrm
    if long_way:
        ang, perp = 2.0 * np.pi - ang, -perp
    th = s[:, None] * ang
    return np.cos(th) * u + np.sin(th) * perp


def _length(pts):
    return float(np.linalg.norm(np.diff(pts, axis=0), axis=1).sum())


def wrap_arc(kind: str, dims: dict, a, b, length: float, n: int = 24, plane_point=None):
    """Interior points (n-1, 3) of the path on a wrap surface between tangent points ``a`` and
    ``b`` (wrap-frame coordinates, m), or None to draw the chord.

    Sphere: the great-circle arc through both points; cylinder (axis z): the helix between
    them; ellipsoid: with ``plane_point`` (the path point before ``a``, wrap frame), the section
    of the ellipsoid by the plane through it and both tangent points, sampled as OpenSim 4.6's
    ``WrapEllipsoid`` samples it (rays at equal angles from where the plane crosses the
    coordinate axis most normal to it, :func:`arthron.geometry.wrap_ellipsoid._surface_path`);
    without it, the great-circle arc of the sphere the ellipsoid is scaled from, scaled back;
    torus: the helix on the cylinder of the tube's radius that OpenSim 4.6's
    ``WrapTorus`` lays tangent to the torus circle (:func:`arthron.geometry.wrapping.wrap_torus`;
    both tangent points lie on it, which fixes where it touches the circle); each way round is
    tried and the one whose length is nearest the wrap length ``length`` that OpenSim's
    wrapping computed (``PathState.wlen``) is drawn. Double-cylinder obstacles: each cylinder
    is passed as a ``WrapCylinder`` (:func:`_wrap_surface`); their own kind gives None.
    """
    a, b = np.asarray(a, float), np.asarray(b, float)
    if kind == "WrapTorus":
        return _torus_arc(dims, a, b, length, n)
    if kind == "WrapEllipsoid" and plane_point is not None:
        arc = _ellipsoid_section_arc(dims, a, b, np.asarray(plane_point, float), length)
        if arc is not None:
            return arc
    full = np.linspace(0.0, 1.0, n + 1)
    cands = []
    if kind in ("WrapSphere", "WrapSphereObst", "WrapEllipsoid"):
        radii = (np.full(3, dims["radius"]) if kind != "WrapEllipsoid" else np.asarray(dims.get("radii"), float))
        if radii.shape != (3,) or np.any(radii <= 0):
            return None
        u, v = a / radii, b / radii
        if np.linalg.norm(u) < 1e-12 or np.linalg.norm(v) < 1e-12:
            return None
        u, v = u / np.linalg.norm(u), v / np.linalg.norm(v)
        for long_way in (False, True):
            pts = _slerp(u, v, full, long_way)
            if pts is not None:
                cands.append(pts * radii)
    elif kind in ("WrapCylinder", "WrapCylinderObst"):
        r = dims["radius"]
        ta, tb = np.arctan2(a[1], a[0]), np.arctan2(b[1], b[0])
        d = (tb - ta + np.pi) % (2.0 * np.pi) - np.pi
        for dd in (d, d - np.copysign(2.0 * np.pi, d)):
            th = ta + full * dd
            cands.append(np.column_stack([r * np.cos(th), r * np.sin(th), a[2] + full * (b[2] - a[2])]))
    if not cands:
        return None
    best = min(cands, key=lambda c: abs(_length(c) - length))
    return best[1:-1]


def _ellipsoid_section_arc(dims: dict, a, b, p, length: float):
    """:func:`wrap_arc` on an ellipsoid along its section by the plane through ``p``, ``a``
    and ``b``, with OpenSim's number of chords (|a − b| / 1 mm, at least 1, at most 499: its
    wrap length is the sum of those chords); None when the three points are collinear or the
    radii are not positive."""
    from .geometry.wrap_ellipsoid import SURFACE_CHORD, section_points
    n = int(min(max(np.linalg.norm(b - a) // SURFACE_CHORD, 1), 499))
    radii = np.asarray(dims.get("radii"), float)
    vs = np.cross(a - p, b - p)
    nv = np.linalg.norm(vs)
    if radii.shape != (3,) or np.any(radii <= 0) or nv < 1e-14:
        return None
    vs /= nv
    i = int(np.argmax(np.abs(vs)))
    a0 = np.zeros(3)
    a0[i] = (vs @ a) / vs[i]                            # the plane meets axis i there
    u, v = a - a0, b - a0
    if min(np.linalg.norm(u), np.linalg.norm(v)) < 1e-14:
        return None
    u /= np.linalg.norm(u)
    w = np.cross(u, v / np.linalg.norm(v))
    if np.linalg.norm(w) < 1e-14:
        return None
    w = np.cross(w / np.linalg.norm(w), u)               # in the plane, ⟂ u, towards b
    phi0 = float(np.arccos(np.clip(u @ (v / np.linalg.norm(v)), -1.0, 1.0)))
    cands = []
    for sweep in (phi0, -(2.0 * np.pi - phi0)):
        pts = section_points(a0, u, w, np.linspace(0.0, sweep, n + 1), radii)
        pts[0], pts[-1] = a, b
        cands.append(pts)
    best = min(cands, key=lambda c: abs(_length(c) - length))
    return best[1:-1]


def _torus_cylinder(phi: float, R: float):
    """Origin (3,) and axes (rows X, Y, Z; Z the cylinder's axis) of the cylinder
    :func:`arthron.geometry.wrapping.wrap_torus` lays tangent to the torus circle (radius R,
    z = 0 plane) at the circle's angle ``phi``."""
    from .geometry.wrapping import torus_cylinder_frame

    c = np.array([R * np.cos(phi), R * np.sin(phi), 0.0])
    return c, torus_cylinder_frame(c[None])[0]


def _torus_arc(dims: dict, a, b, length: float, n: int):
    """:func:`wrap_arc` on a torus: the circle angle φ of the tangent cylinder is the one that
    puts both tangent points at the tube's radius r from its axis (least squares, bounded
    scalar search around the angle of their midpoint), then the cylinder's helix."""
    from scipy.optimize import minimize_scalar

    r = float(dims.get("inner_radius", 0.01))
    R = float(dims.get("outer_radius", 0.05))
    m = 0.5 * (a + b)
    if r <= 0.0 or R <= 0.0 or np.hypot(m[0], m[1]) < 1e-12:
        return None
    phi0 = float(np.arctan2(m[1], m[0]))

    def miss(phi):
        c, Rm = _torus_cylinder(phi, R)
        da, db = Rm @ (a - c), Rm @ (b - c)
        return (np.hypot(da[0], da[1]) - r) ** 2 + (np.hypot(db[0], db[1]) - r) ** 2

    phi = float(minimize_scalar(miss, bounds=(phi0 - 0.5, phi0 + 0.5), method="bounded",
                                options={"xatol": 1e-12}).x)
    c, Rm = _torus_cylinder(phi, R)
    arc = wrap_arc("WrapCylinder", {"radius": r}, Rm @ (a - c), Rm @ (b - c), length, n)
    return None if arc is None else arc @ Rm + c


def _wrap_surfaces(model, tree) -> list:
    from .multibody.paths import compile_paths
    try:
        with warnings.catch_warnings():
            warnings.simplefilter("ignore", ArthronWarning)
            wobjs = compile_paths(model, tree, forces=[]).wrap_objects
    except Exception:   # noqa: BLE001 - a wrap object arthron cannot compile is not drawn
        return []
    from .io.mesh import hidden_wrap_objects
    hidden = hidden_wrap_objects(model)     # Appearance visible false: OpenSim draws none
    nb = tree.nb
    names = list(tree.body_names)
    return [(-1 if w.body == nb else int(w.body), _pose_matrix(w.R, w.p), w.type, w.dims, w.name)
            for w in wobjs if w.active
            and ("ground" if w.body == nb else names[int(w.body)], w.name) not in hidden]


def _wrap_polydata(pv, kind: str, dims: dict):
    if kind in ("WrapSphere", "WrapSphereObst"):
        return pv.Sphere(radius=dims["radius"], theta_resolution=24, phi_resolution=16)
    if kind in ("WrapCylinder", "WrapCylinderObst", "WrapDoubleCylinderObst"):
        return pv.Cylinder(center=(0, 0, 0), direction=(0, 0, 1), radius=dims["radius"],
                           height=dims.get("length", 2.0 * dims["radius"]), resolution=32)
    if kind == "WrapEllipsoid" and "radii" in dims:
        r = dims["radii"]
        return pv.ParametricEllipsoid(r[0], r[1], r[2], u_res=32, v_res=24)
    if kind == "WrapTorus":
        return pv.ParametricTorus(ringradius=dims.get("outer_radius", 0.05),
                                  crosssectionradius=dims.get("inner_radius", 0.01))
    return None


# --------------------------------------------------------------------------------- rendering
def _polylines(pv, lines):
    lines = [ln for ln in lines if len(ln) >= 2]
    pts = np.concatenate(lines)
    cells, k = [], 0
    for ln in lines:
        cells += [len(ln), *range(k, k + len(ln))]
        k += len(ln)
    return pv.PolyData(pts, lines=np.asarray(cells, int))


def _camera(scene: ModelScene, frames, view=(0.45, 0.3, 1.0)):
    """(centres (n, 3), distance, direction): the view fits the largest frame's extent."""
    centres, radius = [], 0.0
    for t in frames:
        P = scene.points(t)
        lo, hi = P.min(0), P.max(0)
        centres.append(0.5 * (lo + hi))
        radius = max(radius, 0.5 * float(np.linalg.norm(hi - lo)))
    d = np.asarray(view, float)
    d /= np.linalg.norm(d)
    return np.asarray(centres), max(radius, 1e-3), d


def render_frames(scene: ModelScene, frames, *, size=(800, 800), progress=None) -> list:
    """Render ``scene`` at the frame indices ``frames``: a list of (H, W, 3) uint8 images.

    ``progress(i, n)`` is called after each image. Raises UnsupportedFeature when nothing can
    render off-screen here (see :func:`offscreen_backend`)."""
    pv = _pyvista()
    frames = list(frames)
    centres, radius, d = _camera(scene, frames)
    w, h = int(size[0]), int(size[1])
    pl = pv.Plotter(off_screen=True, window_size=(w, h))
    try:
        pl.set_background("white")
        pl.enable_lightkit() if hasattr(pl, "enable_lightkit") else None
        actors = []
        for b, V, F, _ in scene.bodies:
            faces = np.hstack([np.full((len(F), 1), 3), F]).ravel()
            a = pl.add_mesh(pv.PolyData(V, faces=faces), color=BONE, smooth_shading=True,
                            specular=0.2, show_scalar_bar=False)
            actors.append((b, np.eye(4), a))
        for b, X, kind, dims, _ in scene.wraps:
            poly = _wrap_polydata(pv, kind, dims)
            if poly is not None:
                a = pl.add_mesh(poly, color=WRAP, opacity=0.35, smooth_shading=True)
                actors.append((b, X, a))
        path_poly, path_actor = None, None
        with_paths = [t for t in frames if scene.paths and any(len(p) >= 2 for p in scene.paths[t])]
        if with_paths:
            path_poly = _polylines(pv, scene.paths[with_paths[0]])
            path_actor = pl.add_mesh(path_poly, color=MUSCLE, line_width=2)
        mark_poly = None
        if scene.markers is not None:
            sph = pv.Sphere(radius=MARKER_RADIUS, theta_resolution=12, phi_resolution=8)
            sv = np.asarray(sph.points, float)
            sf = np.asarray(sph.faces, int).reshape(-1, 4)
            nm = scene.markers.shape[1]
            faces = np.concatenate([sf[:, :1], sf[:, 1:]] if nm == 0 else
                                   [np.hstack([sf[:, :1], sf[:, 1:] + k * len(sv)]) for k in range(nm)])
            mark_poly = pv.PolyData(np.zeros((nm * len(sv), 3)), faces=faces.ravel())
            pl.add_mesh(mark_poly, color=MARKER, smooth_shading=True)
        fov = np.radians(30.0)
        dist = 1.15 * radius / np.sin(fov / 2)
        images = []
        for i, t in enumerate(frames):
            for b, X, a in actors:
                a.user_matrix = scene.body_pose(t, b) @ X
            if path_poly is not None:
                lines = [p for p in scene.paths[t] if len(p) >= 2]
                path_actor.SetVisibility(bool(lines))
                if lines:
                    path_poly.copy_from(_polylines(pv, lines))
            if mark_poly is not None:
                m = scene.markers[t]
                ok = np.all(np.isfinite(m), axis=1)
                # a marker without a position (NaN) collapses to a point at the first one shown
                m = np.where(ok[:, None], m, m[ok][0] if ok.any() else 0.0)
                scale = np.where(ok, 1.0, 0.0)[:, None, None]
                mark_poly.points = (m[:, None, :] + scale * sv[None]).reshape(-1, 3)
            c = centres[i]
            pl.camera.focal_point = tuple(c)
            pl.camera.position = tuple(c + dist * d)
            pl.camera.up = (0.0, 1.0, 0.0)
            pl.camera.view_angle = np.degrees(fov)
            pl.camera.clipping_range = (max(dist - 4 * radius, 1e-3), dist + 4 * radius)
            pl.render()
            images.append(np.asarray(pl.screenshot(return_img=True))[..., :3].copy())
            if progress is not None:
                progress(i + 1, len(frames))
        return images
    finally:
        pl.close()


def _png_bytes(image) -> bytes:
    from PIL import Image
    buf = io.BytesIO()
    Image.fromarray(np.asarray(image, np.uint8)).save(buf, format="PNG")
    return buf.getvalue()


def _gif_bytes(images, durations_ms) -> bytes:
    from PIL import Image
    frames = [Image.fromarray(np.asarray(im, np.uint8)) for im in images]
    # one adaptive palette for all frames keeps the bones from flickering
    pal = frames[len(frames) // 2].quantize(colors=255, method=Image.Quantize.MEDIANCUT)
    frames = [f.quantize(palette=pal, dither=Image.Dither.NONE) for f in frames]
    buf = io.BytesIO()
    frames[0].save(buf, format="GIF", save_all=True, append_images=frames[1:],
                   duration=[int(x) for x in durations_ms], loop=0, disposal=1)
    return buf.getvalue()


# --------------------------------------------------------------------------- frame selection
def parse_frames(text: str | None, *, kind: str = "frames") -> list | None:
    """``"0,10,-1"`` or ``"0:100:10"`` (Python slices; several comma-separated) → list of ints
    (``kind="frames"``), or ``"0.5,1.2"`` → list of floats (``kind="times"``, seconds).
    Raises OptionError naming the bad item."""
    if text is None:
        return None
    out = []
    for item in (s.strip() for s in str(text).split(",")):
        if not item:
            continue
        try:
            if kind == "frames" and ":" in item:
                parts = [int(p) if p.strip() else None for p in item.split(":")]
                if len(parts) > 3:
                    raise ValueError
                if len(parts) == 3 and parts[2] == 0:
                    raise OptionError(f"--frames: '{item}': a slice step cannot be 0")
                out.append(slice(*parts))
            else:
                out.append(int(item) if kind == "frames" else float(item))
        except OptionError:
            raise
        except ValueError:
            raise OptionError(f"--{kind}: '{item}' is not a {'frame index or slice' if kind == 'frames' else 'time in seconds'}") from None
    if not out:
        raise OptionError(f"--{kind}: no {kind} given")
    return out


def select_frames(time, frames=None, times=None, *, gif=False, max_frames: int = 40) -> list:
    """Frame indices to draw of a motion with ``time`` (T,): the listed ``frames`` (indices,
    negative from the end, slices), the frames nearest the listed ``times`` (s), or by default
    the first frame (PNG) or up to ``max_frames`` frames evenly over the motion (GIF).
    Raises OptionError for an index or time outside the motion."""
    time = np.asarray(time, float)
    T = len(time)
    if frames is not None:
        idx = []
        for f in frames:
            if isinstance(f, slice):
                idx += list(range(T))[f]
            elif -T <= f < T:
                idx.append(f % T)
            else:
                raise OptionError(f"--frames: frame {f} is outside the motion's {T} frames")
        if not idx:
            raise OptionError("--frames: the slices select no frame")
        return idx
    if times is not None:
        idx = []
        for s in times:
            if not (time[0] - 1e-9 <= s <= time[-1] + 1e-9):
                raise OptionError(f"--times: {s:g} s is outside the motion ({time[0]:g} .. {time[-1]:g} s)")
            idx.append(int(np.argmin(np.abs(time - s))))
        return idx
    if not gif or T == 1:
        return [0]
    return sorted(set(np.linspace(0, T - 1, min(T, max_frames)).round().astype(int).tolist()))


# ------------------------------------------------------------------------------------ the command
#: largest side (pixels) of one image, and most pixels of all the images of one ``show`` (held in
#: memory together: 3 bytes each), beyond which ``show`` refuses instead of running out of memory
MAX_SIDE = 8192
MAX_PIXELS = 200_000_000


def show(model, output, *, motion=None, frames=None, times=None, gif=None, geometry_dirs=(),
         size=(800, 800), max_frames: int = 40, progress=None) -> dict:
    """``arthron show``: render a model (optionally posed over a motion) to a PNG or a GIF.

    Parameters
    ----------
    model : path of an ``.osim``, or a :class:`~arthron.models.model.Model`
    output : ``.png`` (one image; several frames side by side) or ``.gif`` (an animation over
        the frames, each shown for its time step in the motion, 20-200 ms)
    motion : ``.mot``/``.sto`` of coordinates (degrees when its header says ``inDegrees=yes``;
        coordinates it lacks keep their defaults), or None for the model's default pose
    frames, times : frame indices or times (s) to draw (see :func:`select_frames`)
    gif : write a GIF (default: when ``output`` ends in ``.gif``)
    geometry_dirs : more folders to look for mesh files in, after the model's folder and its
        ``Geometry`` folder (e.g. the ``Geometry`` folder of an OpenSim installation)
    size : (width, height) pixels of one image

    Returns a dict: ``output`` (path), ``frames`` (indices drawn), ``time`` (their times, s),
    ``meshes`` (number drawn), ``missing`` (mesh files not found), ``images`` (the arrays).

    Raises
    ------
    ModelFileError / DataFileError for unreadable inputs; OptionError for bad frames, times,
    size (:data:`MAX_SIDE`, :data:`MAX_PIXELS`), a geometry folder that does not exist or an
    output that is neither ``.png`` nor ``.gif``; UnsupportedFeature when nothing can render
    off-screen on this machine (:func:`offscreen_backend`).
    """
    out = Path(output)
    suffix = out.suffix.lower()
    gif = (suffix == ".gif") if gif is None else bool(gif)
    if gif and suffix != ".gif":
        raise OptionError(f"output {output}: an animation (--gif) is written to a .gif file name")
    if suffix not in (".png", ".gif") or (not gif and suffix != ".png"):
        raise OptionError(f"output {output}: give a .png file name (a picture) or a .gif one (an animation, --gif)")
    w, h = size
    if not (1 <= w <= MAX_SIDE and 1 <= h <= MAX_SIDE):
        raise OptionError(f"--size {w}x{h}: each side must lie in [1, {MAX_SIDE}] pixels")
    for d in geometry_dirs:
        if not Path(d).is_dir():
            raise OptionError(f"--geometry {d}: no such folder")
    check_output(out)
    if isinstance(model, Model):
        m = model
    else:
        from .io.osim import read_osim
        m = read_osim(model)
    if not m.bodies:
        raise ModelFileError("the model has no body (an empty <BodySet>): nothing to draw",
                             getattr(m, "source", None) or (None if isinstance(model, Model) else model))
    if motion is not None:
        from .io.sto import read_sto
        from .models.motion import coordinates_from_table
        table = read_sto(motion)
        if len(table.time) == 0:
            raise DataFileError("the motion has no rows", motion)
        names = {lab.strip("/").split("/")[-2] if lab.startswith("/") and lab.endswith("/value") else lab
                 for lab in table.labels}
        if m.coordinates and not names & set(m.coordinates):
            shown = ", ".join(list(table.labels)[:6]) + (" ..." if len(table.labels) > 6 else "")
            raise DataFileError(f"no column names a coordinate of model '{m.name}' (columns: {shown})",
                                motion, "column labels")
        q_all = coordinates_from_table(m, table, missing="default")
        t_all = np.asarray(table.time, float)
    else:
        tree = compile_model(m)
        q_all, t_all = np.atleast_2d(tree.default_q), np.zeros(1)
    idx = select_frames(t_all, frames, times, gif=gif, max_frames=max_frames)
    if len(idx) * w * h > MAX_PIXELS:
        raise OptionError(f"{len(idx)} frames of {w}x{h} pixels are more than {MAX_PIXELS / 1e6:g} million pixels "
                          "held at once: draw fewer frames (a slice step, 0:200:10) or a smaller --size")
    r = render_poses(m, q_all[idx], out, time=t_all[idx], gif=gif, geometry_dirs=geometry_dirs, size=size,
                     progress=progress)
    r["frames"] = idx
    return r


def render_poses(model: Model, q, output, *, time=None, gif: bool = False, geometry_dirs=(),
                 size=(800, 800), progress=None) -> dict:
    """Render ``model`` at the poses ``q`` ((K, nq) generalized coordinates in the compiled tree's
    order, rad/m) to ``output``: one PNG with the K images side by side, or a GIF (``gif``)
    timed by ``time`` ((K,) s). What :func:`show` does once it has the poses; the file is written
    whole or not at all (inside an output group, with the group).

    Returns a dict: ``output``, ``time``, ``meshes`` (number drawn), ``missing`` (mesh files not
    found), ``images`` (the arrays). Raises UnsupportedFeature when nothing can render off-screen.
    """
    out = Path(output)
    m = model
    q = np.atleast_2d(np.asarray(q, float))
    t = np.arange(len(q), dtype=float) if time is None else np.asarray(time, float)
    scene = ModelScene.build(m, q, t, geometry_dirs=geometry_dirs)
    if scene.missing:
        shown = ", ".join(scene.missing[:5]) + (" ..." if len(scene.missing) > 5 else "")
        warnings.warn(f"{m.source or m.name}: {len(scene.missing)} mesh file(s) not found beside the "
                      f"model, in its Geometry folder or in --geometry folders, not drawn: {shown}",
                      ArthronWarning, stacklevel=2)
    if hasattr(progress, "stage"):
        progress.stage("drawing")
    K = len(q)
    images = render_frames(scene, range(K), size=size, progress=progress)
    if gif:
        dt = np.diff(scene.time) * 1e3 if K > 1 else np.array([100.0])
        dur = np.clip(np.append(dt, dt[-1]) if K > 1 else dt, 20, 200)
        atomic_write(out, _gif_bytes(images, dur))
    else:
        atomic_write(out, _png_bytes(np.concatenate(images, axis=1)))
    return {"output": out, "time": t, "meshes": len(scene.bodies), "missing": scene.missing,
            "images": images}
