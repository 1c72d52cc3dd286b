"""`arthron show`: what is drawn is where OpenSim 4.6 puts it, and the pictures show it.

The scene (mesh vertices with their geometry scale factors, markers, muscle path nodes with
wrap tangent points) is compared with OpenSim's poses number for number; the rendered images
are checked by pixel statistics (not blank, bone/muscle/marker colours present, two frames
differ, a GIF has several frames). Rendering is off-screen (no display here); where neither
EGL nor OSMesa exists the rendering tests skip, saying so (arthron.render.offscreen_backend).
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from conftest import ARM26, ARM26_TUT, GAIT_PIPE, GAIT_REF_MODEL, MODELS, needs_data, needs_opensim
from arthron.cli import main
from arthron.errors import OptionError
from arthron.render import ModelScene, offscreen_backend, parse_frames, select_frames, show

ARM_IK = ARM26_TUT / "OutputReference" / "InverseKinematics" / "arm26_InverseKinematics.mot"
WALK_IK = GAIT_PIPE / "subject01_walk1_ik.mot"
GEOMETRY = MODELS / "Geometry"
SIZE = (240, 240)

_WINDOW, _WHY = offscreen_backend()
needs_render = pytest.mark.skipif(_WINDOW is None, reason=f"off-screen rendering impossible here: {_WHY}")


def _png(path):
    from PIL import Image
    with Image.open(path) as im:
        assert im.format == "PNG"
        return np.asarray(im.convert("RGB"))


def _covered(img):
    """Fraction of pixels that are not the white background."""
    return float(np.mean(np.any(img < 245, axis=-1)))


def _colour_fraction(img, rgb, tol=60):
    return float(np.mean(np.all(np.abs(img.astype(int) - np.asarray(rgb)) < tol, axis=-1)))


# ------------------------------------------------------------------ what is drawn, vs OpenSim
DAS4 = MODELS.parent / "arm-model" / "das4_v4.osim"     # meshes on PhysicalOffsetFrames, Geometry/ beside


@needs_data
@needs_opensim
@pytest.mark.parametrize("model_path, motion, frames, paths, wraps, geometry", [
    pytest.param(GAIT_REF_MODEL, WALK_IK, [0, 40], True, False, [GEOMETRY], id="gait2354-walk"),
    pytest.param(ARM26, ARM_IK, [0, 60, 120], True, True, [GEOMETRY], id="arm26-elbow-flexion"),
    # Garner & Pandy's obstacle sets, which OpenSim 4.6 cannot evaluate: meshes and markers only
    pytest.param(DAS4, None, None, False, False, [], id="das4-offset-frame-meshes"),
])
def test_scene_poses_meshes_markers_and_paths_as_opensim(model_path, motion, frames, paths, wraps, geometry):
    import opensim as osim

    import oracle
    from arthron.io.mesh import load_mesh, model_geometry
    from arthron.io.osim import read_osim
    from arthron.io.sto import read_sto
    from arthron.models.motion import coordinates_from_table
    from arthron.multibody.kinematics import compile_model

    model = read_osim(model_path)
    if motion is None:
        q, time = compile_model(model).default_q[None], None
    else:
        table = read_sto(motion)
        q, time = coordinates_from_table(model, table, missing="default")[frames], table.time[frames]
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", UserWarning)      # DAS4: meshes missing from the data
        scene = ModelScene.build(model, q, time, geometry_dirs=geometry)
        files = {g.name: f for _, g, f in model_geometry(model, extra_dirs=geometry)}
    assert len(scene.bodies) >= (7 if model_path == DAS4 else 15)
    assert len(scene.paths[0]) >= 6

    m, s = oracle.load(model_path)
    meshes = {}
    for c in m.getComponentsList():
        if c.getConcreteClassName() == "Mesh":
            meshes[c.getName()] = osim.Mesh.safeDownCast(c)
    cs = m.getCoordinateSet()
    names = list(model.coordinates)
    worst = {"mesh": 0.0, "marker": 0.0, "path": 0.0, "length": 0.0}
    n_wrap_nodes = 0
    for k in range(len(q)):
        if motion is not None:
            for j, c in enumerate(names):
                cs.get(c).setValue(s, float(q[k, j]), False)
        m.realizePosition(s)
        for b, V, _, gname in scene.bodies:
            g = meshes[gname]
            X = g.getFrame().getTransformInGround(s)
            R, p = oracle.mat33(X.R()), oracle.vec(X.p())
            ref = (load_mesh(files[gname]).vertices * oracle.vec(g.get_scale_factors())) @ R.T + p
            got = V @ scene.R[k, b].T + scene.o[k, b] if b >= 0 else V
            worst["mesh"] = max(worst["mesh"], float(np.abs(got - ref).max()))
        ref_markers = oracle.marker_positions(m, s)
        for i, n in enumerate(scene.marker_names):
            worst["marker"] = max(worst["marker"], float(np.abs(scene.markers[k, i] - ref_markers[n]).max()))
        fs = m.getForceSet()
        for i, n in enumerate(scene.path_names if paths else []):
            gp = osim.PathActuator.safeDownCast(fs.get(n)).getGeometryPath()
            cur = gp.getCurrentPath(s)
            ref = np.array([oracle.vec(cur.get(j).getLocationInGround(s)) for j in range(cur.getSize())])
            got = scene.path_nodes[k][i]
            assert got.shape == ref.shape, (n, got.shape, ref.shape)
            # the polyline drawn (arcs on the wrap surfaces) is as long as OpenSim's path
            drawn = float(np.linalg.norm(np.diff(scene.paths[k][i], axis=0), axis=1).sum())
            worst["length"] = max(worst["length"], abs(drawn - gp.getLength(s)) / gp.getLength(s))
            n_wrap_nodes += sum(osim.PathWrapPoint.safeDownCast(cur.get(j)) is not None
                                for j in range(cur.getSize()))
            worst["path"] = max(worst["path"], float(np.abs(got - ref).max()))
    # (seen: 4e-16, 2e-16 and 4e-15 m; the wrap tangent points come from iterative solutions)
    assert worst["mesh"] < 1e-12, worst
    assert worst["marker"] < 1e-12, worst
    assert worst["path"] < 1e-10, worst
    assert worst["length"] < 1e-4, worst   # 24 chords per arc (seen: 1.3e-5 on arm26's BIClong)
    assert (n_wrap_nodes > 0) == wraps   # arm26's comparison includes wrap tangent points


def test_torus_and_ellipsoid_stretches_are_drawn_on_their_surfaces():
    """The built-in shoulder–elbow model wraps the wrist muscles over DAS4's tori and the
    elbow's ellipsoid: each drawn polyline is as long as the path arthron computes (which
    equals OpenSim 4.6's getLength on the exported model, tests/test_shoulder_elbow*.py), so
    no wrapped stretch is cut short as a chord. Before the torus helix and the ellipsoid's
    planar section were drawn, the worst was 11 % (FCU over the elbow ellipsoid)."""
    from arthron.models.shoulder_elbow import build_shoulder_elbow_model
    from arthron.multibody.kinematics import compile_model

    model = build_shoulder_elbow_model()
    tree = compile_model(model)
    rng = np.random.default_rng(0)
    q = tree.default_q[None] + 0.3 * rng.standard_normal((6, len(tree.default_q)))
    scene = ModelScene.build(model, q, None, meshes=False)
    from arthron.multibody.path_geometry import compute_paths
    from arthron.multibody.paths import compile_paths
    ps = compile_paths(model, tree)
    kinds = {i: w.type for i, w in enumerate(ps.wrap_objects)}
    states = compute_paths(ps, tree, q)
    worst, wrapped = 0.0, set()
    for k in range(len(q)):
        for i, st in enumerate(states):
            keep = st.tag[k] >= 0
            w = st.wobj[k][keep]
            on = [kinds[int(x)] for x, y in zip(w[:-1], w[1:]) if x >= 0 and x == y]
            drawn = scene.paths[k][scene.path_names.index(ps.names[i])]
            L = float(np.linalg.norm(np.diff(drawn, axis=0), axis=1).sum())
            worst = max(worst, abs(L - st.length[k]) / st.length[k])
            if on:
                wrapped.update(on)
                assert len(drawn) > len(st.P[k][keep]), (ps.names[i], on)   # arcs, not chords
    assert {"WrapTorus", "WrapEllipsoid"} <= wrapped, wrapped
    assert worst < 1e-4, worst      # 24 chords per torus arc; the ellipsoid's are OpenSim's own


# ------------------------------------------------------------------------------- the pictures
@needs_data
@needs_render
def test_png_shows_the_model_and_two_frames_differ(tmp_path):
    a, b = tmp_path / "first.png", tmp_path / "last.png"
    ra = show(ARM26, a, motion=ARM_IK, frames=[0], geometry_dirs=[GEOMETRY], size=SIZE)
    show(ARM26, b, motion=ARM_IK, frames=[-1], geometry_dirs=[GEOMETRY], size=SIZE)
    assert ra["meshes"] > 10 and not ra["missing"]
    ia, ib = _png(a), _png(b)
    assert ia.shape == (SIZE[1], SIZE[0], 3)
    np.testing.assert_array_equal(ia, ra["images"][0])       # the file holds the rendered image
    for img in (ia, ib):
        assert 0.03 < _covered(img) < 0.6, _covered(img)      # a model, not a blank or filled frame
        assert img.std() > 20
        assert _colour_fraction(img, (199, 20, 20)) > 1e-4     # muscle paths (red lines)
        assert _colour_fraction(img, (220, 210, 190), tol=40) > 0.01   # bones
    # the elbow flexes by ~90 degrees between the first and the last frame: the forearm moves
    changed = np.mean(np.any(np.abs(ia.astype(int) - ib.astype(int)) > 40, axis=-1))
    assert changed > 0.01, changed


@needs_data
@needs_render
def test_several_frames_side_by_side_and_gif_through_the_command(tmp_path, capsys):
    png = tmp_path / "walk.png"
    assert main(["show", str(GAIT_REF_MODEL), "--motion", str(WALK_IK), "--geometry", str(GEOMETRY),
                 "--times", "0.5,1.0", "--size", "200x240", "-o", str(png)]) == 0
    img = _png(png)
    assert img.shape == (240, 400, 3)
    left, right = img[:, :200], img[:, 200:]
    assert _covered(left) > 0.02 and _covered(right) > 0.02
    assert np.mean(np.any(left != right, axis=-1)) > 0.01
    gif = tmp_path / "walk.gif"
    assert main(["show", str(GAIT_REF_MODEL), "--motion", str(WALK_IK), "--geometry", str(GEOMETRY),
                 "--frames", "0:61:15", "--size", "160x160", "-o", str(gif)]) == 0
    out = capsys.readouterr().out
    assert "wrote" in out and "5 frames" in out
    from PIL import Image, ImageSequence
    with Image.open(gif) as im:
        assert im.format == "GIF" and im.n_frames == 5
        frames = [np.asarray(f.convert("RGB")) for f in ImageSequence.Iterator(im)]
        assert im.info.get("loop") == 0
    assert all(_covered(f) > 0.02 for f in frames)
    diffs = [np.mean(np.any(frames[i] != frames[i + 1], axis=-1)) for i in range(4)]
    assert min(diffs) > 0.005, diffs                          # the model walks


@needs_data
@needs_render
def test_default_pose_without_meshes_still_draws_paths_and_markers(tmp_path):
    # arm26's meshes live in opensim-models/Geometry: without --geometry they are missing
    # (OpenSim only warns), and the muscles, markers and wrap objects are drawn alone
    with pytest.warns(UserWarning, match="36 mesh file"):
        r = show(ARM26, tmp_path / "arm.png", size=SIZE)
    assert r["meshes"] == 0 and len(r["missing"]) == 36
    img = r["images"][0]
    assert _covered(img) > 0.002
    assert _colour_fraction(img, (199, 20, 20)) > 1e-4


# ------------------------------------------------------------------------------- bad input
def test_frame_lists_and_their_errors():
    t = np.linspace(0.0, 1.0, 11)
    assert select_frames(t, parse_frames("0,-1,2:6:2")) == [0, 10, 2, 4]
    assert select_frames(t, times=parse_frames("0.31,1", kind="times")) == [3, 10]
    assert select_frames(t) == [0]
    assert select_frames(t, gif=True, max_frames=4) == [0, 3, 7, 10]
    with pytest.raises(OptionError, match="frame 11 is outside"):
        select_frames(t, [11])
    with pytest.raises(OptionError, match="1.5 s is outside"):
        select_frames(t, times=[1.5])
    with pytest.raises(OptionError, match="'x' is not a frame"):
        parse_frames("1,x")


@needs_data
def test_show_refuses_bad_output_and_frames(tmp_path, capsys):
    assert main(["show", str(ARM26), "-o", str(tmp_path / "a.jpg")]) == 2
    assert "give a .png" in capsys.readouterr().err
    assert main(["show", str(ARM26), "--motion", str(ARM_IK), "--frames", "500",
                 "-o", str(tmp_path / "a.png")]) == 2
    assert "frame 500 is outside the motion's 121 frames" in capsys.readouterr().err
    assert not list(tmp_path.iterdir())
