"""Assembly of constrained models against OpenSim's Model::assemble."""
from __future__ import annotations

import numpy as np

import oracle
from conftest import TSM, needs_data, needs_opensim
from arthron.io.osim import read_osim
from arthron.multibody.constraints import assemble, compile_constraints
from arthron.multibody.kinematics import compile_model


@needs_data
@needs_opensim
def test_thoracoscapular_ac_point_constraint_assembles_like_opensim():
    model = read_osim(TSM)
    tree = compile_model(model)
    m, s = oracle.load(TSM)
    cs = m.getCoordinateSet()
    names = [cs.get(i).getName() for i in range(cs.getSize())]
    for i, n in enumerate(names):
        cs.get(i).setValue(s, 0.01 * (i + 1), False)
    q_set = np.array([cs.get(i).getValue(s) for i in range(cs.getSize())])  # locked ones keep default
    m.assemble(s)
    q_os = np.array([cs.get(i).getValue(s) for i in range(cs.getSize())])
    order = [names.index(n) for n in tree.coordinate_names]
    q = assemble(model, tree, q_set[order][None])[0]
    assert np.abs(q - q_os[order]).max() < 1e-6          # Simbody's assembly accuracy is 1e-9 relative
    assert np.abs(q - q_set[order]).max() > 1e-2          # the constraint really moved the shoulder girdle
    c = compile_constraints(model, tree)
    assert c.size == 3 and np.abs(c.residuals(q[None])).max() < 1e-12


@needs_data
@needs_opensim
def test_weld_constraint_with_owned_frames_reads_writes_and_assembles_like_opensim(tmp_path):
    """A 4.x WeldConstraint (its own offset frames) added to arm26, satisfied at elbow = 1 rad:
    arthron reads and writes it, OpenSim loads the written file, and both assemble a perturbed
    pose back to the same coordinates."""
    from scipy.spatial.transform import Rotation

    from conftest import ARM26
    from arthron.io.osim import write_osim
    from arthron.multibody.kinematics import forward_kinematics
    model = read_osim(ARM26)
    tree = compile_model(model)
    q = tree.default_q.copy()
    q[tree.coordinate_index("r_elbow_flex")] = 1.0
    kin = forward_kinematics(tree, q[None])
    h, u = tree.body_index("r_humerus"), tree.body_index("r_ulna_radius_hand")
    Rh, oh = kin.R[0, tree.body_node[h]], kin.o[0, tree.body_node[h]]
    Ru, ou = kin.R[0, tree.body_node[u]], kin.o[0, tree.body_node[u]]
    R_hu, p_hu = Rh.T @ Ru, Rh.T @ (ou - oh)
    ang = Rotation.from_matrix(R_hu).as_euler("XYZ")          # body-fixed X-Y-Z, OpenSim's
    weld = f"""<WeldConstraint name="elbow_weld">
        <isEnforced>true</isEnforced>
        <socket_frame1>humerus_weld</socket_frame1>
        <socket_frame2>ulna_weld</socket_frame2>
        <frames>
          <PhysicalOffsetFrame name="humerus_weld"><socket_parent>/bodyset/r_humerus</socket_parent>
            <translation>{' '.join(repr(float(x)) for x in p_hu)}</translation>
            <orientation>{' '.join(repr(float(x)) for x in ang)}</orientation></PhysicalOffsetFrame>
          <PhysicalOffsetFrame name="ulna_weld"><socket_parent>/bodyset/r_ulna_radius_hand</socket_parent>
            <translation>0 0 0</translation><orientation>0 0 0</orientation></PhysicalOffsetFrame>
        </frames></WeldConstraint>"""
    text = ARM26.read_text()
    i = text.index("<ConstraintSet")
    j = text.index("<objects />", i)
    src = tmp_path / "arm26_weld.osim"
    src.write_text(text[:j] + "<objects>" + weld + "</objects>" + text[j + len("<objects />"):])
    m1 = read_osim(src)
    assert [c.type for c in m1.constraints] == ["WeldConstraint"]
    assert "/constraintset/elbow_weld/humerus_weld" in m1.frames
    out = write_osim(tmp_path / "arm26_weld_out.osim", m1)
    t1 = compile_model(m1)
    cs = compile_constraints(m1, t1)
    assert cs.size == 6 and np.abs(cs.residuals(q[None])).max() < 1e-12
    # OpenSim reads the written weld and its frames coincide at elbow = 1 rad (its own
    # assembler cannot be the oracle here: a weld on a 2-dof arm is redundant, and Simbody's
    # Ipopt-based assembly refuses it with "not enough degrees of freedom").
    om, s = oracle.load(out)
    assert om.getConstraintSet().getSize() == 1
    cset = om.getCoordinateSet()
    for k in range(cset.getSize()):
        cset.get(k).setValue(s, q[t1.coordinate_index(cset.get(k).getName())], False)
    om.realizePosition(s)
    Xa = om.getComponent("/constraintset/elbow_weld/humerus_weld").getTransformInGround(s)
    Xb = om.getComponent("/constraintset/elbow_weld/ulna_weld").getTransformInGround(s)
    np.testing.assert_allclose(oracle.vec(Xa.p()), oracle.vec(Xb.p()), atol=1e-12)
    np.testing.assert_allclose(oracle.mat33(Xa.R()), oracle.mat33(Xb.R()), atol=1e-12)
    # arthron assembles a perturbed pose back onto the weld, the shoulder kept where asked
    q0 = q.copy()
    q0[t1.coordinate_index("r_elbow_flex")] = 0.7
    q0[t1.coordinate_index("r_shoulder_elev")] = 0.3
    qa = assemble(m1, t1, q0[None])[0]
    assert abs(qa[t1.coordinate_index("r_elbow_flex")] - 1.0) < 1e-9
    assert abs(qa[t1.coordinate_index("r_shoulder_elev")] - 0.3) < 1e-9


