"""Marker-based scaling (ScaleTool) against OpenSim 4.6: Gait2354 setup, Thoracoscapular manual
scaling, bad input."""
from __future__ import annotations

import re
import warnings

import numpy as np
import pytest

from conftest import GAIT_PIPE, MODELS, REF, TSM, needs_data, needs_opensim

from arthron.errors import ArthronWarning, DataFileError, ModelFileError

SETUP = GAIT_PIPE / "subject01_Setup_Scale.xml"
DIRS = [MODELS / "Models" / "Gait2354_Simbody"]
T2 = REF / "task2_gait2354"


@pytest.fixture(scope="module")
def gait():
    from arthron.tools.scale_tool import scale_from_setup
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ArthronWarning)  # patella_r/l named by the setup
        return scale_from_setup(SETUP, search_dirs=DIRS)


def _generic():
    from arthron.io.osim import read_osim
    from arthron.tools.scale_tool import read_marker_set
    model = read_osim(DIRS[0] / "gait2354_simbody.osim")
    model.markers.update(read_marker_set(GAIT_PIPE / "gait2354_Scale_MarkerSet.xml", model))
    return model


def _d(a, b):
    return float(np.max(np.abs(np.asarray(a, float) - np.asarray(b, float))))


def _compare_models(ours, ref, markers=True):
    out = {"mass": 0.0, "inertia": 0.0, "com": 0.0, "frames": 0.0, "markers": 0.0,
           "path_points": 0.0, "functions": 0.0, "lengths": 0.0}
    for k, b in ours.bodies.items():
        r = ref.bodies[k]
        out["mass"] = max(out["mass"], abs(b.mass - r.mass) / r.mass)
        out["inertia"] = max(out["inertia"], _d(b.inertia, r.inertia) / np.abs(r.inertia).max())
        out["com"] = max(out["com"], _d(b.mass_center, r.mass_center))
    for k, f in ours.frames.items():
        out["frames"] = max(out["frames"], _d(f.translation, ref.frames[k].translation))
    if markers:
        assert set(ours.markers) == set(ref.markers)
        for k, m in ours.markers.items():
            assert m.parent_frame == ref.markers[k].parent_frame
            out["markers"] = max(out["markers"], _d(m.location, ref.markers[k].location))
    x = np.linspace(-2.0, 0.3, 40)
    for k, f in ours.forces.items():
        g = ref.forces[k]
        if f.path is not None:
            for p, q in zip(f.path.points, g.path.points):
                if p.kind == "MovingPathPoint":
                    for fa, fb in zip(p.location_functions, q.location_functions):
                        if fa is not None:
                            assert type(fa).__name__ == type(fb).__name__ == "MultiplierFunction"
                            out["functions"] = max(out["functions"], _d(fa.value(x), fb.value(x)))
                else:
                    out["path_points"] = max(out["path_points"], _d(p.location, q.location))
        for pn in ("optimal_fiber_length", "tendon_slack_length"):
            if pn in f.properties:
                out["lengths"] = max(out["lengths"], abs(f.properties[pn] - g.properties[pn]))
    for j in ours.joints.values():
        if j.spatial_transform:
            for a, b in zip(j.spatial_transform[3:], ref.joints[j.name].spatial_transform[3:]):
                if a.function is None and b.function is None:
                    continue
                assert type(a.function).__name__ == type(b.function).__name__, (j.name, a.name)
                out["functions"] = max(out["functions"], _d(a.function.value(x), b.function.value(x)))
    return out


@needs_data
def test_scale_set_equals_opensim(gait, tmp_path):
    """All 37 rows (ground, bodies, offset frames with duplicate names) as 4.6 prints them."""
    from arthron.tools.scale_tool import write_scale_set
    p = write_scale_set(tmp_path / "s.xml", gait.scale_set)
    ref = re.findall(r"<scales>([^<]*)</scales>\s*<segment>([^<]*)</segment>",
                     (T2 / "subject01_scaleSet_applied.xml").read_text())
    mine = re.findall(r"<scales>([^<]*)</scales>\s*<segment>([^<]*)</segment>", p.read_text())
    assert mine == ref and len(mine) == 37
    # and numerically within the 6 printed digits
    for (sc, _), e in zip(ref, gait.scale_set):
        np.testing.assert_allclose(e.factors, [float(v) for v in sc.split()], rtol=5e-6)


@needs_data
def test_scaled_model_equals_opensim(gait):
    from arthron.io.osim import read_osim
    w = _compare_models(gait.scaled_model, read_osim(T2 / "subject01_scaledOnly.osim"))
    assert w["mass"] < 1e-12 and w["inertia"] < 1e-12, w
    for k in ("com", "frames", "markers", "path_points", "functions", "lengths"):
        assert w[k] < 1e-12, (k, w)
    # 45 MultiplierFunctions as 4.6 writes them (11 joints x 3 + 4 moving points x 3)
    assert abs(gait.scaled_model.total_mass() - 72.6) < 1e-12


