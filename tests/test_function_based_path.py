"""OpenSim 4.5+ FunctionBasedPath: muscles whose length is a polynomial of coordinates.

arm26 with two muscles' GeometryPaths replaced in memory (with the OpenSim API) by
FunctionBasedPaths: BIClong by a MultivariatePolynomialFunction of shoulder and elbow of
order 3 (moment arms ``-∂L/∂q``, speed ``-Σ r q̇``), TRIlong by one of order 2 with
``moment_arm_functions`` and a ``lengthening_speed_function`` of (q, q̇), BRA by one-argument
functions of the elbow (a PolynomialFunction length, a LinearFunction moment arm, no speed
function: ``-r q̇``). Compared with OpenSim 4.6 at random states.
"""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from conftest import ARM26, needs_data, needs_opensim
import oracle
from arthron.errors import ArthronWarning, UnsupportedFeature
from arthron.io.osim import read_osim, write_osim
from arthron.models.multivariate import MultivariatePolynomialFunction
from arthron.models.model import FunctionBasedPath
from arthron.multibody import paths as P
from arthron.multibody.kinematics import compile_model

COORDS = ["r_shoulder_elev", "r_elbow_flex"]
MUSCLES = ("BIClong", "TRIlong", "BRA")
CPATHS = ["/jointset/r_shoulder/r_shoulder_elev", "/jointset/r_elbow/r_elbow_flex"]
C_BIC = [0.35, 0.02, -0.03, 0.004, 0.01, 0.005, -0.002, -0.02, 0.003, 0.001]   # d 2, order 3
C_TRI = [0.3, -0.01, 0.02, 0.015, 0.003, -0.004]                                # d 2, order 2
C_MA = ([0.01, 0.002, -0.003, 0.001, 0.0005, 0.002], [-0.02, 0.004, 0.001, -0.002, 0.003, 0.0])
rng0 = np.random.default_rng(11)
C_SPEED = rng0.uniform(-0.02, 0.02, 15)                                          # d 4, order 2


def test_multivariate_polynomial_coefficient_order():
    """OpenSim's term order (first argument's exponent slowest): 1, y, y², x, xy, x² for two
    arguments of order 2; gradient by the product rule; wrong coefficient counts refused."""
    f = MultivariatePolynomialFunction([1, 2, 3, 4, 5, 6], 2, 2)
    x, y = 0.7, -1.3
    assert np.isclose(f.values(np.array([x, y])), 1 + 2 * y + 3 * y * y + 4 * x + 5 * x * y + 6 * x * x)
    np.testing.assert_allclose(f.gradient(np.array([[x, y]]))[0],
                               [4 + 5 * y + 12 * x, 2 + 6 * y + 5 * x], rtol=1e-15)
    assert len(MultivariatePolynomialFunction._exponents(3, 3)) == 20
    with pytest.raises(ValueError, match="needs 6 coefficients"):
        MultivariatePolynomialFunction([1, 2, 3], 2, 2)


def _build(tmp_path):
    """arm26 with BIClong and TRIlong on FunctionBasedPaths, printed by OpenSim 4.6."""
    import opensim as osim
    oracle._quiet(osim)
    with oracle._cwd(tmp_path):
        m = osim.Model(str(ARM26))
    for name, c, order in (("BIClong", C_BIC, 3), ("TRIlong", C_TRI, 2)):
        p = osim.FunctionBasedPath()
        p.setName("path")
        for cp in CPATHS:
            p.appendCoordinatePath(cp)
        p.setLengthFunction(osim.MultivariatePolynomialFunction(osim.Vector(list(c)), 2, order))
        if name == "TRIlong":
            for cm in C_MA:
                p.appendMomentArmFunction(osim.MultivariatePolynomialFunction(osim.Vector(list(cm)), 2, 2))
            p.setLengtheningSpeedFunction(
                osim.MultivariatePolynomialFunction(osim.Vector(list(C_SPEED)), 4, 2))
        osim.PathActuator.safeDownCast(m.getForceSet().get(name)).set_path(p)
    p = osim.FunctionBasedPath()
    p.setName("path")
    p.appendCoordinatePath(CPATHS[1])
    p.setLengthFunction(osim.PolynomialFunction(osim.Vector([0.004, -0.02, 0.14])))
    p.appendMomentArmFunction(osim.LinearFunction(0.01, 0.02))
    osim.PathActuator.safeDownCast(m.getForceSet().get("BRA")).set_path(p)
    out = tmp_path / "arm26_fbp.osim"
    with oracle._cwd(tmp_path):
        m.initSystem()
        m.printToXML(str(out))
    return out


