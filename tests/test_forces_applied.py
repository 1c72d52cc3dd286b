"""Force elements OpenSim applies in ID and joint reactions (issue 11, finding 6): PathSpring and
PointToPointSpring are applied as OpenSim 4.6 applies them (the residual of OpenSim's
InverseDynamicsTool on random states equals arthron's); BushingForce, contact forces and the
expression-based forces are refused by name unless excluded."""
from __future__ import annotations

import re

import numpy as np
import pytest

from conftest import DATA, needs_data, needs_opensim
from arthron.errors import UnsupportedFeature
from arthron.io.osim import read_osim
from arthron.io.sto import read_sto, write_sto
from arthron.solvers.inverse_dynamics import run_inverse_dynamics
from arthron.tables import Table

PENDULUM = DATA / "opensim-reference" / "task6_pendulum" / "pendulum_off0.osim"

SPRINGS = """
<PathSpring name="pspring">
  <GeometryPath name="path"><PathPointSet><objects>
    <PathPoint name="a"><socket_parent_frame>/ground</socket_parent_frame><location>0.25 1.3 0.05</location></PathPoint>
    <PathPoint name="b"><socket_parent_frame>/bodyset/rod</socket_parent_frame><location>0.02 -0.45 0</location></PathPoint>
  </objects></PathPointSet></GeometryPath>
  <resting_length>0.2</resting_length><stiffness>150</stiffness><dissipation>0.7</dissipation>
</PathSpring>
<PointToPointSpring name="p2p">
  <socket_body1>/ground</socket_body1><socket_body2>/bodyset/rod</socket_body2>
  <point1>-0.3 0.8 0.1</point1><point2>0 -0.7 0.03</point2>
  <stiffness>90</stiffness><rest_length>0.25</rest_length>
</PointToPointSpring>
"""


def _model_with(tmp_path, xml):
    text = PENDULUM.read_text()
    if "<ForceSet" in text:
        text = re.sub(r"(<ForceSet[^>]*>\s*<objects>)", r"\1" + xml, text, count=1)
        if xml not in text:
            text = re.sub(r"<ForceSet[^>]*/>", f'<ForceSet name="forceset"><objects>{xml}</objects></ForceSet>', text)
    else:
        text = text.replace("</Model>", f'<ForceSet name="forceset"><objects>{xml}</objects></ForceSet></Model>')
    p = tmp_path / "pendulum_springs.osim"
    p.write_text(text)
    return p


def _random_motion(tmp_path, seed=3):
    """A motion through random states: a sum of random sines (angles up to ~100 degrees,
    speeds to several rad/s)."""
    rng = np.random.default_rng(seed)
    t = np.linspace(0, 1, 101)
    q = sum(rng.uniform(0.2, 0.6) * np.sin(rng.uniform(2, 9) * t + rng.uniform(0, 6)) for _ in range(4))
    p = tmp_path / "q.mot"
    write_sto(p, Table(name="q", time=t, labels=["q"], data=q[:, None], in_degrees=False))
    return p


@needs_data
@needs_opensim
def test_path_spring_and_point_to_point_spring_in_id_like_opensim(tmp_path):
    import oracle
    model_path = _model_with(tmp_path, SPRINGS)
    mot = _random_motion(tmp_path)
    labels, t, ref = oracle.run_id_tool(model_path, mot, tmp_path, (0.05, 0.95))
    model = read_osim(model_path)
    assert model.forces["p2p"].type == "PointToPointSpring" and model.forces["p2p"].body2 == "/bodyset/rod"
    res = run_inverse_dynamics(model, read_sto(mot), time_range=(0.05, 0.95))
    np.testing.assert_allclose(res.time, t, atol=1e-12)
    np.testing.assert_allclose(res.column(labels[0]), ref[:, 0], atol=1e-6, rtol=1e-8)
    # each spring matters (newton-metres), so the agreement checks both force laws
    for name in ("pspring", "p2p"):
        without = run_inverse_dynamics(model, read_sto(mot), time_range=(0.05, 0.95),
                                       forces_to_exclude=("Muscles", name))
        assert np.abs(without.column(labels[0]) - ref[:, 0]).max() > 0.5, name


