"""Setups, trials and force sets shipped in PyPI packages (Pose2Sim 0.4's demo, bioscout 2.1's
setup files) that arthron read or ran differently from OpenSim 4.6 when a new user ran them,
each reproduced in a small file written by the test (the packages' files are not copied) or on
the shared data, and compared with OpenSim 4.6."""
from __future__ import annotations

import dataclasses
import re
import os
import warnings

import numpy as np
import pytest

from conftest import GAIT_PIPE, MODELS, needs_data, needs_opensim
from arthron.errors import ArthronWarning, DataFileError

_TRC_HEAD = ("PathFileType\t4\t(X/Y/Z)\tshort.trc\n"
             "DataRate\tCameraRate\tNumFrames\tNumMarkers\tUnits\tOrigDataRate\tOrigDataStartFrame\tOrigNumFrames\n"
             "60\t60\t{nf}\t2\tm\t60\t0\t{nf}\n"
             "Frame#\tTime\tA\t\t\tB\t\t\n"
             "\t\tX1\tY1\tZ1\tX2\tY2\tZ2\n")


def _short_trc(path, nf, rows=3):
    body = "".join(f"{i + 1}\t{(i + 1) / 60!r}\t{0.1 * i}\t0.9\t-1.4\t{0.2 + i}\t0.5\t-1.2\n" for i in range(rows))
    path.write_text(_TRC_HEAD.format(nf=nf) + body)
    return path


@needs_opensim
def test_trc_with_fewer_rows_than_numframes_reads_as_opensim(tmp_path):
    """Pose2Sim's demo trials (Standing_for_Scaling.trc: NumFrames=50, 25 rows) say more
    frames than they hold; OpenSim 4.6 reads the rows there (TimeSeriesTable for IK, MarkerData
    for the ScaleTool), arthron refused the file and so `arthron scale --setup` on the demo.
    Now the rows are read with a warning naming the file and line 3; more rows than NumFrames
    stays an error (OpenSim's IK then reads them all, its ScaleTool only NumFrames)."""
    import opensim as osim
    from arthron.io.trc import read_trc
    osim.Logger.setLevelString("error")
    p = _short_trc(tmp_path / "short.trc", nf=50)
    with pytest.warns(ArthronWarning, match=r"short\.trc: line 3: NumFrames=50 but the file has 3"):
        tr = read_trc(p)
    tab = osim.TimeSeriesTableVec3(str(p))
    md = osim.MarkerData(str(p))
    assert tab.getNumRows() == md.getNumFrames() == tr.n_frames == 3
    ref = tab.getMatrix()
    for i in range(3):
        np.testing.assert_array_equal(tr.time[i], tab.getIndependentColumn()[i])
        for k in range(2):
            v = ref.getElt(i, k)
            np.testing.assert_array_equal(tr.positions[i, k], [v.get(0), v.get(1), v.get(2)])
    with pytest.raises(DataFileError, match="NumFrames=2 but the file has 3"):
        read_trc(_short_trc(tmp_path / "long.trc", nf=2))


@pytest.fixture(scope="module")
def gait_scale():
    from arthron.tools.scale_tool import scale_from_setup
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ArthronWarning)
        return scale_from_setup(GAIT_PIPE / "subject01_Setup_Scale.xml",
                                search_dirs=[MODELS / "Models" / "Gait2354_Simbody"])