def _opensim_states(path, q, qd, names):
    """Lengths, moment arms (T, 3, 2: computeMomentArm on the path's coordinates, 0 where the
    path has not the coordinate) and lengthening speeds of BIClong, TRIlong and BRA in OpenSim
    4.6."""
    import opensim as osim
    m, s = oracle.load(path)
    cs = m.getCoordinateSet()
    T = q.shape[0]
    L, R, V = np.empty((T, 3)), np.zeros((T, 3, 2)), np.empty((T, 3))
    for t in range(T):
        for j, c in enumerate(names):
            cs.get(c).setValue(s, q[t, j], False)
            cs.get(c).setSpeedValue(s, qd[t, j])
        m.realizeVelocity(s)
        for k, mn in enumerate(MUSCLES):
            mus = osim.Muscle.safeDownCast(m.getForceSet().get(mn))
            fbp = osim.FunctionBasedPath.safeDownCast(mus.getPath())
            L[t, k] = fbp.getLength(s)
            V[t, k] = fbp.getLengtheningSpeed(s)
            for j, c in enumerate(COORDS):
                if mn != "BRA" or j == 1:
                    R[t, k, j] = fbp.computeMomentArm(s, cs.get(c))
    return L, R, V


def _states(tree, T=12, seed=3):
    rng = np.random.default_rng(seed)
    q = np.zeros((T, tree.nq))
    qd = rng.uniform(-3, 3, (T, tree.nq))
    i = [tree.coordinate_names.index(c) for c in COORDS]
    q[:, i[0]] = rng.uniform(-1.5, 3.0, T)
    q[:, i[1]] = rng.uniform(0.0, 2.2, T)
    return q, qd


@needs_data
@needs_opensim
def test_function_based_path_like_opensim(tmp_path):
    """Lengths, the moment arm about each coordinate (computeMomentArm) and lengthening speeds
    of the three FunctionBasedPaths equal OpenSim 4.6's at 12 random states within 1e-12 (they
    agree to ~1e-16); the moment arms about other coordinates are 0; the geometric paths are
    unchanged; no warning."""
    src = _build(tmp_path)
    with warnings.catch_warnings():
        warnings.simplefilter("error", ArthronWarning)
        model = read_osim(src)
    assert isinstance(model.forces["BIClong"].path, FunctionBasedPath)
    tree = compile_model(model)
    ps = P.compile_paths(model, tree)
    assert {ps.names[i] for i in ps.function_based} == set(MUSCLES)
    q, qd = _states(tree)
    L, R, V = _opensim_states(src, q, qd, tree.coordinate_names)
    idx = [ps.index(n) for n in MUSCLES]
    ci = [tree.coordinate_names.index(c) for c in COORDS]
    la = P.path_lengths(ps, tree, q)
    ma = P.moment_arms(ps, tree, q)
    va = P.lengthening_speeds(ps, tree, q, qd)
    for k, i in enumerate(idx):
        np.testing.assert_allclose(la[:, i], L[:, k], rtol=0, atol=1e-12)
        np.testing.assert_allclose(ma[:, i][:, ci], R[:, k], rtol=0, atol=1e-12)
        np.testing.assert_allclose(va[:, i], V[:, k], rtol=0, atol=1e-12)
        others = np.delete(ma[:, i], ci, axis=1)
        assert not others.any()
    # the geometric muscles are evaluated as before (same numbers as their own PathSet)
    geo = ps.geometric()
    assert "BIClong" not in geo.names and len(geo.names) == len(ps.names) - 3
    np.testing.assert_array_equal(P.path_lengths(geo, tree, q), np.delete(la, idx, axis=1))
    # states pass-through (as static optimization uses it) gives the same moment arms
    sd = P.path_states(ps, tree, q)
    ma2, l2 = P.moment_arms(ps, tree, q, coupled=False, states=sd, return_lengths=True)
    np.testing.assert_array_equal(ma2, ma)
    np.testing.assert_array_equal(l2, la)


