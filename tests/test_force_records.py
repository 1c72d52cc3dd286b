"""StaticOptimization's ``_force.sto`` carries OpenSim's ForceReporter columns for the passive
force elements too: every force that applies force, in the model's order, with each class's
``getRecordLabels`` / ``getRecordValues`` (CoordinateLimitForce force + PotentialEnergy,
springs, ligaments, two-point forces), checked against OpenSim 4.6 run here on arm26 with such
forces added inline (CoordinateLimitForce, springs, ligaments, two-point forces, bushings)."""
from __future__ import annotations

import warnings

import numpy as np
import pytest

from conftest import ARM26_TUT, REF, needs_data, needs_opensim, static_optimization_setup

ARM_MODEL = ARM26_TUT / "InverseKinematics" / "arm26.osim"
ARM_IK = REF / "task1_arm26" / "IK" / "arm26_InverseKinematics.mot"

# one force before the muscles (order), the others after; the elbow goes 0-90 deg, so the
# limit force is active at both ends and in its transition zones
FIRST = """<CoordinateLimitForce name="elbow_limit"><coordinate>r_elbow_flex</coordinate>
<upper_stiffness>0.5</upper_stiffness><upper_limit>60</upper_limit><lower_stiffness>0.3</lower_stiffness>
<lower_limit>5</lower_limit><damping>0.01</damping><transition>10</transition></CoordinateLimitForce>
"""


def _path(p1, p2):
    return ("<GeometryPath name=\"path\"><PathPointSet><objects>"
            f"<PathPoint name=\"p1\"><socket_parent_frame>/bodyset/r_humerus</socket_parent_frame><location>{p1}</location></PathPoint>"
            f"<PathPoint name=\"p2\"><socket_parent_frame>/bodyset/r_ulna_radius_hand</socket_parent_frame><location>{p2}</location></PathPoint>"
            "</objects></PathPointSet></GeometryPath>")


LAST = f"""<SpringGeneralizedForce name="sh_spring"><coordinate>r_shoulder_elev</coordinate><stiffness>2</stiffness>
<rest_length>0.02</rest_length><viscosity>0.1</viscosity></SpringGeneralizedForce>
<ExpressionBasedCoordinateForce name="ebcf"><coordinate>r_elbow_flex</coordinate><expression>-0.5*q-0.01*qdot</expression></ExpressionBasedCoordinateForce>
<PointToPointSpring name="p2p"><socket_body1>/bodyset/r_humerus</socket_body1><socket_body2>/bodyset/r_ulna_radius_hand</socket_body2>
<point1>0.01 -0.1 0.0</point1><point2>0 -0.1 0.01</point2><stiffness>50</stiffness><rest_length>0.1</rest_length></PointToPointSpring>
<PointToPointSpring name="p2g"><socket_body1>/ground</socket_body1><socket_body2>/bodyset/r_ulna_radius_hand</socket_body2>
<point1>0.1 0.5 0.2</point1><point2>0 -0.2 0.0</point2><stiffness>5</stiffness><rest_length>0.2</rest_length></PointToPointSpring>
<Ligament name="lig">{_path("0 -0.25 0.02", "0 -0.05 0.02")}<resting_length>0.06</resting_length><pcsa_force>20</pcsa_force>
<force_length_curve><SimmSpline name="fl"><x> -5 0.998 0.999 1 1.1 1.2 1.3 1.4 5</x><y> 0 0 0 0 0.035 0.1 0.2 0.3 1.3</y></SimmSpline></force_length_curve></Ligament>
<Blankevoort1991Ligament name="blig">{_path("0.01 -0.25 -0.02", "0.01 -0.05 -0.02")}<slack_length>0.06</slack_length>
<linear_stiffness>100</linear_stiffness><damping_coefficient>0.05</damping_coefficient></Blankevoort1991Ligament>
<Blankevoort1991Ligament name="blig2">{_path("-0.03 -0.27 0.0", "-0.03 0.02 0.0")}<slack_length>0.03</slack_length>
<linear_stiffness>100</linear_stiffness><damping_coefficient>0.05</damping_coefficient></Blankevoort1991Ligament>
<PathSpring name="pspring">{_path("-0.01 -0.25 0.0", "-0.01 -0.05 0.0")}<resting_length>0.06</resting_length>
<stiffness>30</stiffness><dissipation>0.1</dissipation></PathSpring>
<BushingForce name="bush"><socket_frame1>/bodyset/r_humerus</socket_frame1><socket_frame2>/bodyset/r_ulna_radius_hand</socket_frame2>
<rotational_stiffness>0.1 0.2 0.3</rotational_stiffness><translational_stiffness>10 20 30</translational_stiffness>
<rotational_damping>0.01 0.01 0.01</rotational_damping><translational_damping>0.1 0.1 0.1</translational_damping></BushingForce>
<BushingForce name="gbush"><socket_frame1>/ground</socket_frame1><socket_frame2>/bodyset/r_ulna_radius_hand</socket_frame2>
<rotational_stiffness>0.05 0.05 0.05</rotational_stiffness><translational_stiffness>5 5 5</translational_stiffness></BushingForce>
<CoordinateLimitForce name="off_limit"><appliesForce>false</appliesForce><coordinate>r_shoulder_elev</coordinate></CoordinateLimitForce>
"""