@needs_data
def test_scale_outputs_named_alike_and_placer_off(gait_scale, tmp_path):
    """Pose2Sim's Scaling_Setup_*.xml give the ModelScaler and the MarkerPlacer one
    ``output_model_file`` (and its demo turns the MarkerPlacer off); arthron refused ('two
    outputs of this command have the same name') and wrote the placer's files when it did not
    run. OpenSim 4.6's ScaleTool writes each step's files only when the step runs, the placed
    model over the scaled one of the same name: so does arthron now."""
    from arthron.io.osim import read_osim
    # every output goes to the test's folders (write(folder)), never beside the shared setup
    st = dataclasses.replace(gait_scale.setup, scaled_model_file=GAIT_PIPE / "same.osim",
                             placer_model_file=GAIT_PIPE / "same.osim")
    paths = dataclasses.replace(gait_scale, setup=st).write(tmp_path / "a")
    same = tmp_path / "a" / "same.osim"
    assert paths.count(same) == 1 and same in paths
    back = read_osim(same)
    moved = max(np.abs(np.subtract(back.markers[n].location, gait_scale.scaled_model.markers[n].location)).max()
                for n in back.markers)
    assert moved > 1e-3                       # the placed model, not the scaled one
    for n, mk in back.markers.items():
        np.testing.assert_allclose(mk.location, gait_scale.model.markers[n].location, rtol=0, atol=1e-15)
    # MarkerPlacer off: only the ModelScaler's outputs, whatever the placer names
    off = dataclasses.replace(gait_scale.setup, placer_apply=False, scale_file=None,
                              scaled_model_file=GAIT_PIPE / "scaled.osim", placer_model_file=GAIT_PIPE / "placed.osim",
                              placer_marker_set_file=GAIT_PIPE / "m.xml", placer_motion_file=GAIT_PIPE / "q.mot")
    res = dataclasses.replace(gait_scale, setup=off, model=gait_scale.scaled_model, static_q=None)
    assert res.write(tmp_path / "o") == [tmp_path / "o" / "scaled.osim"]
    assert sorted(os.listdir(tmp_path / "o")) == ["scaled.osim"]
    # ModelScaler off: only the MarkerPlacer's outputs, whatever the scaler names (its scale set
    # too: ModelScaler::processModel writes output_scale_file, and it does not run)
    st_off = dataclasses.replace(gait_scale.setup, scaler_apply=False, scale_file=GAIT_PIPE / "scale.xml",
                                 scaled_model_file=GAIT_PIPE / "scaled.osim", placer_model_file=GAIT_PIPE / "placed.osim",
                                 placer_marker_set_file=None, placer_motion_file=None)
    assert dataclasses.replace(gait_scale, setup=st_off).write(tmp_path / "s") == [tmp_path / "s" / "placed.osim"]
    assert sorted(os.listdir(tmp_path / "s")) == ["placed.osim"]


@needs_opensim
def test_repeated_property_first_one_wins_as_opensim(tmp_path):
    """bioscout's actuators_so.xml repeats ``<point>`` and ``<optimal_force>`` in its
    PointActuators. OpenSim 4.6 reads the first element of a property, arthron read the last.
    Now the first, with a warning when the repeats differ."""
    import opensim as osim
    from arthron.io.osim import read_force_set
    osim.Logger.setLevelString("error")
    p = tmp_path / "dup.xml"
    p.write_text("""<?xml version="1.0" ?><OpenSimDocument Version="40000"><ForceSet name="x"><objects>
<PointActuator name="FX"><body>pelvis</body><point>1 2 3</point><point>4 5 6</point><direction>1 0 0</direction>
<optimal_force>1000</optimal_force><optimal_force>2000</optimal_force></PointActuator>
<CoordinateActuator name="c"><coordinate>a</coordinate><coordinate>b</coordinate>
<optimal_force>10</optimal_force><optimal_force>10</optimal_force></CoordinateActuator>
</objects></ForceSet></OpenSimDocument>""")
    with warnings.catch_warnings(record=True) as w:
        warnings.simplefilter("always")
        ours = read_force_set(p)
    msgs = [str(x.message) for x in w if issubclass(x.category, ArthronWarning)]
    # a repeat with the same value is not worth a warning (bioscout's repeats are all equal)
    assert len(msgs) == 3 and all("dup.xml: line" in m and "the first" in m for m in msgs), msgs
    fs = osim.ForceSet(str(p))
    pa = osim.PointActuator.safeDownCast(fs.get(0))
    ca = osim.CoordinateActuator.safeDownCast(fs.get(1))
    assert ours[0].optimal_force == pa.get_optimal_force() == 1000
    np.testing.assert_array_equal(ours[0].point, [pa.get_point().get(i) for i in range(3)])
    assert ours[1].coordinate == ca.get_coordinate() == "a" and ours[1].optimal_force == 10