@needs_data
@needs_opensim
def test_function_based_path_generalized_forces_like_opensim(tmp_path):
    """The tension of a FunctionBasedPath muscle applies ``tension × r`` on its coordinates
    only (OpenSim's mobility forces): arthron's actuator forces (what inverse dynamics and
    joint reactions add for a forces file) equal the change of OpenSim 4.6's
    InverseDynamicsSolver when the muscles' actuation is overridden (within 1e-9 N·m), and
    no body force is applied; the E-matrix node forces refuse such paths by name."""
    import opensim as osim
    from arthron.solvers.actuators import actuator_forces
    from arthron.tables import Table
    src = _build(tmp_path)
    model = read_osim(src)
    tree = compile_model(model)
    q, qd = _states(tree, T=4, seed=5)
    qdd = np.random.default_rng(8).uniform(-5, 5, q.shape)
    F = {"BIClong": 300.0, "TRIlong": 450.0, "BRA": 200.0}
    musc = list(model.muscles)
    tab = Table(name="forces", time=np.array([0.0, 1.0]), labels=musc,
                data=np.array([[F.get(n, 0.0) for n in musc]] * 2))
    gen, loads = actuator_forces(model, tree, tab, np.linspace(0, 1, len(q)), q=q)
    assert not any(ld.force.any() for ld in loads)     # geometric muscles at 0 N, FBP: none
    m, s = oracle.load(src)
    cs = m.getCoordinateSet()
    solver = osim.InverseDynamicsSolver(m)
    names = tree.coordinate_names
    for t in range(q.shape[0]):
        for j, c in enumerate(names):
            cs.get(c).setValue(s, q[t, j], False)
            cs.get(c).setSpeedValue(s, qd[t, j])
        tau = []
        for on in (False, True):
            for n in musc:
                a = osim.Muscle.safeDownCast(m.getForceSet().get(n))
                a.overrideActuation(s, True)
                a.setOverrideActuation(s, F.get(n, 0.0) if on else 0.0)
            m.realizeVelocity(s)
            tau.append(solver.solve(s, osim.Vector(qdd[t].tolist())).to_numpy())
        np.testing.assert_allclose(tau[0] - tau[1], gen[t], rtol=0, atol=1e-9)
    assert np.abs(gen).max() > 1.0
    pl = P.path_body_forces(P.compile_paths(model, tree, forces=["BIClong"]), tree, q, [300.0])
    assert not pl.force.any() and not pl.moment.any() and pl.points[0][1].shape == (4, 0, 3)
    with pytest.raises(UnsupportedFeature, match="BIClong.*generalized forces only"):
        P.moment_arms_and_node_forces(P.compile_paths(model, tree), tree, q)


