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

from ..errors import ArthronWarning, DataFileError, ModelFileError, UnsupportedFeature

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


_VTK_TYPES = {"Float32": "<f4", "Float64": "<f8", "Int8": "<i1", "UInt8": "<u1", "Int16": "<i2",
              "UInt16": "<u2", "Int32": "<i4", "UInt32": "<u4", "Int64": "<i8", "UInt64": "<u8"}
_MAX_ITEMS = 50_000_000  # a mesh larger than this is refused before anything is allocated


def _vtp_count(elem, key, path, limit=_MAX_ITEMS) -> int:
    v = (elem.get(key) or "0").strip()
    if not v.isdigit() or int(v) > limit:
        raise DataFileError(f"{key}={v!r} is not a count (a non-negative integer up to {limit})",
                            path, f"line {elem.sourceline}")
    return int(v)


def _vtp_array(da, path, n_items, comps, kind):
    """The values of a ``<DataArray>`` (ascii, or inline binary: base64 with a UInt32/UInt64
    header, optionally zlib-compressed), checked against the expected count before use."""
    import base64
    import zlib
    where = f"line {da.sourceline}"
    typ = da.get("type", "")
    if typ not in _VTK_TYPES:
        raise DataFileError(f"DataArray type {typ!r} is not a VTK numeric type", path, where)
    nc = _vtp_count(da, "NumberOfComponents", path, 16) if da.get("NumberOfComponents") else 1
    if nc != comps:
        raise DataFileError(f"{kind} DataArray has NumberOfComponents={nc}, expected {comps}",
                            path, where)
    fmt = (da.get("format") or "ascii").strip()
    text = da.text or ""
    if fmt == "ascii":
        try:
            vals = np.array(text.split(), dtype=float)
            if typ.startswith("Float"):  # stored at the declared precision, as VTK does
                with np.errstate(over="ignore"):
                    vals = vals.astype(_VTK_TYPES[typ]).astype(float)
        except ValueError:
            raise DataFileError(f"{kind} DataArray holds non-numeric text", path, where) from None
    elif fmt == "binary":
        root = da.getroottree().getroot()
        head = _VTK_TYPES.get(root.get("header_type", "UInt32"), "<u4")
        if head not in ("<u4", "<u8"):
            raise DataFileError(f"header_type {root.get('header_type')!r} is not UInt32/UInt64", path)
        hs = np.dtype(head).itemsize
        if root.get("byte_order", "LittleEndian") != "LittleEndian":
            raise UnsupportedFeature("big-endian binary VTP", path, where)
        try:
            raw = base64.b64decode("".join(text.split()), validate=True)
            if root.get("compressor"):
                nb = int(np.frombuffer(raw[:hs], head)[0])
                hdr = np.frombuffer(raw[:hs * (3 + nb)], head).astype(np.int64)
                if nb > _MAX_ITEMS or hdr.size != 3 + nb:
                    raise ValueError("bad compression header")
                # the blocks are base64 of the header then of the data in the same string
                body = raw[hs * (3 + nb):]
                out, off = [], 0
                for csize in hdr[3:]:
                    out.append(zlib.decompress(body[off:off + int(csize)]))
                    off += int(csize)
                data = b"".join(out)
            else:
                nbytes = int(np.frombuffer(raw[:hs], head)[0])
                data = raw[hs:hs + nbytes]
            vals = np.frombuffer(data, _VTK_TYPES[typ]).astype(float)
        except (ValueError, zlib.error, TypeError) as e:
            raise DataFileError(f"{kind} DataArray: malformed binary data ({e})", path, where) from None
    else:
        raise UnsupportedFeature(f"VTP DataArray format {fmt!r} (arthron reads ascii and inline "
                                 "binary)", path, where)
    if vals.size != n_items * comps:
        raise DataFileError(f"{kind} DataArray holds {vals.size} values, expected "
                            f"{n_items * comps}", path, where)
    return vals


def _vtp_cells(sec, path, n_cells, n_points, kind):
    """(connectivity, offsets) of a cell section (``<Polys>``, ``<Strips>``) as int arrays,
    with every index checked to be in range."""
    arrays = {da.get("Name"): da for da in sec.findall("DataArray")}
    if "connectivity" not in arrays or "offsets" not in arrays:
        raise DataFileError(f"<{kind}> needs 'connectivity' and 'offsets' DataArrays", path,
                            f"line {sec.sourceline}")
    off = _vtp_array(arrays["offsets"], path, n_cells, 1, f"{kind} offsets")
    if off.size and (np.any(off != np.round(off)) or np.any(np.diff(np.r_[0, off]) < 1)
                     or off[-1] > _MAX_ITEMS):
        raise DataFileError(f"<{kind}> offsets are not increasing cell ends", path,
                            f"line {arrays['offsets'].sourceline}")
    n_conn = int(off[-1]) if off.size else 0
    conn = _vtp_array(arrays["connectivity"], path, n_conn, 1, f"{kind} connectivity")
    if conn.size and (np.any(conn != np.round(conn)) or conn.min() < 0 or conn.max() >= n_points):
        raise DataFileError(f"<{kind}> connectivity has indices outside 0..{n_points - 1}", path,
                            f"line {arrays['connectivity'].sourceline}")
    return conn.astype(np.int64), off.astype(np.int64)