@needs_opensim
def test_forces_outside_the_file_times_extrapolated_as_opensim(tmp_path):
    """bioscout's setup_JRA.xml analyses 2.295–6.225 s with a StaticOptimization forces file of
    a shorter time range; OpenSim's JointReaction takes the forces from
    ``Storage::getDataAtTime``, which extrapolates linearly from the first (last) two rows,
    where arthron held the end values (reactions up to 11 % off outside the file's times).
    Now ``storage_values`` equals OpenSim's Storage to rounding inside and outside, and
    ``actuator_forces`` uses it and says so."""
    import opensim as osim
    from arthron.io.osim import read_osim
    from arthron.multibody.kinematics import compile_model
    from arthron.models.forces import CoordinateActuator
    from arthron.solvers.actuators import actuator_forces, storage_values
    from arthron.tables import Table
    osim.Logger.setLevelString("error")
    rng = np.random.default_rng(4)
    t_src = np.round(np.sort(rng.uniform(1.0, 2.0, 9)), 6)
    y = rng.normal(size=(9, 2)) * 50
    p = tmp_path / "f.sto"
    p.write_text("f\nversion=1\nnRows=9\nnColumns=3\ninDegrees=no\nendheader\ntime\ta\tb\n"
                 + "".join(f"{float(t_src[i])!r}\t{float(y[i, 0])!r}\t{float(y[i, 1])!r}\n" for i in range(9)))
    st = osim.Storage(str(p))
    times = np.array([0.2, 0.9, t_src[0], 1.37, 1.5, t_src[-1], 2.3, 3.0])
    ref = np.empty((times.size, 2))
    for i, t in enumerate(times):
        v = osim.Vector(2, 0.0)
        st.getDataAtTime(float(t), 2, v)
        ref[i] = [v.get(0), v.get(1)]
    ours = np.column_stack([storage_values(times, t_src, y[:, k]) for k in range(2)])
    np.testing.assert_allclose(ours, ref, rtol=1e-13, atol=1e-12)
    assert np.abs(ours[[0, 1, 6, 7]] - np.interp(times[[0, 1, 6, 7]], t_src, y[:, 0])[:, None]).max() > 1.0
    # the JointReaction path: a CoordinateActuator's generalized force, with the warning
    model = read_osim(MODELS / "Models" / "Arm26" / "arm26.osim")
    model.forces["r_elbow_act"] = CoordinateActuator(name="r_elbow_act", coordinate="r_elbow_flex", optimal_force=1)
    tree = compile_model(model)
    tab = Table(name="f", time=t_src, labels=list(model.forces), data=np.zeros((9, len(model.forces))))
    tab.data[:, -1] = y[:, 0]
    with pytest.warns(ArthronWarning, match="extrapolated linearly"):
        gen, _ = actuator_forces(model, tree, tab, times, q=np.zeros((times.size, tree.nq)))
    np.testing.assert_allclose(gen[:, tree.coordinate_index("r_elbow_flex")], ref[:, 0], rtol=1e-13, atol=1e-12)
    # outside by the rounding of OpenSim's printed times (0.999999 for 1; a millionth of a
    # 0.01 s step): extrapolated all the same, without a warning
    t6 = np.round(np.linspace(0.0, 1.0, 101), 6)
    t6[-1] = 0.999999
    tab6 = Table(name="f", time=t6, labels=list(model.forces), data=np.zeros((101, len(model.forces))))
    with warnings.catch_warnings():
        warnings.simplefilter("error", ArthronWarning)
        actuator_forces(model, tree, tab6, np.array([0.0, 0.5, 1.0]), q=np.zeros((3, tree.nq)))