@needs_data
@needs_opensim
def test_function_based_path_round_trip(tmp_path):
    """arthron reads OpenSim's file and writes it back: OpenSim 4.6 loads the written file and
    gives the same lengths and moment arms; arthron reads its own file to the same functions."""
    import opensim as osim
    src = _build(tmp_path)
    model = read_osim(src)
    out = write_osim(tmp_path / "rewritten.osim", model)
    again = read_osim(out)
    for n in ("BIClong", "TRIlong"):
        a, b = model.forces[n].path, again.forces[n].path
        assert a.coordinate_paths == b.coordinate_paths == CPATHS
        np.testing.assert_array_equal(a.length_function.coefficients, b.length_function.coefficients)
        assert len(b.moment_arm_functions) == (2 if n == "TRIlong" else 0)
        assert (b.lengthening_speed_function is None) == (n == "BIClong")
    tree = compile_model(model)
    q, qd = _states(tree, T=3, seed=9)
    ref = _opensim_states(src, q, qd, tree.coordinate_names)
    got = _opensim_states(out, q, qd, tree.coordinate_names)
    for a, b in zip(ref, got):
        np.testing.assert_array_equal(a, b)
    assert osim is not None


def test_unsupported_function_in_function_based_path_is_named(tmp_path):
    """A FunctionBasedPath whose function arthron cannot read is kept (written back verbatim)
    and named, with the function type, in one warning; it is then no path of arthron's."""
    from test_public_model_elements import _doc, _hip_knee, _rect_fem
    bodies, joints = _hip_knee()
    fbp = """<Thelen2003Muscle name='vas_fbp'><FunctionBasedPath name='path'>
<coordinate_paths>/jointset/hip_r/hip_flexion_r</coordinate_paths>
<length_function><FancyFittedFunction><a>1</a></FancyFittedFunction></length_function>
</FunctionBasedPath><max_isometric_force>1000</max_isometric_force></Thelen2003Muscle>"""
    src = tmp_path / "fbp.osim"
    src.write_text(_doc(bodies, joints, _rect_fem() + fbp))
    with pytest.warns(ArthronWarning, match="FunctionBasedPath.*vas_fbp .*FancyFittedFunction"):
        model = read_osim(src)
    assert model.forces["vas_fbp"].path is None
    assert list(P.compile_paths(model, compile_model(model)).names) == ["rect_fem_r"]
    out = write_osim(tmp_path / "w.osim", model)
    assert "FancyFittedFunction" in out.read_text()


