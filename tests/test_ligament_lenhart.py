"""TPSM on the Lenhart2015 knee (opensim-jam): ACL from its 12 strands + tibia STL; OpenSim export.

The strands are read with lxml here (arthron's own .osim reader is another module's job)."""
import numpy as np
import pytest

from arthron.errors import SolverError
from arthron.io.mesh import load_mesh
from arthron.solvers.ligament import strand_fibres, tpsm_from_strands
from arthron.solvers.tpsm_study import force_error, reference_wrench
from arthron.tools.ligament_tool import blankevoort_xml

from conftest import LENHART, needs_data, needs_opensim

TIBIA_STL = LENHART.parent / "Geometry" / "lenhart2015-R-tibia-bone.stl"
TIB, FEM = "/bodyset/tibia_proximal_r", "/bodyset/femur_distal_r"


def lenhart_strands(prefix="ACL"):
    from lxml import etree
    names, P, Q, l0, k = [], [], [], [], []
    for lig in etree.parse(str(LENHART)).getroot().iter("Blankevoort1991Ligament"):
        if not lig.get("name").startswith(prefix):
            continue
        pts = {pp.findtext("socket_parent_frame"): np.array(pp.findtext("location").split(), float)
               for pp in lig.iter("PathPoint")}
        names.append(lig.get("name"))
        P.append(pts[TIB])
        Q.append(pts[FEM])
        l0.append(float(lig.findtext("slack_length")))
        k.append(float(lig.findtext("linear_stiffness")))
    return names, np.array(P), np.array(Q), np.array(l0), np.array(k)


@pytest.fixture(scope="module")
def acl():
    if not LENHART.is_file():
        pytest.skip("../shared/data is absent")
    names, P, Q, l0, k = lenhart_strands()
    assert len(names) == 12
    lig = tpsm_from_strands(P, Q, l0, k, mesh=load_mesh(TIBIA_STL), name="ACL")
    return lig, (P, Q, l0, k)


@needs_data
def test_strands_are_fibres_of_the_tpsm(acl):
    lig, (P, Q, l0, k) = acl
    p, q, _ = lig.fibre_ends(lig.landmarks["strand_xy"])
    assert np.allclose(q, Q, atol=1e-12)  # φ and Γ_f interpolate the femoral strand points
    assert np.linalg.norm(p - P, axis=1).max() < 2e-3  # tibial ends on the bone mesh (strands ~1 mm off it)
    # strain-based l0: each strand's fibre has the strand's reference strain at the default pose
    from arthron.solvers.ligament import _field
    l0f = _field(lig.l0, lig.landmarks["strand_xy"])
    eps_fibre = np.linalg.norm(q - p, axis=1) / l0f - 1
    eps_strand = np.linalg.norm(Q - P, axis=1) / l0 - 1
    assert np.allclose(eps_fibre, eps_strand, atol=1e-10)
    assert np.isclose(lig.landmarks["total_stiffness"], 12 * 820.0)
    assert 40e-6 < lig.landmarks["area"] < 200e-6


@needs_data
def test_lenhart_tpsm_converges_and_compares_with_mbm(acl):
    lig, (P, Q, l0, k) = acl
    R, t = np.eye(3), np.zeros(3)  # default pose: femur_distal_r and tibia_proximal_r coincide
    ref = reference_wrench(lig, R, t)
    errs = [float(force_error(lig.fibres(n, 3).wrench(R, t), ref)[0]) for n in (30, 60, 120, 360, 720)]
    assert errs[-1] < 0.05 and errs[-2] < 0.1 and max(errs[1:]) < 1.0
    strands = strand_fibres(P, Q, l0, k)
    mbm = strands.wrench(R, t)
    # only ACLpl1 (ε = 3 %) and ACLpl2 (1 %) are taut at the default pose: 6.150 + 0.684 N (OpenSim)
    assert np.isclose(strands.tensions(R, t).sum(), 6.8332, rtol=1e-3)
    assert np.isclose(mbm.force_magnitude, 6.8256, rtol=1e-3)
    # the TPSM spreads the 12 × 820 N stiffness over the footprint: same order, same direction
    assert 0.5 < ref.force_magnitude / mbm.force_magnitude < 1.5
    cosang = ref.force @ mbm.force / (ref.force_magnitude * mbm.force_magnitude)
    assert cosang > 0.98


@needs_data
def test_footprint_not_touching_mesh_raises():
    names, P, Q, l0, k = lenhart_strands()
    with pytest.raises(SolverError, match="does not touch the mesh"):
        tpsm_from_strands(P + [0, 0.02, 0], Q, l0, k, mesh=load_mesh(TIBIA_STL), name="ACL")
    with pytest.raises(SolverError, match="at least 3"):
        tpsm_from_strands(P[:2], Q[:2], l0[:2], k[:2], name="ACL")
    Pc = np.outer(np.linspace(0, 1, 5), [0.01, 0.0, 0.0])
    with pytest.raises(SolverError, match="collinear"):
        tpsm_from_strands(Pc, Pc + [0, 0.03, 0], 0.03, 820.0, name="ACL")