@needs_data
def test_unsupported_opensim_forces_are_refused_by_name(tmp_path):
    xml = """<ExpressionBasedBushingForce name="bush"><socket_frame1>/ground</socket_frame1>
      <socket_frame2>/bodyset/rod</socket_frame2></ExpressionBasedBushingForce>"""
    model = read_osim(_model_with(tmp_path, xml))
    mot = read_sto(_random_motion(tmp_path))
    with pytest.raises(UnsupportedFeature, match="ExpressionBasedBushingForce 'bush'.*exclude"):
        run_inverse_dynamics(model, mot)
    run_inverse_dynamics(model, mot, forces_to_exclude=("Muscles", "bush"))   # excluded: runs


TILT = """<components><PhysicalOffsetFrame name="tilt"><socket_parent>/bodyset/rod</socket_parent>
  <translation>0.1 -0.3 0.05</translation><orientation>0.4 -0.3 0.7</orientation>
  </PhysicalOffsetFrame></components>"""


@needs_data
@needs_opensim
@pytest.mark.parametrize("frame2", ["/bodyset/rod", "/tilt"])
def test_bushing_force_in_id_like_opensim(tmp_path, frame2):
    """A BushingForce between ground and the rod, or a tilted, shifted frame on it (all three
    deflection angles non-zero), all six stiffnesses and dampings different: OpenSim 4.6's ID
    on random states equals arthron's."""
    import oracle
    xml = f"""<BushingForce name="bush"><socket_frame1>/ground</socket_frame1>
      <socket_frame2>{frame2}</socket_frame2>
      <rotational_stiffness>3 5 7</rotational_stiffness>
      <translational_stiffness>40 60 80</translational_stiffness>
      <rotational_damping>0.3 0.2 0.4</rotational_damping>
      <translational_damping>2 3 4</translational_damping></BushingForce>"""
    p = _model_with(tmp_path, xml)
    if frame2 == "/tilt":
        p.write_text(p.read_text().replace("</Model>", TILT + "</Model>", 1))
    mot = _random_motion(tmp_path, seed=13)
    labels, t, ref = oracle.run_id_tool(p, mot, tmp_path, (0.05, 0.95))
    res = run_inverse_dynamics(read_osim(p), read_sto(mot), time_range=(0.05, 0.95))
    np.testing.assert_allclose(res.column(labels[0]), ref[:, 0], atol=1e-6, rtol=1e-8)
    bare = run_inverse_dynamics(read_osim(PENDULUM), read_sto(mot), time_range=(0.05, 0.95))
    assert np.abs(bare.column(labels[0]) - ref[:, 0]).max() > 1.0


