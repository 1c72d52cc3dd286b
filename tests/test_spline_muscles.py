"""Muscles whose curves are splines in the file (Schutte1993Muscle_Deprecated, RigidTendonMuscle)
against OpenSim 4.6 run here: the force per unit activation of StaticOptimization with
use_muscle_physiology (``calcInextensibleTendonActiveFiberForce(s, 1)``), the force at the
default muscle states (``getActuation`` after ``initSystem``), and StaticOptimization itself."""
from __future__ import annotations

import glob

import numpy as np
import pytest

from conftest import DATA, needs_data, needs_opensim, one_muscle_arm, static_optimization_setup
import oracle

DAS4 = DATA / "arm-model" / "das4_v4.osim"


def _poses(model, n, seed):
    """n random poses (q, qd) (n, nq) of the model about its defaults, couplers met."""
    rng = np.random.default_rng(seed)
    names = list(model.coordinates)
    q = np.array([[model.coordinates[c].default_value for c in names]] * n)
    amp = {"GH_y": 0.6, "GH_z": 0.5, "GH_yy": 0.6, "EL_x": 1.0, "PS_y": 0.8, "flexion": 0.5,
           "deviation": 0.2, "SC_y": 0.1, "SC_z": 0.1, "SC_x": 0.1, "AC_y": 0.1, "AC_z": 0.1,
           "AC_x": 0.1, "flex": 1.0}
    for c, a in amp.items():
        if c in names:
            q[:, names.index(c)] += a * rng.uniform(-1, 1, n)
    qd = rng.uniform(-2.0, 2.0, q.shape)
    for con in model.constraints:
        d = names.index(con.properties["dependent_coordinate"])
        i = names.index(con.properties["independent_coordinates"][0])
        f = con.properties["function"]
        q[:, d] = f.value(q[:, i])
        qd[:, d] = f.derivative(q[:, i]) * qd[:, i]
    return names, q, qd


def _opensim_at(path, names, q, qd, what):
    """OpenSim 4.6's per-muscle value at each pose: 'fhat' = calcInextensibleTendonActiveFiberForce
    (s, 1), 'default' = getActuation at the default muscle states; also the path lengths."""
    import opensim as osim
    m = osim.Model(str(path))
    s = m.initSystem()
    cs = m.getCoordinateSet()
    ms = m.getMuscles()
    out, lens = [], []
    for k in range(len(q)):
        for j, c in enumerate(names):
            cs.get(c).setValue(s, float(q[k, j]), False)
            cs.get(c).setSpeedValue(s, float(qd[k, j]))
        m.realizeDynamics(s)
        lens.append([ms.get(i).getLength(s) for i in range(ms.getSize())])
        if what == "default":
            out.append([ms.get(i).getActuation(s) for i in range(ms.getSize())])
        else:
            out.append([ms.get(i).calcInextensibleTendonActiveFiberForce(s, 1.0)
                        for i in range(ms.getSize())])
    return [ms.get(i).getName() for i in range(ms.getSize())], np.array(out), np.array(lens)


def _arthron_paths(model, names, q, qd, muscles):
    from arthron.multibody.kinematics import compile_model
    from arthron.multibody.paths import compile_paths, lengthening_speeds, path_lengths
    tree = compile_model(model)
    cols = [names.index(c) for c in tree.coordinate_names]
    ps = compile_paths(model, tree, forces=muscles)
    return (path_lengths(ps, tree, q[:, cols]), lengthening_speeds(ps, tree, q[:, cols], qd[:, cols]))


@needs_data
@needs_opensim
@pytest.mark.parametrize("what", ["fhat", "default"])
def test_das4_schutte_forces_equal_opensim(tmp_path, what):
    """DAS4's 164 Schutte1993Muscle_Deprecated muscles (138 with the file's passive curve only,
    26 with all three curves) at 6 random poses and speeds: StaticOptimization's force per
    activation (OpenSim's iterative isometric force at activation 1 × the generic
    force-velocity factor) and the default-state force (fiber length 0: all tendon) equal
    OpenSim 4.6's to 1e-9 relative."""
    from arthron.io.osim import read_osim
    from arthron.models.muscles import force_length_velocity, muscle_parameters
    from arthron.solvers.muscle_states import default_state_tensions
    model = read_osim(DAS4)
    names, q, qd = _poses(model, 6, 11)
    with oracle.opensim_defaults_kept(tmp_path):
        mus, ref, lens = _opensim_at(DAS4, names, q, qd, what)
    L, V = _arthron_paths(model, names, q, qd, mus)
    assert np.abs(L - lens).max() < 1e-9
    if what == "fhat":
        par = muscle_parameters(model, mus)
        fl, fp, fv, cosa = force_length_velocity(par, L, V)
        got = par.max_isometric_force * fl * fv * cosa
        assert np.all(fp >= 0)
    else:
        got = default_state_tensions([model.forces[n] for n in mus], L, V)
    assert ref.min() >= 0 and np.median(ref) > 10        # the muscles pull
    np.testing.assert_allclose(got, ref, rtol=1e-9, atol=1e-9 * np.abs(ref).max())