def _clean_lenhart(tmp_path, extra_xml="", drop_prefix=None):
    """Lenhart2015 without the Smith2018 plugin components (plain OpenSim cannot load them)."""
    from lxml import etree
    tree = etree.parse(str(LENHART))
    root = tree.getroot()
    for el in list(root.iter()):
        if isinstance(el.tag, str) and el.tag.startswith("Smith2018"):
            el.getparent().remove(el)
    if drop_prefix:
        for el in list(root.iter("Blankevoort1991Ligament")):
            if el.get("name").startswith(drop_prefix):
                el.getparent().remove(el)
    if extra_xml:
        objs = root.find(".//ForceSet/objects")
        for el in etree.fromstring(f"<r>{extra_xml}</r>"):
            objs.append(el)
    out = tmp_path / "lenhart_tpsm.osim"
    tree.write(str(out))
    return out


def _opensim_state(path, coords):
    import opensim as osim
    m = osim.Model(str(path))
    s = m.initSystem()
    cs = m.getCoordinateSet()
    for nm, v in coords.items():
        cs.get(nm).setValue(s, v, False)
    m.assemble(s)
    m.realizeDynamics(s)
    return osim, m, s


def _transform(body, s):
    T = body.getTransformInGround(s)
    R = np.array([[T.R().get(i, j) for j in range(3)] for i in range(3)])
    return R, np.array([T.p().get(i) for i in range(3)])


@needs_data
@needs_opensim
@pytest.mark.parametrize("coords", [{"knee_tx_r": 0.004}, {"knee_flex_r": 0.5, "knee_tx_r": 0.006},
                                    {"knee_flex_r": -0.05, "knee_rot_r": 0.1}])
def test_exported_fibres_reproduce_wrench_in_opensim(acl, tmp_path, coords):
    lig, _ = acl
    fib = lig.fibres(60, 3)
    path = _clean_lenhart(tmp_path, blankevoort_xml(fib, prefix="ACLtpsm"), drop_prefix="ACL")
    osim, m, s = _opensim_state(path, coords)
    Rt, pt = _transform(m.getBodySet().get("tibia_proximal_r"), s)
    Rf, pf = _transform(m.getBodySet().get("femur_distal_r"), s)
    R, t = Rt.T @ Rf, Rt.T @ (pf - pt)  # femur in tibia
    ours = fib.wrench(R, t)
    assert ours.force_magnitude > 1.0  # the pose loads the ligament
    F = np.zeros(3)
    M = np.zeros(3)
    tensions = np.empty(fib.n)
    for i in range(fib.n):
        lg = osim.Blankevoort1991Ligament.safeDownCast(m.getForceSet().get(f"ACLtpsm{i + 1}"))
        tensions[i] = lg.getTotalForce(s)
        pts = lg.getGeometryPath().getCurrentPath(s)
        g = [np.array([pts.get(j).getLocationInGround(s).get(a) for a in range(3)]) for j in (0, 1)]
        fem_g, tib_g = g
        u = Rt.T @ (fem_g - tib_g)
        f = tensions[i] * u / np.linalg.norm(u)
        F += f
        M += np.cross(Rt.T @ (tib_g - pt), f)
    assert np.allclose(tensions, fib.tensions(R, t), rtol=1e-9, atol=1e-9 * tensions.max())
    assert np.linalg.norm(F - ours.force) < 1e-6 * ours.force_magnitude
    assert np.linalg.norm(M - ours.moment) < 1e-6 * ours.moment_magnitude


def test_export_rejects_negative_weights_and_unsupported_laws():
    from arthron.solvers.ligament import Law
    from arthron.solvers.tpsm_study import synthetic_acl
    lig = synthetic_acl()
    with pytest.raises(SolverError, match="non-positive stiffness"):
        blankevoort_xml(lig.fibres(20, 4))
    with pytest.raises(SolverError, match="no Blankevoort1991Ligament equivalent"):
        blankevoort_xml(lig.with_(law=Law("linear")).fibres(20, 3))
    xml = blankevoort_xml(lig.fibres(20, 3))
    assert xml.count("<Blankevoort1991Ligament") == 60


def lenhart_poses(coords_list):
    """Femur_distal_r in tibia_proximal_r for a list of {coordinate: value} (OpenSim kinematics)."""
    import tempfile
    from pathlib import Path
    with tempfile.TemporaryDirectory() as d:
        osim, m, s = _opensim_state(_clean_lenhart(Path(d)), {})
        cs = m.getCoordinateSet()
        tib, fem = m.getBodySet().get("tibia_proximal_r"), m.getBodySet().get("femur_distal_r")
        Rs, ts = [], []
        for coords in coords_list:
            for nm in ("knee_flex_r", "knee_add_r", "knee_rot_r", "knee_tx_r", "knee_ty_r", "knee_tz_r"):
                cs.get(nm).setValue(s, coords.get(nm, 0.0), False)
            m.realizePosition(s)
            Rt, pt = _transform(tib, s)
            Rf, pf = _transform(fem, s)
            Rs.append(Rt.T @ Rf)
            ts.append(Rt.T @ (pf - pt))
    return np.array(Rs), np.array(ts)