PASSIVE = ("elbow_limit", "PotentialEnergy", "sh_spring", "ebcf", "p2p.", "p2g.", "lig", "blig.", "blig2.", "pspring", "bush.", "gbush.")


def _model(tmp_path, extra=""):
    raw = ARM_MODEL.read_text()
    head = '<ForceSet name="forceset">\n\t\t\t<objects>'
    assert head in raw
    raw = raw.replace(head, head + FIRST, 1)
    j = raw.rindex("</objects>", 0, raw.index("</ForceSet>"))
    p = tmp_path / "arm26_passive.osim"
    p.write_text(raw[:j] + LAST + extra + raw[j:])
    return p


def _passive(labels):
    return [i for i, n in enumerate(labels) if n.startswith(PASSIVE)]


def _both_force_files(tmp_path, model, t1):
    """OpenSim 4.6's StaticOptimization (AnalyzeTool) and arthron's on the same setup (arm26's
    IK from 0 to ``t1`` s, muscle physiology): (setup, OpenSim's force file, arthron's result,
    arthron's force file); arthron must leave no force out (no warning)."""
    import opensim as osim
    from arthron.io.sto import read_sto
    from arthron.tools.static_optimization_tool import run_static_optimization_from_setup
    setup = tmp_path / "so.xml"
    setup.write_text(static_optimization_setup("arm", model, ARM_IK, tmp_path / "osim", 0.0, t1,
                                               physiology=True))
    osim.Logger.setLevelString("error")
    osim.AnalyzeTool(str(setup)).run()
    ref = read_sto(tmp_path / "osim" / "arm_StaticOptimization_force.sto")
    with warnings.catch_warnings():
        warnings.simplefilter("error")                   # nothing left out
        res, written = run_static_optimization_from_setup(setup, results_dir=tmp_path / "ours")
    return setup, ref, res, read_sto(written[1])