def _das4_motion(model, path):
    """A slow 1-s DAS4 motion (21 frames, radians) about the default pose, couplers met."""
    from arthron.io.sto import write_sto
    from arthron.tables import Table
    t = np.linspace(0, 1, 21)
    s = np.sin(2 * np.pi * t / 4)
    names = list(model.coordinates)
    vals = np.array([[model.coordinates[c].default_value for c in names]] * len(t))
    for c, a in (("GH_y", 0.4), ("GH_z", 0.3), ("EL_x", 1.0), ("PS_y", 0.5), ("flexion", 0.4),
                 ("SC_y", 0.05), ("AC_x", 0.05)):
        vals[:, names.index(c)] += a * s
    for con in model.constraints:
        d = names.index(con.properties["dependent_coordinate"])
        i = names.index(con.properties["independent_coordinates"][0])
        vals[:, d] = con.properties["function"].value(vals[:, i])
    write_sto(path, Table(name="das4", time=t, labels=names, data=vals, in_degrees=False))
    return path


@needs_data
@needs_opensim
def test_das4_static_optimization_with_physiology(tmp_path):
    """StaticOptimization with use_muscle_physiology on DAS4 (164 Schutte1993Muscle_Deprecated
    muscles; reserves of 1 N·m on every coordinate, 1e4 on the floating thorax's six), 4 frames
    of a slow generated motion: activations within 1e-2 of OpenSim 4.6's (measured 4.9e-3, the
    largest 0.17) and arthron's objective at most OpenSim's (0.3 % lower: OpenSim's optimizer
    stops at its convergence criterion 1e-4)."""
    import opensim as osim
    from arthron.cli import main
    from arthron.io.osim import read_osim, write_osim
    from arthron.io.sto import read_sto
    from arthron.tools.load_sharing_tool import add_reserves
    model = add_reserves(read_osim(DAS4), 1.0)
    for f in model.forces.values():        # the floating thorax is held by its reserves at no cost
        if f.name.startswith("TH_") and f.name.endswith("_reserve"):
            f.optimal_force = 1e4
    write_osim(tmp_path / "das4r.osim", model)
    _das4_motion(model, tmp_path / "m.mot")
    for who in ("osim", "arthron"):
        (tmp_path / f"so_{who}.xml").write_text(static_optimization_setup(
            "das4", tmp_path / "das4r.osim", tmp_path / "m.mot", tmp_path / f"res_{who}", 0.4, 0.55,
            physiology=True))
    with oracle.opensim_defaults_kept(tmp_path):
        osim.AnalyzeTool(str(tmp_path / "so_osim.xml")).run()
    assert main(["so", "--setup", str(tmp_path / "so_arthron.xml")]) == 0
    ref = read_sto(glob.glob(str(tmp_path / "res_osim" / "*_activation.sto"))[0])
    got = read_sto(glob.glob(str(tmp_path / "res_arthron" / "*_activation.sto"))[0])
    np.testing.assert_allclose(got.time, ref.time)
    A = np.array([ref.data[:, ref.labels.index(n)] for n in got.labels]).T
    B = got.data
    mus = [k for k, n in enumerate(got.labels) if not n.endswith("_reserve")]
    assert len(mus) == 164 and len(ref.time) == 4
    assert A[:, mus].max() > 0.05                          # the muscles work
    assert np.abs(A - B).max() < 1e-2
    assert np.all((B ** 2).sum(1) <= (A ** 2).sum(1) * (1 + 1e-6))