@needs_data
def test_scale_setup_that_writes_nothing_says_so(tmp_path, monkeypatch, capsys):
    """Pose2Sim 0.8's Scaling_Setup_Pose2Sim_LSTM.xml leaves the ModelScaler's outputs
    Unassigned and turns the MarkerPlacer off: OpenSim 4.6's ScaleTool then writes nothing (and
    returns false); `arthron scale --setup` wrote nothing and said nothing. Now it fails in
    one line naming the setup and the elements to set."""
    from arthron.cli import main
    raw = (GAIT_PIPE / "subject01_Setup_Scale.xml").read_text()
    start = raw.index("<MarkerPlacer")
    scaler, placer = raw[:start], raw[start:]
    for tag in ("output_model_file", "output_scale_file"):
        scaler = re.sub(rf"<{tag}>[^<]*</{tag}>", f"<{tag}>Unassigned</{tag}>", scaler)
    placer = re.sub(r"<apply>\s*true\s*</apply>", "<apply>false</apply>", placer, count=1)
    p = tmp_path / "setup.xml"
    p.write_text(scaler + placer)
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ArthronWarning)
        status = main(["scale", "--setup", str(p), "--search-dir", str(GAIT_PIPE),
                       "--search-dir", str(MODELS / "Models" / "Gait2354_Simbody")])
    err = capsys.readouterr().err
    assert status == 2 and "Traceback" not in err
    assert f"arthron: error: {p}: nothing to write" in err
    assert "<output_model_file>" in err and "MarkerPlacer is off" in err
    assert sorted(os.listdir(tmp_path)) == ["setup.xml"]


_WRITE_NO_RATE = """
import sys, numpy as np, ezc3d
c = ezc3d.c3d()
c["parameters"]["POINT"]["RATE"]["value"] = [float(sys.argv[2])]
c["parameters"]["POINT"]["LABELS"]["value"] = ("A",)
p = np.ones((4, 1, 6))
c["data"]["points"] = p
c.write(sys.argv[1])
"""