def _vtp_validate(path: Path):
    """Parse and check a VTK XML PolyData file without VTK: structure, counts, offsets, indices,
    sizes of every DataArray, finite points. Returns (vertices (V, 3), triangles (F, 3) or None
    when some cell is a polygon of more than 3 points or a strip)."""
    from .setup import parse_xml
    root = parse_xml(path)
    if root.tag != "VTKFile" or root.get("type") != "PolyData":
        raise DataFileError("not a VTK PolyData file (<VTKFile type=\"PolyData\">)", path,
                            f"line {root.sourceline}")
    pieces = root.findall("PolyData/Piece")
    if not pieces:
        raise DataFileError("no <PolyData><Piece>", path)
    V_all, F_all, base, simple = [], [], 0, True
    for pc in pieces:
        n_pts = _vtp_count(pc, "NumberOfPoints", path)
        pts = pc.find("Points/DataArray")
        if pts is None:
            raise DataFileError("<Piece> without <Points><DataArray>", path, f"line {pc.sourceline}")
        V = _vtp_array(pts, path, n_pts, 3, "Points").reshape(n_pts, 3)
        if not np.all(np.isfinite(V)):
            raise DataFileError("non-finite vertex coordinates", path, f"line {pts.sourceline}")
        n_cells = 0
        for key, kind in (("NumberOfVerts", "Verts"), ("NumberOfLines", "Lines"),
                          ("NumberOfPolys", "Polys"), ("NumberOfStrips", "Strips")):
            n = _vtp_count(pc, key, path)
            n_cells += n
            sec = pc.find(kind)
            if not n:
                continue
            if sec is None:
                raise DataFileError(f"{key}={n} but no <{kind}>", path, f"line {pc.sourceline}")
            conn, off = _vtp_cells(sec, path, n, n_pts, kind)
            if kind == "Polys":
                sizes = np.diff(np.r_[0, off])
                if np.any(sizes > 3):
                    simple = False
                tri = np.flatnonzero(sizes == 3)
                if tri.size:
                    F_all.append(conn[off[tri, None] - 3 + np.arange(3)] + base)
            elif kind == "Strips":
                simple = False
        for sec_name, n_tuples in (("PointData", n_pts), ("CellData", n_cells)):
            for da in pc.findall(f"{sec_name}/DataArray"):
                nc = _vtp_count(da, "NumberOfComponents", path, 16) if da.get("NumberOfComponents") else 1
                _vtp_array(da, path, n_tuples, nc, f"{sec_name} '{da.get('Name', '')}'")
        V_all.append(V)
        base += n_pts
    for da in root.findall("PolyData/FieldData/DataArray"):
        nc = _vtp_count(da, "NumberOfComponents", path, 16) if da.get("NumberOfComponents") else 1
        _vtp_array(da, path, _vtp_count(da, "NumberOfTuples", path), nc, "FieldData")
    V = np.concatenate(V_all) if V_all else np.zeros((0, 3))
    F = np.concatenate(F_all) if F_all else np.zeros((0, 3), np.int64)
    return V, (F if simple else None)


def _read_vtp(path: Path) -> Mesh:
    """A VTK XML PolyData file. It is checked here first (:func:`_vtp_validate`: structure,
    counts, offsets, indices, finite values), so that a malformed file is a DataFileError and
    never reaches VTK. Triangle meshes are returned from that parse; files with larger polygons
    or strips are then triangulated by VTK (pyvista's ``triangulate``, as before), which now
    only sees a well-formed file."""
    V, F = _vtp_validate(path)
    if F is not None:
        if F.size == 0:
            raise DataFileError("no triangles in the VTP polydata", path)
        return _checked(Mesh(V, F, str(path)), path)
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
    return _checked(Mesh(np.asarray(poly.points, dtype=float), faces[:, 1:].astype(np.int64),
                         str(path)), path)


def _checked(mesh: Mesh, path) -> Mesh:
    """Refuse a mesh that is not (V, 3) finite vertices and (F, 3) faces indexing them."""
    V, F = mesh.vertices, mesh.faces
    if V.ndim != 2 or V.shape[1] != 3 or V.shape[0] == 0:
        raise DataFileError(f"vertices have shape {V.shape}, expected (V, 3)", path)
    if F.ndim != 2 or F.shape[1] != 3 or F.shape[0] == 0:
        raise DataFileError(f"faces have shape {F.shape}, expected (F, 3) triangles", path)
    if not np.all(np.isfinite(V)):
        raise DataFileError("non-finite vertex coordinates", path)
    if F.min() < 0 or F.max() >= V.shape[0]:
        raise DataFileError(f"face indices outside 0..{V.shape[0] - 1}", path)
    return mesh


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
    return _checked(Mesh(np.asarray(m.vertices, dtype=float), np.asarray(m.faces, dtype=np.int64),
                         str(path)), path)