@needs_data
@needs_opensim
def test_point_to_point_spring_in_joint_reactions_like_opensim(tmp_path):
    """The spring's point forces change the pin's reaction: OpenSim 4.6's JointReaction equals
    arthron's (forward accelerations from the motion, as the AnalyzeTool)."""
    import opensim as osim
    import oracle
    from arthron.solvers.reactions import joint_reactions
    model_path = _model_with(tmp_path, SPRINGS)
    mot = _random_motion(tmp_path)
    oracle._quiet(osim)
    setup = tmp_path / "analyze.xml"
    setup.write_text(f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40600"><AnalyzeTool name="jr">
  <model_file>{model_path}</model_file><results_directory>{tmp_path}</results_directory>
  <initial_time>0.1</initial_time><final_time>0.9</final_time>
  <AnalysisSet name="Analyses"><objects>
    <JointReaction name="JointReaction"><joint_names>ALL</joint_names>
      <apply_on_bodies>child</apply_on_bodies><express_in_frame>ground</express_in_frame></JointReaction>
  </objects></AnalysisSet>
  <coordinates_file>{mot}</coordinates_file>
</AnalyzeTool></OpenSimDocument>""")
    osim.AnalyzeTool(str(setup)).run()
    ref = read_sto(tmp_path / "jr_JointReaction_ReactionLoads.sto")
    res = joint_reactions(read_osim(model_path), read_sto(mot), time_range=(0.1, 0.9),
                          accelerations="forward")
    bare = joint_reactions(read_osim(PENDULUM), read_sto(mot), time_range=(0.1, 0.9),
                           accelerations="forward")
    for j, lab in enumerate(ref.labels):
        k = res.labels.index(lab)
        np.testing.assert_allclose(res.time, ref.time, atol=1e-12)
        np.testing.assert_allclose(res.data[:, k], ref.data[:, j], atol=1e-5, rtol=1e-6, err_msg=lab)
    assert np.abs(res.data - bare.data).max() > 1.0   # the springs change the reaction


def _id_with_force_equals_opensim(tmp_path, xml, seed):
    """The pendulum with the force element ``xml`` added, on a random motion: arthron's inverse
    dynamics equals OpenSim 4.6's InverseDynamicsTool (1e-6 N·m), and without the force it
    would not (the force matters by more than 1 N·m)."""
    import oracle
    model_path = _model_with(tmp_path, xml)
    mot = _random_motion(tmp_path, seed=seed)
    labels, t, ref = oracle.run_id_tool(model_path, mot, tmp_path, (0.05, 0.95))
    res = run_inverse_dynamics(read_osim(model_path), read_sto(mot), time_range=(0.05, 0.95))
    np.testing.assert_allclose(res.column(labels[0]), ref[:, 0], atol=1e-6, rtol=1e-8)
    bare = run_inverse_dynamics(read_osim(PENDULUM), read_sto(mot), time_range=(0.05, 0.95))
    assert np.abs(bare.column(labels[0]) - ref[:, 0]).max() > 1.0


@needs_data
@needs_opensim
def test_expression_based_coordinate_force_in_id_like_opensim(tmp_path):
    xml = """<ExpressionBasedCoordinateForce name="expr"><coordinate>q</coordinate>
      <expression>-12*q - 0.8*qdot + 3*sin(2*q)^2 - 0.1*qdot^3 + exp(-square(q))</expression>
      </ExpressionBasedCoordinateForce>"""
    _id_with_force_equals_opensim(tmp_path, xml, seed=5)


def test_expression_outside_the_grammar_is_refused_by_name():
    from arthron.models.expressions import lepton_expression
    f = lepton_expression("2*q^2 - max(q, qdot)", ("q", "qdot"))
    np.testing.assert_allclose(f(np.array([1.0, 2.0]), np.array([3.0, 0.0])), [-1.0, 6.0])
    for bad in ("__import__('os')", "q.real", "z*q", "q if qdot else 1"):
        with pytest.raises(ValueError, match="not"):
            lepton_expression(bad, ("q", "qdot"))


@needs_data
@needs_opensim
def test_expression_based_point_to_point_force_in_id_like_opensim(tmp_path):
    xml = """<ExpressionBasedPointToPointForce name="ep2p"><body1>ground</body1><body2>rod</body2>
      <point1>0.2 0.9 -0.1</point1><point2>0.01 -0.6 0.02</point2>
      <expression>40*(d - 0.3) + 2.5*ddot + 7*d^2</expression></ExpressionBasedPointToPointForce>"""
    _id_with_force_equals_opensim(tmp_path, xml, seed=7)


CONTACT = """
<SmoothSphereHalfSpaceForce name="tip_floor">
  <socket_sphere>/contactgeometryset/tip</socket_sphere>
  <socket_half_space>/contactgeometryset/floor</socket_half_space>
  <stiffness>1000000</stiffness><dissipation>2</dissipation>
  <static_friction>0.8</static_friction><dynamic_friction>0.6</dynamic_friction>
  <viscous_friction>0.2</viscous_friction><transition_velocity>0.2</transition_velocity>
</SmoothSphereHalfSpaceForce>
"""
GEOMETRY = """<ContactGeometrySet name="contactgeometryset"><objects>
  <ContactSphere name="tip"><socket_frame>/bodyset/rod</socket_frame>
    <location>0.01 -1 0.02</location><orientation>0 0 0</orientation><radius>0.1</radius></ContactSphere>
  <ContactHalfSpace name="floor"><socket_frame>/ground</socket_frame>
    <location>0 0.06 0</location><orientation>0.1 0 -1.5707963267948966</orientation></ContactHalfSpace>
</objects></ContactGeometrySet>"""


@needs_data
@needs_opensim
def test_smooth_sphere_half_space_force_in_id_like_opensim(tmp_path):
    """A sphere on the pendulum's tip sweeping through a tilted floor (indentation up to a few
    centimetres, sliding with Stribeck friction): OpenSim 4.6's ID equals arthron's."""
    import oracle
    p = _model_with(tmp_path, CONTACT)
    text = p.read_text().replace("</Model>", GEOMETRY + "</Model>", 1)
    p.write_text(text)
    model = read_osim(p)
    assert set(model.contact_geometry) == {"tip", "floor"}
    mot = _random_motion(tmp_path, seed=11)
    labels, t, ref = oracle.run_id_tool(p, mot, tmp_path, (0.05, 0.95))
    res = run_inverse_dynamics(model, read_sto(mot), time_range=(0.05, 0.95))
    np.testing.assert_allclose(res.column(labels[0]), ref[:, 0], atol=1e-6, rtol=1e-8)
    bare = run_inverse_dynamics(read_osim(PENDULUM), read_sto(mot), time_range=(0.05, 0.95))
    assert np.abs(bare.column(labels[0]) - ref[:, 0]).max() > 1.0    # contact happens


HUNT_CROSSLEY = """
<HuntCrossleyForce name="hc">
  <HuntCrossleyForce::ContactParametersSet name="contact_parameters"><objects>
    <HuntCrossleyForce::ContactParameters>
      <geometry>floor tip</geometry><stiffness>20000</stiffness><dissipation>1.5</dissipation>
      <static_friction>0.8</static_friction><dynamic_friction>0.5</dynamic_friction>
      <viscous_friction>0.3</viscous_friction>
    </HuntCrossleyForce::ContactParameters>
  </objects><groups/></HuntCrossleyForce::ContactParametersSet>
  <transition_velocity>0.15</transition_velocity>