@needs_data
@needs_opensim
def test_force_file_has_opensims_passive_force_columns(tmp_path):
    """Same labels in the same order as OpenSim 4.6's StaticOptimization force file; the passive
    columns (functions of the kinematics only) within 1e-6 relative of OpenSim's (measured:
    ≤ 5e-9 absolute, the files' printed precision), the
    actuators within its optimizer's tolerance. ``arthron so`` without a setup writes the same
    columns."""
    from arthron.io.sto import read_sto
    model = _model(tmp_path)
    setup, ref, res, ours = _both_force_files(tmp_path, model, 1.0)
    assert ours.labels == ref.labels
    assert ours.labels[:3] == ["elbow_limit", "PotentialEnergy", "TRIlong"]
    assert "off_limit" not in ours.labels and len(ours.labels) == 6 + 2 + 1 + 1 + 24 + 1 + 14 + 1 + 24
    assert len(ours.time) == len(ref.time) == 121 and np.abs(ours.time - ref.time).max() < 1e-9
    cols = _passive(ours.labels)
    a, b = ours.data[:, cols], ref.data[:, cols]
    scale = np.abs(b).max(axis=0)
    # every passive column is exercised (but blig's damping: it only shortens)
    assert [ours.labels[c] for c, v in zip(cols, scale) if v == 0] == ["blig.force_damping"]
    # 1e-6 relative, plus half the last of the 8 decimals both files print
    err = np.abs(a - b).max(axis=0) / (1e-6 * scale + 5e-9)
    assert err.max() < 1, dict(zip([ours.labels[i] for i in cols], err))
    # the Blankevoort ligament's damping and slack phases are both visited
    d = ours.data[:, ours.labels.index("blig2.force_damping")]
    s = ours.data[:, ours.labels.index("blig2.strain")]
    assert d.max() > 0.1 and s.min() < 0
    # the limit force's transition zones and both limits are visited
    q = np.degrees(res.extra["problem"].q[:, 1])
    assert q.min() < 5 and q.max() > 70
    mus = [ours.labels.index(n) for n in res.names]
    assert np.abs(ours.data[:, mus] - ref.data[:, mus]).max() < 5e-3 * 1.2 * 1000
    # `arthron so MODEL MOTION` (no setup) writes the same force file
    import os
    import subprocess
    import sys
    from conftest import ROOT
    r = subprocess.run([sys.executable, "-m", "arthron.cli", "so", str(model), str(ARM_IK), "--lowpass", "6",
                        "-o", str(tmp_path / "cli")], capture_output=True, text=True,
                       env={**os.environ, "PYTHONPATH": str(ROOT / "src")})
    assert r.returncode == 0, r.stderr
    direct = read_sto(tmp_path / "cli" / "arm26_passive_StaticOptimization_force.sto")
    assert direct.labels == ref.labels
    np.testing.assert_allclose(direct.data[:, cols], ours.data[:, cols], rtol=0, atol=1e-8 * scale.max())


@needs_data
def test_unreproduced_records_are_named_in_a_warning(tmp_path):
    """A force class whose ForceReporter columns arthron does not reproduce (here a plugin
    class, which arthron keeps unmodelled) is left out of the force file with an ArthronWarning
    naming it; the other columns stay."""
    from arthron.errors import ArthronWarning
    from arthron.io.sto import read_sto
    from arthron.tools.static_optimization_tool import run_static_optimization, write_static_optimization
    model = _model(tmp_path, '<Smith2018ArticularContactForce name="tf_contact"/>')
    with pytest.warns(ArthronWarning, match="tf_contact"):      # left out of the solve too
        res = run_static_optimization(model, ARM_IK, lowpass_hz=6, time_range=(0, 0.2))
    with pytest.warns(ArthronWarning, match="force file leaves out .*Smith2018ArticularContactForce 'tf_contact'"):
        f = write_static_optimization(res, tmp_path / "o", "arm")[1]
    t = read_sto(f)
    assert not any(n.startswith("tf_contact") for n in t.labels)
    assert t.labels[:2] == ["elbow_limit", "PotentialEnergy"] and "bush.r_humerus.torque.Z" in t.labels


@needs_data
def test_records_take_the_passive_forces_already_evaluated(tmp_path, monkeypatch):
    """``force_records(..., passive=pf)`` (what the static optimization passes: the passive
    elements as its equations of motion evaluated them) gives the same columns bit for bit as
    evaluating the elements again, and evaluates none of them again."""
    import arthron.multibody.force_records as FR
    from arthron.io.osim import read_osim
    from arthron.io.sto import read_sto
    from arthron.models.motion import coordinates_from_table
    from arthron.multibody.forces import passive_forces
    from arthron.multibody.kinematics import compile_model
    model = read_osim(_model(tmp_path))
    tree = compile_model(model)
    q = np.asarray(coordinates_from_table(model, read_sto(ARM_IK), missing="default"), float)[:40]
    qd = np.gradient(q, 0.01, axis=0)
    acts = [n for n, f in model.forces.items() if f.is_muscle]
    pf = passive_forces(model, tree, q, qd, ("Muscles", "Actuators"))
    again = FR.force_records(model, tree, q, qd, acts)

    def evaluated_again(*a, **k):
        raise AssertionError("passive element evaluated again")
    for name in ("coordinate_force", "two_point_forces"):
        monkeypatch.setattr(FR, name, evaluated_again)
    monkeypatch.setattr("arthron.multibody.paths.compile_paths", evaluated_again)
    monkeypatch.setattr("arthron.multibody.kinematics.forward_kinematics", evaluated_again)
    shared = FR.force_records(model, tree, q, qd, acts, passive=pf)
    forces = {n: np.full(40, 1.0 + i) for i, n in enumerate(acts)}
    (la, da), (lb, db) = again.columns(forces, 40), shared.columns(forces, 40)
    assert la == lb and len(la) > 60 and np.array_equal(da, db)
    assert again.omitted == shared.omitted


