"""Bone meshes: STL (binary and ASCII), VTP (pyvista) and OBJ (trimesh), and the resolution of a
model's ``mesh_file`` the way OpenSim looks for it (the model folder and its ``Geometry/``
folders only; names never escape those folders).

API: ``load_mesh(path) -> Mesh`` (vertices (V, 3) float, faces (F, 3) int; units as stored in the
file: OpenSim meshes are in metres) and ``resolve_mesh_file(mesh_file, model_dir) -> Path | None``
(None, with an ArthronWarning, when the file is missing).
"""
from __future__ import annotations

import errno
import struct
import warnings
from dataclasses import dataclass
from pathlib import Path

import numpy as np

from ..errors import ArthronWarning, DataFileError, ModelFileError

__all__ = ["Mesh", "load_mesh", "resolve_mesh_file", "read_stl"]


@dataclass(frozen=True)
class Mesh:
    """A triangle mesh: vertices (V, 3) float, faces (F, 3) int (0-based), source path."""

    vertices: np.ndarray
    faces: np.ndarray
    path: str | None = None

    def __iter__(self):  # allows ``V, F = load_mesh(p)``
        return iter((self.vertices, self.faces))

    @property
    def face_normals(self) -> np.ndarray:
        T = self.vertices[self.faces]
        n = np.cross(T[:, 1] - T[:, 0], T[:, 2] - T[:, 0])
        ln = np.linalg.norm(n, axis=1, keepdims=True)
        return n / np.where(ln > 0, ln, 1.0)

    @property
    def area(self) -> float:
        T = self.vertices[self.faces]
        return float(0.5 * np.linalg.norm(np.cross(T[:, 1] - T[:, 0], T[:, 2] - T[:, 0]), axis=1).sum())


def _weld(tri: np.ndarray, path) -> Mesh:
    """(F, 3, 3) triangle soup → shared vertices (exact duplicates merged)."""
    if tri.size == 0:
        raise DataFileError("the mesh has no triangles", path)
    if not np.all(np.isfinite(tri)):
        raise DataFileError("non-finite vertex coordinates", path)
    flat = tri.reshape(-1, 3)
    V, inv = np.unique(flat, axis=0, return_inverse=True)
    return Mesh(V.astype(float), inv.reshape(-1, 3).astype(np.int64), str(path))


def read_stl(path) -> Mesh:
    """Read a binary or ASCII STL (detected from the size, not the 'solid' header, since binary
    files often start with 'solid' too). Raises DataFileError on truncated/malformed files."""
    path = Path(path)
    data = path.read_bytes()
    if len(data) >= 84:
        n = struct.unpack_from("<I", data, 80)[0]
        if len(data) == 84 + 50 * n:
            rec = np.frombuffer(data, dtype=np.dtype([("n", "<f4", 3), ("v", "<f4", (3, 3)), ("a", "<u2")]),
                                count=n, offset=84)
            return _weld(rec["v"].astype(float), path)
    text = data.decode("ascii", errors="replace")
    if not text.lstrip().lower().startswith("solid"):
        raise DataFileError("neither a binary STL (size does not match the triangle count) "
                            "nor an ASCII STL (no 'solid' header)", path)
    verts = []
    for lineno, line in enumerate(text.splitlines(), 1):
        s = line.strip()
        if s.startswith("vertex"):
            parts = s.split()
            if len(parts) != 4:
                raise DataFileError(f"malformed vertex line {s!r}", path, f"line {lineno}")
            try:
                verts.append([float(x) for x in parts[1:]])
            except ValueError:
                raise DataFileError(f"malformed vertex line {s!r}", path, f"line {lineno}") from None
    if len(verts) % 3:
        raise DataFileError(f"{len(verts)} vertices is not a multiple of 3 (truncated facet?)", path)
    return _weld(np.array(verts, dtype=float).reshape(-1, 3, 3), path)