def _one_muscle_arm_at_nine_poses(tmp_path, path):
    """:func:`conftest.one_muscle_arm` at ``path`` at 9 poses and speeds: (the model read by
    arthron, OpenSim's default-state forces, its forces per activation, its path lengths,
    arthron's path lengths and lengthening speeds)."""
    from arthron.io.osim import read_osim
    model = read_osim(path)
    q = np.linspace(-1.2, 1.8, 9)[:, None]
    qd = np.linspace(-3, 3, 9)[:, None]
    with oracle.opensim_defaults_kept(tmp_path):
        _, dflt, lens = _opensim_at(path, ["flex"], q, qd, "default")
        _, fhat, _ = _opensim_at(path, ["flex"], q, qd, "fhat")
    L, V = _arthron_paths(model, ["flex"], q, qd, ["FLEX"])
    return model, dflt, fhat, lens, L, V


# a file curve for each property (the passive one steeper than the default, so it pulls at
# the lengths reached)
_RIGID_CURVES = """
<active_force_length_curve><SimmSpline><x>0 0.5 1 1.5 2</x><y>0 0.3 1 0.4 0</y></SimmSpline></active_force_length_curve>
<passive_force_length_curve><SimmSpline><x>0 0.6 1 1.4 2</x><y>0 0 0.1 0.9 3</y></SimmSpline></passive_force_length_curve>
<force_velocity_curve><SimmSpline><x>-1 -0.5 0 0.5 1</x><y>0 0.3 1 1.5 1.6</y></SimmSpline></force_velocity_curve>"""


@needs_opensim
@pytest.mark.parametrize("curves", ["", _RIGID_CURVES], ids=["default-curves", "file-curves"])
def test_rigid_tendon_muscle_equals_opensim(tmp_path, curves):
    """RigidTendonMuscle (one muscle over a pin joint, default and file curves) at 9 poses and
    speeds: the default-state force (no controller: activation = control = 0, the passive fiber
    force along the tendon) and StaticOptimization's force per activation (F_max f_L f_V cos α,
    fiber velocity the path's unprojected speed) equal OpenSim 4.6's to 1e-9 relative; and
    StaticOptimization with use_muscle_physiology gives OpenSim's activations (one muscle: a
    unique solution)."""
    import opensim as osim
    from arthron.io.sto import read_sto
    from arthron.models.muscles import force_length_velocity, muscle_parameters
    from arthron.cli import main
    from arthron.solvers.muscle_states import default_state_tensions
    path = tmp_path / "arm.osim"
    path.write_text(one_muscle_arm("RigidTendonMuscle", 8, curves))
    model, dflt, fhat, lens, L, V = _one_muscle_arm_at_nine_poses(tmp_path, path)
    assert np.abs(L - lens).max() < 1e-12
    got = default_state_tensions([model.forces["FLEX"]], L, V)
    assert dflt.max() > 1.0                                 # the passive force pulls somewhere
    np.testing.assert_allclose(got, dflt, rtol=1e-9, atol=1e-12)
    par = muscle_parameters(model, ["FLEX"])
    fl, fp, fv, cosa = force_length_velocity(par, L, V)
    np.testing.assert_allclose(800.0 * fl * fv * cosa, fhat, rtol=1e-9, atol=1e-12)
    # StaticOptimization with physiology on a slow motion
    t = np.linspace(0, 1, 51)
    qm = 0.6 + 0.4 * np.sin(2 * np.pi * t)
    mot = tmp_path / "arm.mot"
    mot.write_text(f"arm\nversion=1\nnRows={len(t)}\nnColumns=2\ninDegrees=no\nendheader\ntime\tflex\n"
                   + "".join(f"{a:.6f}\t{b:.12f}\n" for a, b in zip(t, qm)))
    for who in ("osim", "arthron"):
        (tmp_path / f"so_{who}.xml").write_text(static_optimization_setup(
            "arm", path, mot, tmp_path / f"res_{who}", 0.1, 0.9, physiology=True))
    with oracle.opensim_defaults_kept(tmp_path):
        osim.AnalyzeTool(str(tmp_path / "so_osim.xml")).run()
    assert main(["so", "--setup", str(tmp_path / "so_arthron.xml")]) == 0
    ref = read_sto(glob.glob(str(tmp_path / "res_osim" / "*_activation.sto"))[0])
    got = read_sto(glob.glob(str(tmp_path / "res_arthron" / "*_activation.sto"))[0])
    A = got.data[:, got.labels.index("FLEX")]
    R = ref.data[:, ref.labels.index("FLEX")]
    assert len(R) == len(A) > 30 and R.max() > 0.02
    np.testing.assert_allclose(A, R, atol=1e-6)


@needs_opensim
@pytest.mark.parametrize("cls", ["Schutte1993Muscle_Deprecated", "Delp1990Muscle_Deprecated",
                                 "Thelen2003Muscle_Deprecated"])