@needs_data
def test_placed_model(gait):
    """MarkerPlacer: the model other than markers equals 4.6's; the placed markers follow the
    static pose, which differs from 4.6's (its assembler stops early, see below)."""
    from arthron.io.osim import read_osim
    ref = read_osim(T2 / "subject01_simbody.osim")
    w = _compare_models(gait.model, ref)
    for k in ("mass", "inertia", "com", "frames", "path_points", "functions", "lengths"):
        assert w[k] < 1e-12, (k, w)
    assert w["markers"] < 0.01, w
    # coordinate tasks (weight 1000) honoured as in 4.6: subtalar = 0, lumbar_extension = 0
    q = dict(zip(gait.model.coordinates, gait.static_q))
    for n in ("subtalar_angle_r", "subtalar_angle_l", "lumbar_extension"):
        assert abs(q[n]) < 1e-6


@needs_data
def test_static_pose_is_the_optimum(gait):
    """Our static pose has a lower IK cost than 4.6's (its MarkerPlacer IK stops before the
    optimum; the difference is in poorly observed lumbar and pelvis angles)."""
    from arthron.io.sto import read_sto
    from arthron.io.trc import read_trc
    from arthron.solvers.scaling import average_static
    from arthron.solvers.inverse_kinematics import InverseKinematics
    from arthron.tools.ik_tool import read_ik_tasks
    s = gait.setup
    static = read_trc(s.placer_marker_file)
    avg = average_static(static, s.placer_time_range)
    sm = gait.scaled_model.copy()
    for n in list(sm.markers):
        if n not in static.labels:
            del sm.markers[n]
    ik = InverseKinematics(sm, read_ik_tasks(s.ik_task_set, sm, None, s.path), np.inf, static.labels)
    obs = np.array([avg[static.labels.index(n)] for n in ik.marker_names])
    st = read_sto(T2 / "subject01_static_output.mot")
    qo = np.array([st.column(f"/jointset/{c.joint}/{c.name}/value")[0]
                   for c in sm.coordinates.values()])

    def cost(q):
        P, _ = ik.chain.evaluate(q, None, False)
        c = np.sum(ik.marker_weights * np.sum((P - obs) ** 2, 1)) / ik.marker_weights.sum()
        ref = ik.coordinate_targets(0, ik.tree.default_q)
        return c + np.sum(np.array(ik.ctask_w) * (q[ik.ctask_idx] - ref) ** 2)
    assert cost(gait.static_q) < cost(qo)


@needs_data
@needs_opensim
def test_static_pose_equals_converged_opensim(gait):
    """OpenSim 4.6's InverseKinematicsSolver on its own scaled model, the static row the
    MarkerPlacer uses and the setup's tasks, at accuracy 1e-12, lands on our static pose."""
    import opensim as osim
    osim.Logger.setLevelString("error")
    m = osim.Model(str(T2 / "subject01_scaledOnly.osim"))
    tab = osim.TimeSeriesTableVec3(str(gait.setup.placer_marker_file))
    names = osim.ArrayStr()
    for lab in tab.getColumnLabels():
        names.append(lab)
    m.deleteUnusedMarkers(names)
    s = m.initSystem()
    row = tab.averageRow(1.0, 1.01)
    one = osim.TimeSeriesTableVec3()
    one.setColumnLabels(tab.getColumnLabels())
    one.appendRow(1.0, row)
    one.addTableMetaDataString("Units", "mm")
    ws = osim.SetMarkerWeights()
    crefs = osim.SimTKArrayCoordinateReference()
    for e in gait.setup.ik_task_set.find("objects"):
        if e.tag == "IKMarkerTask" and e.findtext("apply").strip() == "true":
            ws.cloneAndAppend(osim.MarkerWeight(e.get("name"), float(e.findtext("weight"))))
        elif e.tag == "IKCoordinateTask":
            cr = osim.CoordinateReference(e.get("name"), osim.Constant(0.0))
            cr.setWeight(float(e.findtext("weight")))
            crefs.push_back(cr)
    ik = osim.InverseKinematicsSolver(m, osim.MarkersReference(one, ws, osim.Units("m")), crefs,
                                      float("inf"))
    ik.setAccuracy(1e-12)
    s.setTime(1.0)
    ik.assemble(s)
    cs = m.getCoordinateSet()
    q = np.array([cs.get(i).getValue(s) for i in range(cs.getSize())])
    assert np.abs(q - gait.static_q).max() < 1e-6