@needs_data
@needs_opensim
def test_flexion_sweep_with_anterior_drawer_is_smooth(acl):
    lig, (P, Q, l0, k) = acl
    ang = np.deg2rad(np.linspace(0, 90, 91))
    R, t = lenhart_poses([{"knee_flex_r": a, "knee_tx_r": 0.005} for a in ang])
    w = lig.fibres(120, 3).wrench(R, t)
    F = w.force_magnitude
    assert F[0] > 10.0 and np.all(np.isfinite(F))
    assert np.abs(np.diff(F, 2)).max() < 0.05 * F.max()  # no jumps at 1° steps
    assert np.abs(np.diff(w.moment_magnitude, 2)).max() < 0.05 * w.moment_magnitude.max()
    # finer mesh agrees along the sweep (convergence over the motion, not only at one pose)
    w2 = lig.fibres(720, 3).wrench(R, t)
    assert np.abs(w2.force_magnitude - F).max() < 0.01 * F.max()


@needs_data
def test_strands_from_arthron_model_match_the_file():
    import warnings
    from arthron.errors import ModelFileError
    from arthron.solvers.ligament import strands_from_model
    try:
        from arthron.io.osim import read_osim
    except ImportError:
        pytest.skip("arthron.io.osim not available")
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        model = read_osim(LENHART)
    st = strands_from_model(model, "ACL")
    names, P, Q, l0, k = lenhart_strands()
    assert st.names == names and st.tibia_frame == TIB and st.femur_frame == FEM
    assert np.array_equal(st.P, P) and np.array_equal(st.Q, Q)
    assert np.array_equal(st.slack_length, l0) and np.array_equal(st.stiffness, k)
    assert np.all(st.transition_strain == 0.06)
    w = st.fibres().wrench(np.eye(3), np.zeros(3))
    assert np.isclose(st.fibres().tensions(np.eye(3), np.zeros(3)).sum(), 6.8332, rtol=1e-3)
    assert w.force_magnitude > 0
    with pytest.raises(ModelFileError, match="no Blankevoort1991Ligament named XYZ"):
        strands_from_model(model, "XYZ")


@needs_data
@needs_opensim
def test_run_model_over_a_motion_matches_opensim_poses(tmp_path):
    import warnings
    from arthron.errors import ArthronWarning
    from arthron.io.sto import Table, read_sto, write_sto
    from arthron.tools.ligament_tool import run_model
    ang = np.linspace(0, 60, 13)
    # knee_flex_r is a "coupled" coordinate in Lenhart2015's CustomJoint: OpenSim (and arthron)
    # convert only rotational coordinates from degrees, so the motion is written in radians
    mot = Table("knee", ang / 10, ["knee_flex_r", "knee_tx_r"],
                np.column_stack([np.deg2rad(ang), np.full(13, 0.005)]), in_degrees=False)
    write_sto(tmp_path / "knee.mot", mot)
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        table, info = run_model(LENHART, "ACL", mesh=TIBIA_STL, motion=tmp_path / "knee.mot",
                                out=tmp_path / "acl.sto", n_triangles=120)
    R, t = lenhart_poses([{"knee_flex_r": np.deg2rad(a), "knee_tx_r": 0.005} for a in ang])
    Ra, ta = info["poses"]
    assert np.allclose(Ra, R, atol=1e-12) and np.allclose(ta, t, atol=1e-12)
    back = read_sto(tmp_path / "acl.sto")
    assert back.labels[0] == "ACL_tpsm_on_tibia_proximal_r_in_tibia_proximal_r_fx"
    w = info["fibres"].wrench(R, t)
    assert np.allclose(back.data[:, :3], w.force, rtol=1e-12, atol=1e-9)
    assert back.data[0, :3].any() and "ACL_mbm_on_tibia_proximal_r_in_tibia_proximal_r_fx" in back.labels
    with pytest.warns(ArthronWarning, match="keep their default values"):
        run_model(LENHART, "ACL", motion=tmp_path / "knee.mot", n_triangles=30)


@needs_data
def test_run_model_names_the_mesh_when_the_footprint_misses_it():
    import warnings
    from arthron.tools.ligament_tool import run_model
    fibula = LENHART.parent / "Geometry" / "lenhart2015-R-fibula-bone.stl"
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        with pytest.raises(SolverError, match="fibula-bone.stl.*does not touch the mesh"):
            run_model(LENHART, "ACL", mesh=fibula, n_triangles=30)