def test_c3d_without_a_sampling_rate_is_one_clear_error(tmp_path, monkeypatch, capsys):
    """biomdp's Kistler force-plate files (kistler_CMJ_1plate.c3d ...) have POINT:RATE and
    ANALOG:RATE 0: `arthron c3d` divided by 0 (a numpy warning) and then failed naming the
    TRC it was writing ('time must be finite'). Now one error naming the C3D and POINT:RATE,
    nothing written; a positive rate still reads."""
    import subprocess
    import sys
    from arthron.cli import main
    from arthron.io.c3d import read_c3d
    # written in a child process (ezc3d's writer shadows OpenSim's SWIG types, see test_c3d)
    zero, good = tmp_path / "norate.c3d", tmp_path / "rate.c3d"
    subprocess.run([sys.executable, "-c", _WRITE_NO_RATE, str(good), "50"], check=True)
    # ezc3d writes no rate 0: every float32 50.0 (the rates; the data are ones) set to 0
    raw = good.read_bytes()
    fifty = np.float32(50).tobytes()
    assert raw.count(fifty) >= 2             # header, POINT:RATE (and ANALOG:RATE)
    zero.write_bytes(raw.replace(fifty, np.float32(0).tobytes()))
    with pytest.raises(DataFileError, match="is 0: the file's 6 frames have no sampling rate") as e:
        read_c3d(zero)
    assert e.value.path == str(zero) and e.value.where == "POINT:RATE"
    np.testing.assert_allclose(read_c3d(good).markers.time, np.arange(6) / 50)
    monkeypatch.chdir(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error")          # no numpy division warning on the way
        assert main(["c3d", str(zero), "-o", str(tmp_path / "out")]) == 2
    err = capsys.readouterr().err
    assert f"arthron: error: {zero}: POINT:RATE" in err and "Traceback" not in err
    assert not (tmp_path / "out").exists()


@needs_data
def test_scale_setup_missing_file_names_its_element(tmp_path):
    """bioscout's setup_scale.xml names its marker set by a Windows path of the author's
    machine: the error said 'file ... does not exist' without saying which of the ScaleTool's
    five file properties; now it names it (GenericModelMaker/marker_set_file)."""
    from arthron.tools.scale_tool import read_scale_setup
    raw = (GAIT_PIPE / "subject01_Setup_Scale.xml").read_text()
    raw = re.sub(r"<marker_set_file>[^<]*</marker_set_file>",
                 "<marker_set_file>C:/Git/models/P03/FINAL_MARKERSET.xml</marker_set_file>", raw)
    p = tmp_path / "setup.xml"
    p.write_text(raw)
    with pytest.raises(DataFileError, match=r"<GenericModelMaker/marker_set_file> 'C:/Git/models/P03/FINAL_MARKERSET.xml'"):
        read_scale_setup(p, search_dirs=[GAIT_PIPE, MODELS / "Models" / "Gait2354_Simbody"])


_HIDDEN_DOC = """<?xml version="1.0" encoding="UTF-8" ?><OpenSimDocument Version="40000"><Model name="hide">
<Ground name="ground"><attached_geometry><Mesh name="floor"><socket_frame>..</socket_frame>
<mesh_file>tri.obj</mesh_file><Appearance><visible>false</visible></Appearance></Mesh></attached_geometry></Ground>
<BodySet><objects><Body name="b"><mass>1</mass><mass_center>0 0 0</mass_center><inertia>1 1 1 0 0 0</inertia>
<attached_geometry><Mesh name="bone"><socket_frame>..</socket_frame><mesh_file>tri.obj</mesh_file></Mesh>
<Mesh name="skin"><socket_frame>..</socket_frame><mesh_file>tri.obj</mesh_file>
<Appearance><visible>false</visible><opacity>0.3</opacity></Appearance></Mesh></attached_geometry>
<components><PhysicalOffsetFrame name="b_off"><socket_parent>/bodyset/b</socket_parent>
<translation>0 0.05 0</translation><orientation>0 0 0</orientation><attached_geometry>
<Mesh name="frame_hidden"><socket_frame>..</socket_frame><mesh_file>tri.obj</mesh_file>
<Appearance><visible>false</visible></Appearance></Mesh>
<Mesh name="frame_shown"><socket_frame>..</socket_frame><mesh_file>tri.obj</mesh_file></Mesh>
</attached_geometry></PhysicalOffsetFrame></components>
<WrapObjectSet><objects>
<WrapCylinder name="Cylinder"><translation>0.1 0 0</translation><quadrant>all</quadrant>
<Appearance><visible>false</visible></Appearance><radius>0.17</radius><length>0.26</length></WrapCylinder>
<WrapSphere name="ball"><translation>0 0.1 0</translation><radius>0.05</radius></WrapSphere>
</objects></WrapObjectSet></Body></objects></BodySet>
<JointSet><objects><PinJoint name="j"><socket_parent_frame>/ground</socket_parent_frame>
<socket_child_frame>/bodyset/b</socket_child_frame><coordinates><Coordinate name="q"/></coordinates></PinJoint></objects></JointSet>
</Model></OpenSimDocument>"""


@needs_opensim
def test_invisible_geometry_and_wrap_objects_not_drawn_as_opensim(tmp_path):
    """Pose2Sim 0.8's Model_Pose2Sim_SKEL.osim hides its torso wrap cylinder, chest and abdomen
    ellipsoids and a skin mesh (``<Appearance><visible>false</visible>``); OpenSim 4.6 draws
    none of them, `arthron show` drew them all (a 0.17 m cylinder across the trunk). Now the
    scene holds what OpenSim's generateDecorations gives decorations for; `info` still counts
    every referenced mesh."""
    import opensim as osim
    from arthron.io.mesh import hidden_wrap_objects, model_geometry
    from arthron.io.osim import read_osim
    from arthron.multibody.kinematics import compile_model
    from arthron.render import ModelScene
    osim.Logger.setLevelString("error")
    (tmp_path / "tri.obj").write_text("v 0 0 0\nv 0.1 0 0\nv 0 0.1 0\nf 1 2 3\n")
    p = tmp_path / "hide.osim"
    p.write_text(_HIDDEN_DOC)
    m = osim.Model(str(p))
    s = m.initSystem()
    hints = m.getDisplayHints()
    drawn = set()
    body = m.getBodySet().get("b")
    frame = osim.PhysicalOffsetFrame.safeDownCast(m.getComponent("/bodyset/b/b_off"))
    for owner, geoms in (("/ground", m.getGround()), ("/bodyset/b", body), ("/bodyset/b/b_off", frame)):
        for i in range(geoms.getPropertyByName("attached_geometry").size()):
            g = geoms.get_attached_geometry(i)
            arr = osim.ArrayDecorativeGeometry()
            g.generateDecorations(True, hints, s, arr)
            if arr.size():
                drawn.add(g.getName())
    ws = body.getWrapObjectSet()
    for i in range(ws.getSize()):
        arr = osim.ArrayDecorativeGeometry()
        ws.get(i).generateDecorations(True, hints, s, arr)
        if arr.size():
            drawn.add(ws.get(i).getName())
    assert drawn == {"bone", "ball", "frame_shown"}
    model = read_osim(p)
    assert {g.name for _, g, _ in model_geometry(model)} == {"floor", "bone", "skin", "frame_hidden", "frame_shown"}
    assert {g.name for _, g, _ in model_geometry(model, visible_only=True)} == {"bone", "frame_shown"}
    assert hidden_wrap_objects(model) == {("b", "Cylinder")}
    scene = ModelScene.build(model, np.zeros((1, compile_model(model).nq)))
    assert {name for *_, name in scene.bodies} | {w[-1] for w in scene.wraps} == drawn


@needs_data
def test_tool_and_analysis_names_that_are_paths_are_refused(tmp_path):
    """A setup's tool name or analysis name becomes the start of result file names; one with a
    path in it (``../esc``) would put them outside results_directory (OpenSim 4.6 drops the
    directory with a warning from most files but writes StaticOptimization's controls .xml
    there). arthron refuses it before solving, naming the setup file and the element, and
    writes nothing; an empty analysis name still passes, as in OpenSim."""
    import shutil
    from arthron.tools.analyze_setup import read_analyze_setup
    from arthron.tools.ik_tool import run_ik_from_setup
    from conftest import REF
    from arthron.tools.static_optimization_tool import run_static_optimization_from_setup
    w = tmp_path / "arm26"
    (w / "results" / "IK").mkdir(parents=True)
    src = MODELS / "Tutorials" / "Computed_Muscle_Control" / "InverseKinematics"
    shutil.copy(src / "arm26.osim", w)
    shutil.copy(src / "arm26_elbow_flex.trc", w)
    shutil.copy(REF / "task1_arm26" / "IK" / "arm26_InverseKinematics.mot", w / "results" / "IK")
    setups = REF / "task1_arm26" / "setups"
    ik = (setups / "ik_setup.xml").read_text().replace("<workdir>", str(tmp_path))
    so = (setups / "so_setup_physiological.xml").read_text().replace("<workdir>", str(tmp_path))
    cases = [("ik", ik.replace('name="arm26">', 'name="../esc">', 1),
              r"<InverseKinematicsTool name='../esc'>: name '../esc': a name for the output files, not a path"),
             ("so", so.replace('<AnalyzeTool name="arm26">', '<AnalyzeTool name="sub/esc">'),
              r"<AnalyzeTool name='sub/esc'>: name 'sub/esc'"),
             ("so", so.replace('<StaticOptimization name="StaticOptimization">',
                               '<StaticOptimization name="..">'),
              r"<StaticOptimization name='..'> \(line \d+\): name '..'")]
    for i, (tool, text, msg) in enumerate(cases):
        p = tmp_path / f"setup{i}.xml"
        p.write_text(text)
        before = sorted(tmp_path.rglob("*"))
        with pytest.raises(DataFileError, match=re.escape(str(p)) + ": " + msg):
            (run_ik_from_setup(p).write() if tool == "ik" else run_static_optimization_from_setup(p))
        assert sorted(tmp_path.rglob("*")) == before
    p = tmp_path / "empty.xml"
    p.write_text(so.replace('<StaticOptimization name="StaticOptimization">', '<StaticOptimization name="">'))
    assert read_analyze_setup(p).analyses[0][1].get("name") == ""