@needs_data
@needs_opensim
def test_opensim_loads_written_model(gait, tmp_path):
    """4.6 loads arthron's scaled and placed models and puts the markers where arthron does."""
    import oracle
    from arthron.multibody.kinematics import compile_model, marker_positions
    paths = gait.write(tmp_path)
    names = {p.name for p in paths}
    assert {"subject01_scaledOnly.osim", "subject01_scaleSet_applied.xml",
            "subject01_simbody.osim", "subject01_static_output.mot"} <= names
    for model, fname in ((gait.scaled_model, "subject01_scaledOnly.osim"),
                         (gait.model, "subject01_simbody.osim")):
        om, s = oracle.load(tmp_path / fname)
        tree = compile_model(model)
        mk_names, P = marker_positions(tree, tree.default_q[None])
        ms = om.getMarkerSet()
        for i, n in enumerate(mk_names):
            pg = oracle.vec(ms.get(n).getLocationInGround(s))
            assert _d(pg, P[0, i]) < 1e-9, n
        assert abs(om.getTotalMass(s) - 72.6) < 1e-9


@needs_data
@needs_opensim
def test_thoracoscapular_manual_scaling_matches_opensim(tmp_path):
    """Non-uniform manual factors on every body of the Thoracoscapular shoulder model:
    ellipsoid radii, wrap objects, inertias (cylinder rule), frames, path points, constraint
    locations as OpenSim 4.6's Model::scale."""
    import opensim as osim
    import oracle
    from arthron.io.osim import read_osim
    from arthron.solvers.scaling import scale_model
    m = read_osim(TSM)
    fac = {b: np.array([1.1, 0.9, 1.2]) * (1 + 0.05 * i) for i, b in enumerate(m.bodies)}
    fac["thorax"] = np.array([1.1, 0.95, 1.05])
    om, s = oracle.load(TSM)
    ss = osim.ScaleSet()
    for b, f in list(fac.items()) + [("ground", np.ones(3))]:
        sc = osim.Scale()
        sc.setSegmentName(b)
        sc.setScaleFactors(osim.Vec3(*f))
        sc.setApply(True)
        ss.cloneAndAppend(sc)
    om.scale(s, ss, False, -1.0)
    out = tmp_path / "tsm_osim.osim"
    om.printToXML(str(out))
    ref = read_osim(out)
    sm = scale_model(m, fac, preserve_mass_distribution=False)
    st, st_ref = sm.joints["scapulothoracic"].parameters, ref.joints["scapulothoracic"].parameters
    for k in ("thoracic_ellipsoid_radii_x_y_z", "scapula_winging_axis_origin"):
        assert _d(st[k], st_ref[k]) < 1e-15
    assert _d(st["thoracic_ellipsoid_radii_x_y_z"], [0.0829975 * 1.1, 0.199991 * 0.95, 0.083001 * 1.05]) < 1e-12
    kinds = set()
    for b in sm.bodies.values():
        for w, w2 in zip(b.wrap_objects, ref.bodies[b.name].wrap_objects):
            kinds.add(w.type)
            assert _d(w.translation, w2.translation) < 1e-15
            for k, v in w.dimensions.items():
                assert _d(v, w2.dimensions[k]) < 1e-15, (w.name, k)
    assert kinds == {"WrapSphere", "WrapCylinder", "WrapEllipsoid"}
    for c, c2 in zip(sm.constraints, ref.constraints):
        for k, v in c.properties.items():
            if k.startswith("location"):
                assert _d(v, c2.properties[k]) < 1e-15
    w = _compare_models(sm, ref)
    for k in ("mass", "inertia", "com", "frames", "markers", "path_points", "functions"):
        assert w[k] < 1e-12, (k, w)
    # Muscle lengths scale by the default-pose path-length ratio computed by
    # arthron.multibody.paths: exact for paths without wrap objects; wrapping paths depend on
    # that module's wrapping (Infraspinatus_I differs there from OpenSim's lengths by 2 %).
    n = 0
    for k, f in sm.forces.items():
        if "optimal_fiber_length" in f.properties and not f.path.wraps:
            r = ref.forces[k].properties["optimal_fiber_length"]
            assert abs(f.properties["optimal_fiber_length"] - r) / r < 1e-9, k
            n += 1
    assert n >= 3


@needs_data
def test_inertia_cylinder_rule():
    """Non-uniform factors: cylinder about the smallest moment (README 'Scaling rules')."""
    from arthron.solvers.scaling import _inertia_scaled
    m = 2.0
    I = np.diag([0.01, 0.002, 0.01]) + np.array([[0, 1e-4, 0], [1e-4, 0, 2e-5], [0, 2e-5, 0]])
    s = np.array([1.1, 1.3, 0.9])
    out = _inertia_scaled(I, m, m, s, False)
    r2 = 2 * 0.002 / m
    L2 = 12 * (0.01 - m * r2 / 4) / m
    L2s, r2s = L2 * 1.3 ** 2, r2 * 1.1 * 0.9
    np.testing.assert_allclose(np.diag(out), [m * (L2s / 12 + r2s / 4), m * r2s / 2, m * (L2s / 12 + r2s / 4)])
    assert out[0, 1] == pytest.approx(1e-4 * 1.1 * 1.3) and out[1, 2] == pytest.approx(2e-5 * 1.3 * 0.9)
    np.testing.assert_allclose(_inertia_scaled(I, m, m, np.full(3, 1.2), False), I * 1.44)