JR_SETUP = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40600"><AnalyzeTool name="fbp">
<model_file>{model}</model_file><replace_force_set>false</replace_force_set><force_set_files />
<results_directory>{out}</results_directory><initial_time>0</initial_time><final_time>0.1</final_time>
<solve_for_equilibrium_for_auxiliary_states>false</solve_for_equilibrium_for_auxiliary_states>
<AnalysisSet name="Analyses"><objects><JointReaction name="JointReaction">
<on>true</on><start_time>0</start_time><end_time>0.1</end_time><step_interval>1</step_interval>
<forces_file>{forces}</forces_file><joint_names>ALL</joint_names><apply_on_bodies>child</apply_on_bodies>
<express_in_frame>ground</express_in_frame></JointReaction></objects><groups /></AnalysisSet>
<coordinates_file>{coords}</coordinates_file>
<lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>
</AnalyzeTool></OpenSimDocument>"""


@needs_data
@needs_opensim
def test_function_based_path_static_optimization_like_opensim(tmp_path):
    """Static optimization (with muscle physiology: the lengths and lengthening speeds enter
    the force-length-velocity factors) on arm26 whose BIClong, TRIlong and BRA have
    FunctionBasedPaths, over 0.1 s of the IK trial: arthron's activations equal OpenSim 4.6's
    StaticOptimization (AnalyzeTool run here) within 2e-3 (measured 1e-3: IPOPT's tolerance
    1e-4), OpenSim's activations meet arthron's equations of motion within 1e-5 N·m (measured
    2e-6), and arthron's objective is never above OpenSim's. TRIlong's speed function enters
    the force-velocity factor (with ``-r q̇`` instead, OpenSim's activations miss arthron's
    equations by 0.28 N·m)."""
    import opensim as osim
    from conftest import REF, static_optimization_setup
    from arthron.io.sto import read_sto
    from arthron.solvers.load_sharing import build_problem, solve_problem
    ik = REF / "task1_arm26" / "IK" / "arm26_InverseKinematics.mot"
    src = _build(tmp_path)
    setup = tmp_path / "so.xml"
    setup.write_text(static_optimization_setup("fbp", src, ik, tmp_path / "osim", 0.0, 0.1,
                                               physiology=True))
    osim.Logger.setLevelString("error")
    with oracle._cwd(tmp_path):
        osim.AnalyzeTool(str(setup)).run()
    ref = read_sto(tmp_path / "osim" / "fbp_StaticOptimization_activation.sto")
    model = read_osim(src)
    prob = build_problem(model, read_sto(ik), lowpass_hz=6, time_range=(0.0, 0.1),
                         use_muscle_physiology=True)
    res = solve_problem(prob)
    assert len(res.time) == len(ref.time) >= 5
    a = ref.data[:, [ref.labels.index(n) for n in res.names]]
    assert np.abs(res.activations - a).max() < 2e-3
    assert np.abs(np.einsum("tqn,tn->tq", prob.B, a) - prob.tau).max() < 1e-5
    assert np.all(res.objective <= (a ** 2).sum(axis=1) + 1e-12)
    assert np.abs(res.residual).max() < 1e-5
    assert a[:, [res.names.index(n) for n in MUSCLES]].max() > 0.02      # the FBP muscles work
    # JointReaction on OpenSim's SO forces: the FBP muscles load the joints only through their
    # generalized forces (no body forces), in OpenSim as in arthron
    from arthron.tools.analyze_tool import joint_reactions_from_setup
    jr = tmp_path / "jr.xml"
    jr.write_text(JR_SETUP.format(model=src, out=tmp_path / "jr", coords=ik,
                                  forces=tmp_path / "osim" / "fbp_StaticOptimization_force.sto"))
    with oracle._cwd(tmp_path):
        osim.AnalyzeTool(str(jr)).run()
    ref = read_sto(tmp_path / "jr" / "fbp_JointReaction_ReactionLoads.sto")
    r = joint_reactions_from_setup(jr)
    assert r.labels == ref.labels
    err = np.abs(r.data - ref.data).max()
    print(f"JR with FBP muscles: max |arthron − OpenSim| = {err:.1e} (up to {np.abs(ref.data).max():.0f})")
    assert err < 1e-6 * max(1.0, np.abs(ref.data).max())


@needs_data
@needs_opensim
def test_function_based_path_built_in_python_is_written_for_opensim(tmp_path):
    """A FunctionBasedPath made in Python (coordinate names only, no component paths) is
    written with the coordinates' component paths: OpenSim 4.6 loads the file and gives
    arthron's lengths and moment arms (to 1e-15)."""
    import opensim as osim
    from arthron.models.functions import LinearFunction
    with warnings.catch_warnings():
        warnings.simplefilter("ignore", ArthronWarning)
        model = read_osim(ARM26)
    model.forces["BRA"].path = FunctionBasedPath(
        coordinates=["r_elbow_flex"],
        length_function=MultivariatePolynomialFunction([0.13, -0.02, 0.004, 0.001], 1, 3),
        moment_arm_functions=[LinearFunction(0.005, 0.02)])
    model.forces["BIClong"].path = FunctionBasedPath(
        coordinates=COORDS, length_function=MultivariatePolynomialFunction(C_BIC, 2, 3))
    out = write_osim(tmp_path / "py_fbp.osim", model)
    assert "/jointset/r_elbow/r_elbow_flex" in out.read_text()
    tree = compile_model(model)
    ps = P.compile_paths(model, tree, forces=MUSCLES[::2])             # BIClong, BRA
    q, qd = _states(tree, T=3, seed=4)
    m, s = oracle.load(out)
    cs = m.getCoordinateSet()
    la, ma = P.path_lengths(ps, tree, q), P.moment_arms(ps, tree, q)
    for t in range(q.shape[0]):
        oracle.set_coordinates(m, s, dict(zip(tree.coordinate_names, q[t])))
        for k, n in enumerate(("BIClong", "BRA")):
            fbp = osim.FunctionBasedPath.safeDownCast(
                osim.PathActuator.safeDownCast(m.getForceSet().get(n)).getPath())
            assert abs(fbp.getLength(s) - la[t, k]) < 1e-15
            j = tree.coordinate_names.index("r_elbow_flex")
            assert abs(fbp.computeMomentArm(s, cs.get("r_elbow_flex")) - ma[t, k, j]) < 1e-15