@needs_data
@needs_opensim
def test_coupler_assembly_keeps_the_independent_coordinate_like_opensim(tmp_path):
    """OpenSim's assembly does not track a coupler's dependent coordinate: it follows from the
    independent one, which stays where it was set."""
    from conftest import ARM26
    coupler = """<CoordinateCouplerConstraint name="elbow_follows_shoulder">
        <isEnforced>true</isEnforced>
        <coupled_coordinates_function><LinearFunction><coefficients>2 0.1</coefficients></LinearFunction>
        </coupled_coordinates_function>
        <independent_coordinate_names>r_shoulder_elev</independent_coordinate_names>
        <dependent_coordinate_name>r_elbow_flex</dependent_coordinate_name>
        <scale_factor>1</scale_factor></CoordinateCouplerConstraint>"""
    text = ARM26.read_text()
    j = text.index("<objects />", text.index("<ConstraintSet"))
    src = tmp_path / "arm26_coupler.osim"
    src.write_text(text[:j] + "<objects>" + coupler + "</objects>" + text[j + len("<objects />"):])
    model = read_osim(src)
    tree = compile_model(model)
    om, s = oracle.load(src)
    cset = om.getCoordinateSet()
    start = {"r_shoulder_elev": 0.3, "r_elbow_flex": 1.2}
    for k in range(cset.getSize()):
        cset.get(k).setValue(s, start[cset.get(k).getName()], False)
    om.assemble(s)
    q_os = np.array([cset.get(n).getValue(s) for n in tree.coordinate_names])
    q0 = np.array([start[n] for n in tree.coordinate_names])
    qa = assemble(model, tree, q0[None])[0]
    np.testing.assert_allclose(q_os, [0.3, 0.7], atol=1e-6)      # OpenSim: elbow = 2·0.3 + 0.1
    np.testing.assert_allclose(qa, q_os, atol=1e-6)


def test_independent_rows_transform_shared_by_forward_dynamics_and_multipliers():
    """constrained_dynamics.independent_rows: the one transform of constraint rows that are not
    independent (forward_accelerations and motion_constraint_multipliers wrote it twice): G' =
    WᵀG and b' = Wᵀb with the combinations that constrain nothing set to 0; W G' gives G back;
    independent rows pass through untouched. (GPK_v4_016's welded knee, tests/test_unseen_models,
    is the guard of the solves.)"""
    from arthron.multibody.constrained_dynamics import independent_rows
    rng = np.random.default_rng(3)
    G = rng.normal(size=(2, 3, 5))
    b = rng.normal(size=(2, 3))
    assert independent_rows(G, b)[:2] == (None, None)
    assert independent_rows(G, b)[2] is G and independent_rows(G, b)[3] is b
    G[:, 2] = 2.0 * G[:, 0] - G[:, 1]                   # a loop the other rows already close
    b[:, 2] = 2.0 * b[:, 0] - b[:, 1]
    W, drop, Gi, bi = independent_rows(G, b)
    assert drop.tolist() == [[False, False, True]] * 2
    assert np.all(Gi[drop] == 0.0) and np.all(bi[drop] == 0.0)
    np.testing.assert_allclose(W @ Gi, G, atol=1e-12)
    np.testing.assert_allclose(np.einsum("tij,tj->ti", W, bi), b, atol=1e-12)
    assert independent_rows(G)[3] is None