@needs_data
def test_bad_input(tmp_path):
    from arthron.io.osim import read_osim
    from arthron.io.trc import read_trc
    from arthron.solvers.scaling import Measurement, ScaleEntry, compute_scale_set, scale_model
    from arthron.tools.scale_tool import scale_from_setup
    model = _generic()
    trial = read_trc(GAIT_PIPE / "subject01_static.trc")
    # static trial lacks a marker of the measurement
    meas = [Measurement("pelvis", [("R.ASIS", "Nope")], [("pelvis", "XYZ")])]
    model.markers["Nope"] = model.markers["R.ASIS"].__class__("Nope", "/bodyset/pelvis", np.zeros(3))
    with pytest.raises(DataFileError, match="Nope"):
        compute_scale_set(model, measurements=meas, static_trial=trial, time_range=(1, 2))
    # the model lacks a marker of the measurement
    meas = [Measurement("pelvis", [("R.ASIS", "Gone")], [("pelvis", "XYZ")])]
    with pytest.raises(ModelFileError, match="Gone"):
        compute_scale_set(model, measurements=meas, static_trial=trial, time_range=(1, 2))
    # all-NaN marker in the time range
    P = trial.positions.copy()
    P[:, trial.labels.index("L.ASIS")] = np.nan
    bad = type(trial)(**{**trial.__dict__, "positions": P})
    meas = [Measurement("pelvis", [("R.ASIS", "L.ASIS")], [("pelvis", "XYZ")])]
    with pytest.raises(DataFileError, match="L.ASIS"):
        compute_scale_set(model, measurements=meas, static_trial=bad, time_range=(1, 2))
    # a manual scale naming a body the model lacks
    with pytest.raises(ModelFileError, match="femur_x"):
        compute_scale_set(model, scaling_order=("manualScale",),
                          manual=[ScaleEntry("femur_x", np.ones(3))])
    with pytest.raises(ModelFileError, match="femur_x"):
        scale_model(model, {"femur_x": [1, 1, 1]})
    # a measurement body the model lacks is ignored with a warning (OpenSim's behaviour; the
    # shipped gait2354 setup names patella_r/l)
    meas = [Measurement("pelvis", [("R.ASIS", "L.ASIS")], [("patella_r", "XYZ")])]
    with pytest.warns(ArthronWarning, match="patella_r"):
        compute_scale_set(model, measurements=meas, static_trial=trial, time_range=(1, 2))
    # a setup whose model file does not exist
    txt = SETUP.read_text().replace("gait2354_simbody.osim", "missing_model.osim")
    p = tmp_path / "setup.xml"
    p.write_text(txt)
    with pytest.raises(DataFileError, match="missing_model"):
        scale_from_setup(p)


@needs_data
def test_measurement_gaps_and_frame_range():
    """Frames where a pair is missing are skipped; the frame range brackets the time range
    like MarkerData::findFrameRange."""
    from arthron.io.osim import read_osim
    from arthron.io.trc import read_trc
    from arthron.solvers.scaling import Measurement, frame_range, measurement_factor
    trial = read_trc(GAIT_PIPE / "subject01_static.trc")
    assert frame_range(trial.time, 1.0, 1.01) == (60, 61)
    assert frame_range(trial.time, -1, -1)[0] == 0
    model = _generic()
    meas = Measurement("pelvis", [("R.ASIS", "L.ASIS")], [("pelvis", "XYZ")])
    f = measurement_factor(model, trial, meas, (1, 2))
    P = trial.positions.copy()
    P[70, trial.labels.index("L.ASIS")] = np.nan
    g = measurement_factor(model, type(trial)(**{**trial.__dict__, "positions": P}), meas, (1, 2))
    assert g != f and abs(g - f) < 1e-3


# ------------------------------------------------------------------------ anthropometric (seed 001)
def test_seed001_generic_subject_figures():
    """Seed 001's generic subject (1.86 m, 85.5 kg): arm (upper arm + forearm) 3.51 kg male,
    2.99 kg female; body muscle fraction 77.67 % vs 67.36 %."""
    from arthron.solvers.scaling import DUMAS2007_MASS_PERCENT, body_muscle_fraction
    assert body_muscle_fraction(85.5, 1.86, "male") == pytest.approx(0.7767, abs=5e-5)
    assert body_muscle_fraction(85.5, 1.86, "f") == pytest.approx(0.6736, abs=5e-5)
    for g, want in (("male", 3.51), ("female", 2.99)):
        t = DUMAS2007_MASS_PERCENT[g]
        assert 85.5 * (t["arm"] + t["forearm"]) / 100 == pytest.approx(want, abs=0.005)
        # the two arms, two legs and the axial segments make up the body
        tot = t["head_neck"] + t["torso"] + t["pelvis"] + 2 * sum(
            t[k] for k in ("arm", "forearm", "hand", "thigh", "leg", "foot"))
        assert tot == pytest.approx(100.0, abs=0.3)