def _read_vtp(path: Path) -> Mesh:
    try:
        import pyvista as pv
    except ImportError as exc:  # pragma: no cover
        raise DataFileError(f"reading .vtp needs pyvista ({exc})", path) from None
    try:
        poly = pv.read(str(path))
    except Exception as exc:  # noqa: BLE001 - VTK raises various types
        raise DataFileError(f"cannot read VTP: {exc}", path) from None
    poly = poly.extract_surface().triangulate() if not isinstance(poly, pv.PolyData) else poly.triangulate()
    faces = np.asarray(poly.faces).reshape(-1, 4)
    if faces.size == 0 or not np.all(faces[:, 0] == 3):
        raise DataFileError("no triangles in the VTP polydata", path)
    return Mesh(np.asarray(poly.points, dtype=float), faces[:, 1:].astype(np.int64), str(path))


def _read_trimesh(path: Path) -> Mesh:
    try:
        import trimesh
    except ImportError as exc:  # pragma: no cover
        raise DataFileError(f"reading {path.suffix} needs trimesh ({exc})", path) from None
    try:
        m = trimesh.load(str(path), force="mesh", process=False)
    except Exception as exc:  # noqa: BLE001
        raise DataFileError(f"cannot read mesh: {exc}", path) from None
    if len(m.faces) == 0:
        raise DataFileError("the mesh has no faces", path)
    return Mesh(np.asarray(m.vertices, dtype=float), np.asarray(m.faces, dtype=np.int64), str(path))


def load_mesh(path) -> Mesh:
    """Load a triangle mesh (.stl binary/ASCII, .vtp, .obj; other trimesh formats by extension).

    Returns Mesh(vertices (V, 3) float, faces (F, 3) int); unpack as ``V, F = load_mesh(p)``.
    Raises DataFileError for a missing, unreadable or empty file."""
    path = Path(path)
    if not path.is_file():
        raise DataFileError("mesh file not found", path)
    suf = path.suffix.lower()
    if suf == ".stl":
        return read_stl(path)
    if suf == ".vtp":
        return _read_vtp(path)
    return _read_trimesh(path)


def resolve_mesh_file(mesh_file: str, model_dir, *, extra_dirs=()) -> Path | None:
    """Find a model's ``mesh_file`` as OpenSim does: in the model's folder, then its ``Geometry``
    folder (and ``extra_dirs``, e.g. the Geometry folder of an installation). Names that would
    escape those folders (absolute paths, ``..``) are not followed. Returns None and warns
    (ArthronWarning) if not found."""
    model_dir = Path(model_dir)
    name = str(mesh_file).strip().replace("\\", "/")
    bases = [model_dir, model_dir / "Geometry", *map(Path, extra_dirs)]
    rel = Path(name)
    if rel.is_absolute() or ".." in rel.parts or not name:
        warnings.warn(f"{model_dir}: mesh_file {mesh_file!r} points outside the model and Geometry "
                      "folders; ignored", ArthronWarning, stacklevel=2)
        return None
    for base in bases:
        cand = base / rel
        try:
            base_r = base.resolve()
            cand_r = cand.resolve()
            found = cand_r.is_file()
        except OSError as e:
            if e.errno == errno.ENAMETOOLONG:
                raise ModelFileError(f"mesh_file name is too long for the file system "
                                     f"({len(name)} characters): {name[:60]}...", model_dir) from None
            continue
        if found and (base_r == cand_r.parent or base_r in cand_r.parents):
            return cand_r
    warnings.warn(f"{model_dir}: mesh_file {mesh_file!r} not found in {', '.join(str(b) for b in bases)}",
                  ArthronWarning, stacklevel=2)
    return None


def resolve_model_meshes(model, *, extra_dirs=()) -> dict:
    """Resolve every ``mesh_file`` a model's bodies and ground display.

    Parameters
    ----------
    model : arthron.models.model.Model (its ``source`` gives the model folder)

    Returns
    -------
    dict ``(body name, geometry name) -> Path or None``; each missing file has been warned
    about (ArthronWarning naming the file), as OpenSim only warns when a mesh is missing.
    """
    model_dir = Path(model.source).parent if model.source else Path.cwd()
    out = {}
    groups = [("ground", model.ground_geometry)] + [(b.name, b.geometry) for b in model.bodies.values()]
    for body, geoms in groups:
        for g in geoms:
            if g.mesh_file:
                try:
                    out[(body, g.name)] = resolve_mesh_file(g.mesh_file, model_dir, extra_dirs=extra_dirs)
                except ModelFileError as e:
                    raise ModelFileError(e.message, model.source or model_dir,
                                         f"body '{body}' geometry '{g.name}'") from None
    return out