GEOMETRY = """<ContactHalfSpace name="floor"><socket_frame>/ground</socket_frame><location>0 {h} 0</location>
<orientation>0 0 -1.5707963</orientation></ContactHalfSpace>
<ContactSphere name="hand"><socket_frame>/bodyset/r_ulna_radius_hand</socket_frame><location>0 -0.2 0</location><radius>0.05</radius></ContactSphere>
<ContactSphere name="elbowball"><socket_frame>/bodyset/r_humerus</socket_frame><location>0 -0.3 0</location><radius>0.05</radius></ContactSphere>
"""
CONTACT = """<HuntCrossleyForce name="hc"><HuntCrossleyForce::ContactParametersSet name="contact_parameters"><objects>
<HuntCrossleyForce::ContactParameters><geometry>floor hand elbowball</geometry><stiffness>10000</stiffness>
<dissipation>0.5</dissipation><static_friction>0.8</static_friction><dynamic_friction>0.4</dynamic_friction>
<viscous_friction>0.1</viscous_friction></HuntCrossleyForce::ContactParameters></objects></HuntCrossleyForce::ContactParametersSet>
</HuntCrossleyForce>
<ElasticFoundationForce name="ef"><ElasticFoundationForce::ContactParametersSet name="contact_parameters"><objects>
<ElasticFoundationForce::ContactParameters><geometry>floor hand</geometry><stiffness>10000</stiffness>
</ElasticFoundationForce::ContactParameters></objects></ElasticFoundationForce::ContactParametersSet></ElasticFoundationForce>
<SmoothSphereHalfSpaceForce name="ss"><socket_sphere>/contactgeometryset/hand</socket_sphere>
<socket_half_space>/contactgeometryset/floor</socket_half_space><stiffness>20000</stiffness><dissipation>0.5</dissipation>
<static_friction>0.8</static_friction><dynamic_friction>0.4</dynamic_friction><viscous_friction>0.1</viscous_friction></SmoothSphereHalfSpaceForce>
"""


@needs_data
@needs_opensim
def test_contact_force_records_match_opensim(tmp_path):
    """HuntCrossleyForce (one column group per geometry, ground included),
    ElasticFoundationForce (the same labels, 0 on spheres) and SmoothSphereHalfSpaceForce
    (``Sphere``, ``HalfSpace``) records against OpenSim 4.6's
    StaticOptimization force file: the hand's sphere presses into a floor at the start of the
    motion and leaves it as the elbow flexes."""
    raw = ARM_MODEL.read_text()
    empty = '<ContactGeometrySet name="contactgeometryset">\n\t\t\t<objects />'
    assert empty in raw
    raw = raw.replace(empty, '<ContactGeometrySet name="contactgeometryset"><objects>'
                      + GEOMETRY.format(h=0.28) + "</objects>", 1)
    j = raw.rindex("</objects>", 0, raw.index("</ForceSet>"))
    model = tmp_path / "arm26_contact.osim"
    model.write_text(raw[:j] + CONTACT + raw[j:])
    setup, ref, res, ours = _both_force_files(tmp_path, model, 0.5)
    assert ours.labels == ref.labels
    assert ours.labels[6:12] == [f"hc.ground.{k}.{a}" for k in ("force", "torque") for a in "XYZ"]
    cols = [i for i, n in enumerate(ours.labels) if n.startswith(("hc.", "ss.", "ef."))]
    assert len(cols) == 18 + 12 + 12
    a, b = ours.data[:, cols], ref.data[:, cols]
    scale = np.abs(b).max()
    fy = ref.data[:, ref.labels.index("hc.r_ulna_radius_hand.force.Y")]
    assert fy.max() > 4 and fy.min() == 0                 # in contact, then out of it
    err = np.abs(a - b).max(axis=0)
    assert err.max() < 1e-6 * scale + 5e-9, dict(zip([ours.labels[i] for i in cols], err))