def test_dumas2007_table_as_published():
    """Dumas, Chèze & Verriest 2007's segment masses as its Table 2 prints them (HuMoD's and
    OpenMA's implementations agree on every entry): the female pelvis is 14.6 % (14.7 is Dumas &
    Wojtusch 2018's revision), and a whole body is 100.2 % of the body mass for men, 99.9 % for
    women (the table's rounding; not normalized: the shoulder–elbow model paper's arm weights
    are the printed fractions, test_seed001_generic_subject_figures); a model whose bodies all
    map weighs that share of the subject's mass."""
    from arthron.io.osim import read_osim
    from arthron.solvers.dumas2007 import DUMAS2007_BODY_PERCENT
    from arthron.solvers.scaling import DUMAS2007_MASS_PERCENT, segment_masses
    assert DUMAS2007_MASS_PERCENT["female"]["pelvis"] == 14.6
    assert DUMAS2007_MASS_PERCENT["male"]["pelvis"] == 14.2
    assert DUMAS2007_BODY_PERCENT == {"male": 100.2, "female": 99.9}
    if GAIT_PIPE.is_dir():           # Gait2354: every body maps (its torso carries the arms)
        m = read_osim(GAIT_PIPE.parent.parent / "Models" / "Gait2354_Simbody" / "gait2354_simbody.osim")
        for g, share in (("m", 1.002), ("f", 0.999)):
            ms = segment_masses(m, 60.0, g)
            assert set(ms) == set(m.bodies)
            assert sum(ms.values()) == pytest.approx(60.0 * share, rel=1e-12)


@needs_data
def test_anthropometric_on_thoracoscapular():
    from arthron.io.osim import read_osim
    from arthron.solvers.scaling import scale_anthropometric, segment_masses
    m = read_osim(TSM)
    for g, want in (("m", 3.51), ("f", 2.99)):
        ms = segment_masses(m, 85.5, g)
        assert ms["humerus"] + ms["ulna"] + ms["radius"] == pytest.approx(want, abs=0.005)
    sm, rep = scale_anthropometric(m, 70.0, 1.75, "female", generic_mass=85.5, generic_height=1.86,
                                   generic_gender="male", shoulder_width=0.36,
                                   generic_shoulder_width=0.40, keep_max_isometric_force={"TeresMajor": 123.0})
    # S of seed Eq. 13 with the height along y (OpenSim frames)
    np.testing.assert_allclose(rep["S"], [0.9, 1.75 / 1.86, 0.9])
    # ribcage ellipsoid (seed Eq. 14): the generic radii dilated isotropically (not × S) so that
    # the scaled gliding point lies on it; centre S e0
    st0 = m.joints["scapulothoracic"].parameters["thoracic_ellipsoid_radii_x_y_z"]
    st1 = sm.joints["scapulothoracic"].parameters["thoracic_ellipsoid_radii_x_y_z"]
    rib = rep["ribcage"]["scapulothoracic"]
    np.testing.assert_allclose(st1 - st0, rib["delta"], rtol=0, atol=1e-15)
    assert -0.02 < rib["delta"] < 0                  # a smaller subject: the ribcage shrinks
    _, X0 = m.frame_in_base("/jointset/scapulothoracic/thorax_offset")
    _, X1 = sm.frame_in_base("/jointset/scapulothoracic/thorax_offset")
    np.testing.assert_allclose(X1.p, rep["S"] * X0.p, rtol=1e-15)
    d = X1.R.T @ (rib["landmark"] - X1.p)
    assert abs(np.sum((d / st1) ** 2) - 1.0) < 1e-12
    om, _ = scale_anthropometric(m, 70.0, 1.75, "female", generic_mass=85.5, generic_height=1.86,
                                 shoulder_width=0.36, generic_shoulder_width=0.40, ribcage="opensim")
    np.testing.assert_allclose(om.joints["scapulothoracic"].parameters["thoracic_ellipsoid_radii_x_y_z"],
                               st0 * rep["S"])
    assert sm.bodies["humerus"].mass == pytest.approx(70.0 * 0.022)
    # PCSA (max isometric force) by the r_m ratio, user values kept
    ratio = rep["r_m"] / rep["r_m_generic"]
    for n, f in sm.forces.items():
        if f.is_muscle and n != "TeresMajor":
            assert f.properties["max_isometric_force"] == pytest.approx(
                m.forces[n].properties["max_isometric_force"] * ratio)
    assert sm.forces["TeresMajor"].properties["max_isometric_force"] == 123.0
    # inertia: geometric (cylinder rule for anisotropic S) times the mass ratio
    from arthron.solvers.scaling import _inertia_scaled
    b0, b1 = m.bodies["humerus"], sm.bodies["humerus"]
    np.testing.assert_allclose(b1.inertia, _inertia_scaled(b0.inertia, b0.mass, b0.mass, rep["S"], False)
                               * (b1.mass / b0.mass), rtol=1e-12)


