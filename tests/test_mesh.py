"""io.mesh: STL (binary/ASCII), VTP, OBJ and mesh_file resolution."""
import struct

import numpy as np
import pytest

from arthron.errors import ArthronWarning, DataFileError
from arthron.io.mesh import load_mesh, resolve_mesh_file

from conftest import DATA, LENHART, needs_data

GEOM = LENHART.parent / "Geometry"
TIBIA_STL = GEOM / "lenhart2015-R-tibia-bone.stl"  # binary (header 'MESHM...')
PATELLA_STL = GEOM / "lenhart2015-R-patella-bone.stl"  # ASCII
VTP = DATA / "opensim-models" / "Geometry" / "ConePendulum.vtp"

TET_V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0], [0, 0, 1.0]])
TET_F = np.array([[0, 2, 1], [0, 1, 3], [0, 3, 2], [1, 2, 3]])


def _write_binary(path, V, F, header=b"solid but binary"):
    with open(path, "wb") as fh:
        fh.write(header.ljust(80, b" "))
        fh.write(struct.pack("<I", len(F)))
        for f in F:
            fh.write(struct.pack("<3f", 0, 0, 0))
            for v in V[f]:
                fh.write(struct.pack("<3f", *v))
            fh.write(b"\0\0")


def _write_ascii(path, V, F):
    lines = ["solid tet"]
    for f in F:
        lines += ["facet normal 0 0 0", " outer loop"] + [f"  vertex {a} {b} {c}" for a, b, c in V[f]]
        lines += [" endloop", "endfacet"]
    path.write_text("\n".join(lines + ["endsolid tet"]))


@pytest.mark.parametrize("writer", [_write_binary, _write_ascii])
def test_stl_round_trip_tetrahedron(tmp_path, writer):
    p = tmp_path / "tet.stl"
    writer(p, TET_V, TET_F)
    m = load_mesh(p)
    V, F = m
    assert V.shape == (4, 3) and F.shape == (4, 3)
    assert np.isclose(m.area, 1.5 + np.sqrt(3) / 2)
    # the same triangles (as vertex triples) come back
    got = {tuple(sorted(map(tuple, V[f]))) for f in F}
    ref = {tuple(sorted(map(tuple, TET_V[f]))) for f in TET_F}
    assert got == ref


def test_obj_via_trimesh(tmp_path):
    p = tmp_path / "tet.obj"
    p.write_text("".join(f"v {a} {b} {c}\n" for a, b, c in TET_V) + "".join(f"f {a+1} {b+1} {c+1}\n" for a, b, c in TET_F))
    V, F = load_mesh(p)
    assert np.allclose(V, TET_V) and np.array_equal(F, TET_F)


def test_bad_files(tmp_path):
    with pytest.raises(DataFileError, match="not found"):
        load_mesh(tmp_path / "none.stl")
    p = tmp_path / "bad.stl"
    p.write_bytes(b"\x00" * 100)
    with pytest.raises(DataFileError, match="neither a binary STL"):
        load_mesh(p)
    p.write_text("solid x\nfacet normal 0 0 0\nouter loop\nvertex 0 0 0\nvertex 1 0 0\nendloop\nendfacet\nendsolid\n")
    with pytest.raises(DataFileError, match="not a multiple of 3"):
        load_mesh(p)
    p.write_text("solid x\nvertex 0 0 a\n")
    with pytest.raises(DataFileError, match="line 2"):
        load_mesh(p)


@needs_data
def test_lenhart_meshes_match_trimesh():
    import trimesh
    for path in (TIBIA_STL, PATELLA_STL):
        V, F = load_mesh(path)
        tm = trimesh.load(str(path), process=True)
        assert V.shape == tm.vertices.shape and F.shape == tm.faces.shape
        assert np.isclose(0.5 * np.linalg.norm(np.cross(V[F][:, 1] - V[F][:, 0], V[F][:, 2] - V[F][:, 0]), axis=1).sum(),
                          tm.area, rtol=1e-9)
    V, _ = load_mesh(TIBIA_STL)
    assert 0.05 < np.ptp(V, axis=0).max() < 0.2  # metres: a proximal tibia


@needs_data
def test_vtp():
    V, F = load_mesh(VTP)
    assert V.shape[1] == 3 and F.shape[1] == 3 and F.max() < len(V)


def test_resolve_mesh_file(tmp_path):
    (tmp_path / "Geometry").mkdir()
    (tmp_path / "Geometry" / "bone.stl").write_text("solid")
    (tmp_path / "top.stl").write_text("solid")
    (tmp_path.parent / "outside.stl").write_text("solid")
    assert resolve_mesh_file("bone.stl", tmp_path) == (tmp_path / "Geometry" / "bone.stl").resolve()
    assert resolve_mesh_file("top.stl", tmp_path) == (tmp_path / "top.stl").resolve()
    for bad in ("../outside.stl", str(tmp_path.parent / "outside.stl"), "Geometry/../../outside.stl"):
        with pytest.warns(ArthronWarning, match="outside"):
            assert resolve_mesh_file(bad, tmp_path) is None
    with pytest.warns(ArthronWarning, match="not found"):
        assert resolve_mesh_file("missing.vtp", tmp_path) is None