</HuntCrossleyForce>
"""


@needs_data
@needs_opensim
def test_hunt_crossley_sphere_half_space_in_id_like_opensim(tmp_path):
    """HuntCrossleyForce between the pendulum's tip sphere and a tilted floor: OpenSim 4.6's ID
    equals arthron's, and the force (kept verbatim) written back reads the same."""
    import oracle
    from arthron.io.osim import write_osim
    p = _model_with(tmp_path, HUNT_CROSSLEY)
    p.write_text(p.read_text().replace("</Model>", GEOMETRY + "</Model>", 1))
    model = read_osim(p)
    assert model.forces["hc"].extra["contact_parameters"][0]["geometry"] == ["floor", "tip"]
    mot = _random_motion(tmp_path, seed=11)
    labels, t, ref = oracle.run_id_tool(p, mot, tmp_path, (0.05, 0.95))
    res = run_inverse_dynamics(model, read_sto(mot), time_range=(0.05, 0.95))
    np.testing.assert_allclose(res.column(labels[0]), ref[:, 0], atol=1e-6, rtol=1e-8)
    bare = run_inverse_dynamics(read_osim(PENDULUM), read_sto(mot), time_range=(0.05, 0.95))
    assert np.abs(bare.column(labels[0]) - ref[:, 0]).max() > 1.0    # contact happens
    back = read_osim(write_osim(tmp_path / "back.osim", model))
    assert back.forces["hc"].extra["contact_parameters"] == model.forces["hc"].extra["contact_parameters"]
    labels2, t2, ref2 = oracle.run_id_tool(tmp_path / "back.osim", mot, tmp_path, (0.05, 0.95))
    np.testing.assert_allclose(ref2, ref, atol=1e-9)


@needs_data
@needs_opensim
def test_elastic_foundation_between_sphere_and_half_space_like_opensim(tmp_path):
    """Simbody's elastic foundation acts on triangle meshes only: between a sphere and a
    half-space OpenSim 4.6 applies no force, and neither does arthron (with a mesh it refuses)."""
    import oracle
    xml = HUNT_CROSSLEY.replace("HuntCrossleyForce", "ElasticFoundationForce").replace('name="hc"', 'name="ef"')
    p = _model_with(tmp_path, xml)
    p.write_text(p.read_text().replace("</Model>", GEOMETRY + "</Model>", 1))
    mot = _random_motion(tmp_path, seed=11)
    labels, t, ref = oracle.run_id_tool(p, mot, tmp_path, (0.05, 0.95))
    res = run_inverse_dynamics(read_osim(p), read_sto(mot), time_range=(0.05, 0.95))
    np.testing.assert_allclose(res.column(labels[0]), ref[:, 0], atol=1e-6, rtol=1e-8)
    hc = _model_with(tmp_path, HUNT_CROSSLEY)
    hc.write_text(hc.read_text().replace("</Model>", GEOMETRY + "</Model>", 1))
    with_contact = run_inverse_dynamics(read_osim(hc), read_sto(mot), time_range=(0.05, 0.95))
    assert np.abs(with_contact.column(labels[0]) - ref[:, 0]).max() > 1.0   # the pose does touch
    mesh = _model_with(tmp_path, xml.replace("floor tip", "floor bone"))
    mesh.write_text(mesh.read_text().replace("</Model>", GEOMETRY + "</Model>", 1))
    with pytest.raises(UnsupportedFeature, match="ElasticFoundationForce 'ef' \\(on bone\\)"):
        run_inverse_dynamics(read_osim(mesh), read_sto(mot))