def load_mesh(path) -> Mesh:
    """Load a triangle mesh (.stl binary/ASCII, .vtp, .obj; other trimesh formats by extension).

    Returns Mesh(vertices (V, 3) float, faces (F, 3) int); unpack as ``V, F = load_mesh(p)``.
    Raises DataFileError for a missing, unreadable or empty file."""
    path = Path(path)
    if not path.is_file():
        raise DataFileError("mesh file not found", path)
    suf = path.suffix.lower()
    if suf == ".stl":
        return _checked(read_stl(path), path)
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


def _appearance_visible(elements) -> bool:
    """False when the ``Appearance`` among ``elements`` (a component's children) says
    ``<visible>false</visible>``: OpenSim 4.6 then generates no decoration for the geometry or
    wrap object (``Geometry``/``WrapObject::generateDecorations``)."""
    for el in elements:
        if el.tag == "Appearance":
            return (el.findtext("visible") or "true").strip().lower() not in ("false", "0")
    return True


def hidden_wrap_objects(model) -> set:
    """``(body name, wrap object name)`` of the wrap objects whose ``Appearance`` is not visible
    (ground's under the body name ``ground``): OpenSim 4.6's visualizer draws none of them."""
    from .osim_xml import _unmodelled_from_text
    owners = [("ground", getattr(model, "ground_wrap_objects", []))]
    owners += [(b.name, b.wrap_objects) for b in model.bodies.values()]
    return {(body, w.name) for body, ws in owners for w in ws
            if not _appearance_visible(_unmodelled_from_text(getattr(w, "unmodelled_xml", "") or ""))}


def model_geometry(model, *, extra_dirs=(), visible_only=False) -> list:
    """Every ``Mesh`` a model displays, with the frame it is attached to and its file.
    ``visible_only``: without the geometry whose ``Appearance`` says ``<visible>false</visible>``
    (OpenSim's visualizer does not draw it; `arthron show` passes True, `arthron info` counts
    every mesh the model references).

    Bodies' and ground's attached geometry, and the attached geometry of PhysicalOffsetFrames
    (e.g. the ``<body>_geom_frame_<k>`` frames of a 3.x model whose display transforms were
    upgraded, as OpenSim 4.6 upgrades them), kept in those frames' ``unmodelled_xml``.

    Returns
    -------
    list of ``(frame path, Geometry, Path or None)``: the frame's absolute component path
    (``/bodyset/femur_r``, ``/ground``, ``/bodyset/thorax/thorax_geom_frame_1``; resolve it with
    ``model.frame_in_base``), the geometry (``mesh_file``, ``scale_factors``) and the file found
    by :func:`resolve_mesh_file` (None, warned, when missing).

    Raises
    ------
    ModelFileError naming the frame and geometry for ``scale_factors`` that are not three
    finite numbers, or a mesh file name too long for the file system.
    """
    from ..models.model import GROUND, Geometry
    from .osim_xml import _unmodelled_from_text
    model_dir = Path(model.source).parent if model.source else Path.cwd()
    items = [(GROUND, g) for g in model.ground_geometry]
    items += [(b.path, g) for b in model.bodies.values() for g in b.geometry]
    if visible_only:
        items = [(fr, g) for fr, g in items if _appearance_visible(_unmodelled_from_text(g.unmodelled_xml))]
    for f in model.frames.values():
        for el in _unmodelled_from_text(getattr(f, "unmodelled_xml", "")):
            if el.tag != "attached_geometry":
                continue
            for g in el:
                if not isinstance(g.tag, str) or visible_only and not _appearance_visible(g):
                    continue
                sf = (g.findtext("scale_factors") or "1 1 1").split()
                try:
                    scale = np.array([float(x) for x in sf])
                    ok = scale.shape == (3,) and np.all(np.isfinite(scale))
                except ValueError:
                    ok = False
                if not ok:
                    raise ModelFileError(f"scale_factors {' '.join(sf)!r} are not three numbers",
                                         model.source, f"frame '{f.path}' geometry '{g.get('name', '')}'")
                mf = (g.findtext("mesh_file") or "").strip() or None
                items.append((f.path, Geometry(name=g.get("name", ""), kind=g.tag, mesh_file=mf,
                                               scale_factors=scale)))
    out = []
    for frame, g in items:
        if not g.mesh_file:
            continue
        try:
            path = resolve_mesh_file(g.mesh_file, model_dir, extra_dirs=extra_dirs)
        except ModelFileError as e:
            raise ModelFileError(e.message, model.source or model_dir,
                                 f"frame '{frame}' geometry '{g.name}'") from None
        out.append((frame, g, path))
    return out