@needs_data
@needs_opensim
def test_anthropometric_model_loads_in_opensim(tmp_path):
    import oracle
    from arthron.io.osim import read_osim, write_osim
    from arthron.solvers.scaling import scale_anthropometric
    m = read_osim(GAIT_PIPE.parent.parent / "Models" / "Gait2354_Simbody" / "gait2354_simbody.osim")
    sm, rep = scale_anthropometric(m, 60.0, 1.62, "f", generic_height=1.80)
    p = write_osim(tmp_path / "anthro.osim", sm)
    om, s = oracle.load(p)
    # Dumas et al. 2007's female fractions sum to 99.9 % (test_dumas2007_table_as_published)
    assert om.getTotalMass(s) == pytest.approx(rep["total_mass"], rel=1e-12)
    assert rep["total_mass"] == pytest.approx(60.0 * 0.999, rel=1e-9)


@needs_data
def test_anthropometric_bad_input():
    from arthron.io.osim import read_osim
    from arthron.solvers.scaling import scale_anthropometric
    m = read_osim(GAIT_PIPE.parent.parent / "Models" / "Gait2354_Simbody" / "gait2354_simbody.osim")
    with pytest.raises(DataFileError, match="gender"):
        scale_anthropometric(m, 60, 1.6, "x", generic_height=1.8)
    with pytest.raises(DataFileError, match="positive"):
        scale_anthropometric(m, -1, 1.6, "m", generic_height=1.8)
    with pytest.raises(DataFileError, match="generic_height"):
        scale_anthropometric(m, 60, 1.6, "m")  # no markers in the generic model
    with pytest.raises(ModelFileError, match="nobody"):
        scale_anthropometric(m, 60, 1.6, "m", generic_height=1.8, segment_map={"nobody": ("arm",)})


@needs_data
def test_landmark_factors_from_static_trial():
    """Per-segment factors from the markers of each body (seed 001 with a static trial)."""
    from arthron.io.trc import read_trc
    from arthron.solvers.scaling import landmark_factors, scale_anthropometric
    m = _generic()
    st = read_trc(GAIT_PIPE / "subject01_static.trc")
    f = landmark_factors(m, st, (1, 2))
    assert {"pelvis", "femur_r", "tibia_r", "torso"} <= set(f)
    assert all(0.8 < v < 1.4 for v in f.values())
    sm, rep = scale_anthropometric(m, 72.6, 1.8034, "m",
                                   segment_factors={b: [v] * 3 for b, v in f.items()})
    k = f["femur_r"]
    np.testing.assert_allclose(sm.bodies["femur_r"].mass_center, m.bodies["femur_r"].mass_center * k)


@needs_data
def test_marker_placer_output_marker_file(gait, tmp_path):
    """MarkerPlacer ``output_marker_file``: the setup's name is read; the placed markers are
    written as a 4.x MarkerSet that reads back to the same markers (and OpenSim loads it, see
    the next test)."""
    import dataclasses
    from arthron.tools.scale_tool import read_marker_set, read_scale_setup
    raw = SETUP.read_text().replace("<output_marker_file> Unassigned </output_marker_file>",
                                    "<output_marker_file> placed_markers.xml </output_marker_file>")
    assert "placed_markers.xml" in raw
    (tmp_path / "setup.xml").write_text(raw)
    s = read_scale_setup(tmp_path / "setup.xml", search_dirs=DIRS + [GAIT_PIPE])
    assert s.placer_marker_set_file == tmp_path / "placed_markers.xml"
    res = dataclasses.replace(gait, setup=dataclasses.replace(gait.setup, placer_marker_set_file=s.placer_marker_set_file))
    paths = res.write(tmp_path / "out")
    mf = tmp_path / "out" / "placed_markers.xml"
    assert mf in paths
    back = read_marker_set(mf, gait.model)
    assert list(back) == list(gait.model.markers)
    for n, mk in back.items():
        ref = gait.model.markers[n]
        assert mk.parent_frame == ref.parent_frame and mk.fixed == ref.fixed
        assert _d(mk.location, ref.location) == 0.0, n


@needs_data
@needs_opensim
def test_opensim_reads_output_marker_file(gait, tmp_path):
    import opensim as osim
    from arthron.tools.scale_tool import write_marker_set
    osim.Logger.setLevelString("error")
    p = write_marker_set(tmp_path / "m.xml", gait.model)
    ms = osim.MarkerSet(str(p))
    assert ms.getSize() == len(gait.model.markers)
    for i in range(ms.getSize()):
        m = ms.get(i)
        ours = gait.model.markers[m.getName()]
        assert m.getParentFrameName() == ours.parent_frame
        assert _d([m.get_location().get(k) for k in range(3)], ours.location) == 0.0