def test_bad_function_based_paths_are_refused_by_name(tmp_path):
    """Typed errors naming the file or force, where OpenSim 4.6 refuses the model too: a
    coefficient count that does not fit dimension and order (ModelFileError at reading, with
    the element's line), a coordinate the model does not have and a length function whose
    number of arguments differs from the coordinates' (ModelFileError at compiling)."""
    from arthron.errors import ModelFileError
    from test_public_model_elements import _doc, _hip_knee, _rect_fem
    bodies, joints = _hip_knee()

    def model(coords, coefs, dim):
        fbp = f"""<Thelen2003Muscle name='vas_fbp'><FunctionBasedPath name='path'>
<coordinate_paths>{coords}</coordinate_paths><length_function><MultivariatePolynomialFunction>
<coefficients>{coefs}</coefficients><dimension>{dim}</dimension><order>1</order>
</MultivariatePolynomialFunction></length_function></FunctionBasedPath></Thelen2003Muscle>"""
        src = tmp_path / "bad.osim"
        src.write_text(_doc(bodies, joints, _rect_fem() + fbp))
        return src

    with pytest.raises(ModelFileError, match=r"bad.osim: <MultivariatePolynomialFunction> \(line \d+\).*needs 3 coefficients"):
        read_osim(model("/jointset/hip_r/hip_flexion_r /jointset/knee_r/knee_angle_r", "0.3 0.1", 2))
    m = read_osim(model("/jointset/hip_r/no_such_coordinate", "0.3 0.1", 1))
    with pytest.raises(ModelFileError, match="vas_fbp.*no_such_coordinate"):
        P.compile_paths(m, compile_model(m))
    m = read_osim(model("/jointset/hip_r/hip_flexion_r", "0.3 0.1 0.2", 2))
    with pytest.raises(ModelFileError, match="vas_fbp.*length_function takes 2 argument"):
        P.compile_paths(m, compile_model(m))