def test_deprecated_muscles_inline_equal_opensim(tmp_path, cls):
    """A pennated (0.2 rad) Schutte1993 / Delp1990 / Thelen2003 deprecated muscle with the
    class's default curves (Schutte: no passive curve in the file, so the exponential
    exp(8(l̃−1))/exp(4); Delp: its first guess L − l_s; Thelen: closed forms) at 9 poses and speeds, some with the path shorter than the tendon
    slack length: the default-state force and StaticOptimization's force per activation equal
    OpenSim 4.6's to 1e-9 relative."""
    from arthron.models.muscles import force_length_velocity, muscle_parameters
    from arthron.solvers.muscle_states import default_state_tensions
    path = tmp_path / "arm.osim"
    text = one_muscle_arm(cls, 8)
    path.write_text(text.replace("<tendon_slack_length>0.1<", "<tendon_slack_length>0.2<"))
    model, dflt, fhat, lens, L, V = _one_muscle_arm_at_nine_poses(tmp_path, path)
    assert np.abs(L - lens).max() < 1e-12 and L.min() < 0.2 < L.max()
    np.testing.assert_allclose(default_state_tensions([model.forces["FLEX"]], L, V), dflt,
                               rtol=1e-9, atol=1e-9)
    par = muscle_parameters(model, ["FLEX"])
    fl, fp, fv, cosa = force_length_velocity(par, L, V)
    assert fhat.max() > 100 and np.any(fhat == 0)
    np.testing.assert_allclose(800.0 * fl * fv * cosa, fhat, rtol=1e-9, atol=1e-9)


@needs_data
@needs_opensim
def test_das4_inverse_dynamics_with_muscles_not_excluded(tmp_path):
    """OpenSim's InverseDynamicsTool with an empty forces_to_exclude applies DAS4's 164 Schutte
    muscles at their default states (fiber length 0: tendon forces of 10⁴ N); arthron's
    inverse dynamics equals it (21 frames, 6 Hz), every column to 1e-9 of the largest."""
    from arthron.io.osim import read_osim
    mot = _das4_motion(read_osim(DAS4), tmp_path / "m.mot")
    got, ref = oracle.inverse_dynamics_with_muscles(DAS4, mot, tmp_path / "osim",
                                                    oracle.opensim_defaults_kept(tmp_path))
    assert got.labels == ref.labels and len(got.time) == len(ref.time) == 21
    big = np.abs(ref.data).max()
    assert big > 1e3
    assert np.abs(got.generalized_forces - ref.data).max() < 1e-9 * big


@needs_data
def test_das4_grouped_isometric_search_equals_one_muscle_at_a_time():
    """The force per unit activation computes the isometric search of the muscles that share
    their curves (one memo of muscle_spline) as one block of (frame, muscle) elements: the same
    numbers, bit for bit, as schutte_isometric_force one muscle at a time with its own curves
    read without the memo (DAS4's 164 Schutte1993 elements, random poses); the memo gives the
    same curves."""
    from arthron.io.osim import read_osim
    from arthron.models import spline_muscles as sm
    from arthron.multibody.path_compile import compile_paths
    from arthron.multibody.paths import path_lengths
    from arthron.multibody.tree import compile_model
    model = read_osim(DAS4)
    names, q, _ = _poses(model, 12, 3)
    mus = [f for f in model.forces.values() if f.type in sm.SPLINE_MUSCLE_TYPES]
    tree = compile_model(model)
    L = path_lengths(compile_paths(model, tree, forces=[m.name for m in mus]), tree, q)
    memo = {}
    grouped = [sm._Schutte(m, memo) for m in mus]
    alone = [sm._Schutte(m) for m in mus]
    assert len({id(p.afl) for p in grouped}) < len(mus) // 10     # the curves are shared
    F, LF = sm._isometric_grouped(grouped, L, 1.0)
    for k, p in enumerate(alone):
        for curve in ("afl", "tfl", "pfl"):
            a, b = getattr(p, curve), getattr(grouped[k], curve)
            assert (a is None) == (b is None)
            if a is not None:
                assert np.array_equal(a.x, b.x) and np.array_equal(a.y, b.y)
        f, lf = sm.schutte_isometric_force(p, L[:, k], 1.0)
        assert np.array_equal(F[:, k], f) and np.array_equal(LF[:, k], lf), mus[k].name
    assert (F > 0).all()