def test_ellipsoid_dilation_eq14():
    """Seed 001 Eq. 14: the isotropic dilation putting a point on the ellipsoid."""
    from arthron.solvers.scaling import ellipsoid_dilation
    r = np.array([0.083, 0.2, 0.083])
    # a sphere: δ = |d| − r exactly
    assert ellipsoid_dilation([0.1, 0.1, 0.1], [0.06, 0.08, 0.0]) == pytest.approx(0.0, abs=1e-15)
    assert ellipsoid_dilation([0.1] * 3, [0.0, 0.13, 0.0]) == pytest.approx(0.03, abs=1e-15)
    rng = np.random.default_rng(1)
    for _ in range(20):
        d = rng.normal(0, 0.1, 3)
        delta = ellipsoid_dilation(r, d)
        assert abs(np.sum((d / (r + delta)) ** 2) - 1.0) < 1e-13
        assert np.all(r + delta > 0)
        # outside the base ellipsoid -> positive root; inside -> negative
        assert (delta > 0) == (np.sum((d / r) ** 2) > 1.0)
    # a point on the base ellipsoid (as the Ellipsoid mobilizer places it): no dilation
    p = r * np.array([np.sin(0.4), -np.sin(0.2) * np.cos(0.4), np.cos(0.2) * np.cos(0.4)])
    assert abs(ellipsoid_dilation(r, p)) < 1e-15
    with pytest.raises(DataFileError):
        ellipsoid_dilation(r, [0, 0, 0])
    # deep inside, on the plane of the shortest axis: no positive-radius dilation reaches it
    with pytest.raises(DataFileError, match="no isotropic dilation"):
        ellipsoid_dilation([0.1, 0.2, 0.3], [0.0, 0.01, 0.0])


@needs_data
def test_ribcage_dilation_thoracoscapular():
    """On the Thoracoscapular model the gliding point (scapulothoracic child frame origin)
    lies on the generic ellipsoid (δ = 0); a measured landmark replaces the scaled one."""
    from arthron.io.osim import read_osim
    from arthron.solvers.scaling import dilate_ribcage_ellipsoid, scale_model
    m = read_osim(TSM)
    rep = dilate_ribcage_ellipsoid(m, m.copy(), np.ones(3))
    assert abs(rep["delta"]) < 1e-14
    S = np.array([1.1, 1.2, 1.1])
    sm = scale_model(m, {b: S for b in m.bodies})
    rep = dilate_ribcage_ellipsoid(m, sm, S)
    assert rep["delta"] > 0
    np.testing.assert_allclose(sm.joints["scapulothoracic"].parameters["thoracic_ellipsoid_radii_x_y_z"],
                               rep["radii_generic"] + rep["delta"])
    # the measured variant: a landmark 1 cm further out along the ellipsoid's x axis
    _, X = sm.frame_in_base("/jointset/scapulothoracic/thorax_offset")
    lm = rep["landmark"] + X.R[:, 0] * 0.01 * np.sign(X.R[:, 0] @ (rep["landmark"] - X.p))
    rep2 = dilate_ribcage_ellipsoid(m, sm, S, landmark=lm)
    assert rep2["delta"] > rep["delta"]
    with pytest.raises(ModelFileError):
        dilate_ribcage_ellipsoid(m, sm, S, joint="GlenoHumeral")


def _scapula_landmarks(a_gi, a_gv):
    """Synthetic SN, AI, TS and glenoid rim points with a known inclination and version."""
    from arthron.solvers.scaling import _rodrigues, scapula_frame
    lm = {"SN": np.array([0.0, 0.0, 0.0]), "AI": np.array([-0.1, -0.12, 0.01]),
          "TS": np.array([-0.1, 0.0, 0.02])}
    sn, R = scapula_frame(lm)
    x, y, z = R.T
    c = sn + 0.02 * x
    v = _rodrigues(y, a_gi) @ z           # IG -> SG direction
    w = _rodrigues(z, a_gv) @ y           # PG -> AG direction
    lm.update(IG=c - 0.018 * v, SG=c + 0.018 * v, PG=c - 0.012 * w, AG=c + 0.012 * w)
    return lm


def test_glenoid_angles_eq15():
    from arthron.solvers.scaling import glenoid_angles, scapula_frame
    lm = _scapula_landmarks(np.deg2rad(7.0), np.deg2rad(-5.0))
    a_gi, a_gv = glenoid_angles(lm)
    assert np.rad2deg(a_gi) == pytest.approx(7.0, abs=1e-12)   # the seed's generic inclination
    assert np.rad2deg(a_gv) == pytest.approx(-5.0, abs=1e-12)
    sn, R = scapula_frame(lm)
    np.testing.assert_allclose(R.T @ R, np.eye(3), atol=1e-15)
    assert np.linalg.det(R) == pytest.approx(1.0)
    with pytest.raises(DataFileError, match="IG, SG"):
        glenoid_angles({k: lm[k] for k in ("SN", "AI", "TS")})