@needs_data
def test_resolve_lenhart_tibia():
    assert resolve_mesh_file("lenhart2015-R-tibia-bone.stl", LENHART.parent) == TIBIA_STL.resolve()


@needs_data
def test_model_meshes_resolve_beside_the_model_and_missing_ones_warn():
    """Lenhart2015 ships its tibia, patella, fibula and cartilage STLs in Geometry/ but not the
    femur: the found ones resolve there and each missing one is a warning naming the file."""
    from conftest import LENHART
    from arthron.errors import ArthronWarning
    from arthron.io.mesh import load_mesh, resolve_model_meshes
    from arthron.io.osim import read_osim
    model = read_osim(LENHART)
    with pytest.warns(ArthronWarning, match="lenhart2015-R-femur-bone.stl"):
        meshes = resolve_model_meshes(model)
    found = {p.name for p in meshes.values() if p is not None}
    assert "lenhart2015-R-tibia-bone.stl" in found
    assert all(p.parent == (LENHART.parent / "Geometry").resolve() for p in meshes.values() if p is not None)
    tibia = next(p for p in meshes.values() if p is not None and p.name == "lenhart2015-R-tibia-bone.stl")
    V, F = load_mesh(tibia)
    assert V.shape[1] == 3 and F.shape[1] == 3 and len(F) > 1000


# ----------------------------------------------------------------------------- malformed VTP (issue 11, finding 12)
_TRI_VTP = DATA / "opensim-models" / "Geometry" / "pisiform_lvs.vtp"


def _vtp_with(tmp_path, old, new, src=_TRI_VTP, count=1):
    text = src.read_text()
    assert old in text, old
    p = tmp_path / src.name
    p.write_text(text.replace(old, new, count))
    return p


@needs_data
@pytest.mark.parametrize("old,new,match", [
    # each of these killed or froze the process inside VTK before
    ("0 1 2 \n", "0 1 99999 \n", "connectivity has indices outside"),
    ('NumberOfLines="0"', 'NumberOfLines="99999999999"', "NumberOfLines"),
    ('NumberOfComponents="3"', 'NumberOfComponents="99999999999"', "NumberOfComponents"),
    ("0 1 2 \n", "0 -1 2 \n", "connectivity has indices outside"),
    ("3 6 9 12", "3 6 4 12", "offsets are not increasing"),
    ('NumberOfPoints="34"', 'NumberOfPoints="35"', "Points DataArray holds 102 values, expected 105"),
    ("0.010497 -0.016841  0.020255", "0.010497 nan  0.020255", "non-finite vertex"),
    ('NumberOfPolys="64"', 'NumberOfPolys="65"', "offsets DataArray holds 64 values"),
    ("<Points>", "<Pts>", "malformed XML"),
])
def test_malformed_vtp_is_a_typed_error_before_vtk(tmp_path, old, new, match):
    p = _vtp_with(tmp_path, old, new)
    with pytest.raises(DataFileError, match=match) as ei:
        load_mesh(p)
    assert str(p) in str(ei.value) and "line" in str(ei.value)


@needs_data
def test_vtp_read_without_vtk_equals_vtk():
    """Triangle VTPs are parsed here; the result equals pyvista/VTK's (vertices at the declared
    Float32 precision, faces in file order)."""
    import pyvista as pv
    for f in (_TRI_VTP, VTP):
        m = load_mesh(f)
        poly = pv.read(str(f)).triangulate()
        np.testing.assert_array_equal(m.vertices, np.asarray(poly.points, float))
        np.testing.assert_array_equal(m.faces, np.asarray(poly.faces).reshape(-1, 4)[:, 1:])


def test_load_mesh_refuses_bad_meshes(tmp_path):
    """Meshes from any reader are checked: (V, 3) finite vertices, (F, 3) faces indexing them."""
    from arthron.io.mesh import Mesh, _checked
    V = np.array([[0, 0, 0], [1, 0, 0], [0, 1, 0.0]])
    F = np.array([[0, 1, 2]])
    _checked(Mesh(V, F), "x")
    for bad, match in ((Mesh(V[:, :1], F), "shape"), (Mesh(V, np.array([[0, 1, 3]])), "outside"),
                       (Mesh(V, np.array([[0, -1, 2]])), "outside"),
                       (Mesh(np.where(V == 1, np.inf, V), F), "non-finite"),
                       (Mesh(V, F[:, :2]), "shape")):
        with pytest.raises(DataFileError, match=match):
            _checked(bad, "x")
    obj = tmp_path / "bad.obj"
    obj.write_text("v 0 0 0\nv 1 0 0\nv 0 1 0\nf 1 2 7\n")
    with pytest.raises(DataFileError):
        load_mesh(obj)