@needs_data
@needs_opensim
def test_stability_cone_reaction_map_with_function_based_paths_like_opensim(tmp_path):
    """The stability cone's reaction map (``C x + d``, the force each joint applies to its
    child) on arm26 whose BIClong, TRIlong and BRA have FunctionBasedPaths: such a muscle has
    no points and applies only generalized forces, which at the motion's accelerations change
    no joint's transmitted force, so its columns are zero and its tension enters the equations
    of motion only. At OpenSim 4.6's StaticOptimization forces, ``C x + d`` equals the force
    columns of OpenSim's JointReaction run on those forces (its mobilizer reaction forces,
    accelerations by forward dynamics) at both joints (OpenSim's
    activations meet the equations of motion to IPOPT's tolerance, 2e-6 N·m): 3.5e-6 N of
    53 N at the elbow, 3.6e-6 N of 28 N at the shoulder. (The node pulls of the three muscles'
    former GeometryPaths at 5 % activation would move the elbow reaction by 100 N.)"""
    import opensim as osim
    from conftest import REF, static_optimization_setup
    from arthron.io.sto import read_sto
    from arthron.solvers.load_sharing import build_problem
    from arthron.solvers.load_sharing_cone import reaction_map
    ik = REF / "task1_arm26" / "IK" / "arm26_InverseKinematics.mot"
    src = _build(tmp_path)
    setup = tmp_path / "so.xml"
    setup.write_text(static_optimization_setup("fbp", src, ik, tmp_path / "osim", 0.0, 0.1,
                                               physiology=True))
    forces = tmp_path / "osim" / "fbp_StaticOptimization_force.sto"
    jr = tmp_path / "jr.xml"
    jr.write_text(JR_SETUP.format(model=src, out=tmp_path / "jr", coords=ik, forces=forces))
    osim.Logger.setLevelString("error")
    with oracle._cwd(tmp_path):
        osim.AnalyzeTool(str(setup)).run()
        osim.AnalyzeTool(str(jr)).run()
    ref = read_sto(tmp_path / "jr" / "fbp_JointReaction_ReactionLoads.sto")
    model = read_osim(src)
    prob = build_problem(model, read_sto(ik), lowpass_hz=6, time_range=(0.0, 0.1),
                         use_muscle_physiology=True)
    so = read_sto(forces)
    assert len(so.time) == len(prob.time) and len(ref.time) == len(prob.time)
    x = so.data[:, [so.labels.index(n) for n in prob.names]] / prob.force_per_control
    fbp = [prob.names.index(n) for n in MUSCLES]
    geo = [i for i in range(len(prob.names)) if i not in fbp]
    assert x[:, fbp].max() > 0.02                                   # the FBP muscles pull
    for joint, child in (("r_elbow", "r_ulna_radius_hand"), ("r_shoulder", "r_humerus")):
        C, d = reaction_map(model, prob, joint)
        assert not C[:, :, fbp].any() and np.abs(C[:, :, geo]).max() > 0.1
        got = np.einsum("tin,tn->ti", C, x) + d
        cols = [ref.labels.index(f"{joint}_on_{child}_in_ground_{a}") for a in ("fx", "fy", "fz")]
        err = np.abs(got - ref.data[:, cols]).max()
        print(f"{joint}: cone map vs OpenSim JointReaction {err:.1e} N of {np.abs(ref.data[:, cols]).max():.0f}")
        assert err < 1e-3


@needs_data
@needs_opensim
def test_shoulder_study_problem_with_function_based_paths(tmp_path):
    """The shoulder study's per-frame problem (its reaction map by Newton's law on the child
    subtree from the paths' node pulls) takes FunctionBasedPath muscles as the cone does: their
    B columns are their functions' moment arms × F_max, their reaction columns zero, and the
    whole map equals load_sharing_cone.reaction_map's E-matrix map (measured 3e-13 N of 620 N)."""
    from arthron.solvers.load_sharing_cone import reaction_map
    from arthron.solvers.shoulder_forces import abduction_problem
    src = _build(tmp_path)
    model = read_osim(src)
    tree = compile_model(model)
    q, qd = _states(tree, T=5, seed=4)
    qdd = np.random.default_rng(2).uniform(-3, 3, q.shape)
    prob = abduction_problem(model, q, qd, qdd, np.arange(5) * 0.01, COORDS, tree=tree,
                             reaction_joint="r_elbow")
    fbp = [prob.names.index(n) for n in MUSCLES]
    ps = P.compile_paths(model, tree, forces=list(MUSCLES))
    r = P.moment_arms(ps, tree, q, coupled=False)
    fmax = np.array([model.forces[n].max_isometric_force for n in MUSCLES])
    np.testing.assert_allclose(prob.B[:, :, fbp], np.swapaxes(r, 1, 2) * fmax, rtol=1e-14, atol=0)
    joint, C, d = prob.reaction
    assert not C[:, :, fbp].any() and np.abs(C).max() > 1.0
    C2, d2 = reaction_map(model, prob, "r_elbow", tree)
    np.testing.assert_allclose(C, C2, rtol=0, atol=1e-9)
    np.testing.assert_allclose(d, d2, rtol=0, atol=1e-9)