@needs_data
def test_adapt_glenoid_eq16_thoracoscapular():
    """Seed 001 Eq. 16 on the Thoracoscapular model: the glenohumeral joint centre rotates about
    SN by Δα_GI about ŷ_s (the seed's parameter study: 7° -> 15° and -7°); the glenoid
    inclination measured from rim points rotated with it changes by the same Δα."""
    from arthron.io.osim import read_osim
    from arthron.models.model import rotation_xyz
    from arthron.solvers.scaling import _rodrigues, adapt_glenoid, glenoid_angles, scapula_frame
    m = read_osim(TSM)
    fp = "/jointset/GlenoHumeral/scapula_offset"
    gc = m.frames[fp].translation.copy()
    sn = np.array([-0.03, -0.02, -0.01])           # an SN (the model has no such marker)
    with pytest.raises(DataFileError, match="SN"):
        adapt_glenoid(m, np.deg2rad(8.0))
    same = adapt_glenoid(m, 0.0, 0.0, landmarks={"SN": sn})
    np.testing.assert_allclose(same.frames[fp].translation, gc, atol=1e-15)
    lm = {"SN": sn, "AI": m.markers["ai"].location, "TS": m.markers["ts"].location}
    _, R = scapula_frame(lm)
    for deg in (8.0, -14.0):
        d = np.deg2rad(deg)
        out = adapt_glenoid(m, d, landmarks={"SN": sn})
        g1 = out.frames[fp].translation
        assert np.linalg.norm(g1 - sn) == pytest.approx(np.linalg.norm(gc - sn), abs=1e-15)
        a0 = np.arctan2(R[:, 0] @ (gc - sn), R[:, 2] @ (gc - sn))
        a1 = np.arctan2(R[:, 0] @ (g1 - sn), R[:, 2] @ (g1 - sn))
        assert a1 - a0 == pytest.approx(d, abs=1e-12)
        assert R[:, 1] @ (g1 - gc) == pytest.approx(0.0, abs=1e-15)
        # the joint frame turned with the glenoid
        np.testing.assert_allclose(rotation_xyz(out.frames[fp].orientation),
                                   _rodrigues(R[:, 1], d) @ rotation_xyz(m.frames[fp].orientation),
                                   atol=1e-14)
        # rim points rotated the same way change the measured inclination by Δα
        rim = _scapula_landmarks(np.deg2rad(7.0), 0.0)
        _, Rr = scapula_frame(rim)
        rot = _rodrigues(Rr[:, 1], d)
        moved = {k: (rim["SN"] + rot @ (v - rim["SN"]) if k in ("IG", "SG") else v) for k, v in rim.items()}
        assert np.rad2deg(glenoid_angles(moved)[0]) == pytest.approx(7.0 + deg, abs=1e-10)
    # version: about ẑ_s, leaves the ẑ_s component
    out = adapt_glenoid(m, 0.0, np.deg2rad(5.0), landmarks={"SN": sn}, rotate_frame=False)
    assert R[:, 2] @ (out.frames[fp].translation - gc) == pytest.approx(0.0, abs=1e-15)
    np.testing.assert_array_equal(out.frames[fp].orientation, m.frames[fp].orientation)


@needs_data
@needs_opensim
def test_thoracoscapular_anthropometric_loads_in_opensim(tmp_path):
    """The seed-001 scaled Thoracoscapular model (dilated ribcage, glenoid inclination +8°)
    loads in OpenSim 4.6, which reads back the radii and the glenohumeral frame."""
    import oracle
    from arthron.io.osim import read_osim, write_osim
    from arthron.solvers.scaling import scale_anthropometric
    m = read_osim(TSM)
    sm, rep = scale_anthropometric(m, 60.0, 1.60, "f", generic_mass=85.5, generic_height=1.86,
                                   generic_gender="m", delta_glenoid_inclination=np.deg2rad(8.0),
                                   scapula_landmarks={"SN": [-0.03, -0.02, -0.01]})
    p = write_osim(tmp_path / "tsm_seed001.osim", sm)
    om, s = oracle.load(p)
    import opensim as osim
    j = osim.ScapulothoracicJoint.safeDownCast(om.getJointSet().get("scapulothoracic"))
    radii = oracle.vec(j.get_thoracic_ellipsoid_radii_x_y_z())
    np.testing.assert_allclose(radii, sm.joints["scapulothoracic"].parameters["thoracic_ellipsoid_radii_x_y_z"],
                               rtol=1e-12)
    f = om.getJointSet().get("GlenoHumeral").get_frames(0)
    np.testing.assert_allclose(oracle.vec(f.get_translation()),
                               sm.frames["/jointset/GlenoHumeral/scapula_offset"].translation, atol=1e-15)
    np.testing.assert_allclose(oracle.vec(f.get_orientation()),
                               sm.frames["/jointset/GlenoHumeral/scapula_offset"].orientation, atol=1e-15)
