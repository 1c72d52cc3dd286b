"""Every joint type arthron compiles, against OpenSim 4.6 on a chain model built in the test:
body poses at random coordinates and inverse dynamics of a moving trial."""
from __future__ import annotations

import numpy as np
import pytest

import oracle
from conftest import needs_opensim
from arthron.io.osim import read_osim
from arthron.io.sto import Table, read_sto, write_sto
from arthron.multibody.kinematics import compile_model
from arthron.solvers.inverse_dynamics import run_inverse_dynamics

# (joint type, coordinates, extra properties); each joint's parent is the previous body
CHAIN = [
    ("BallJoint", ["b_x", "b_y", "b_z"], ""),
    ("GimbalJoint", ["g_x", "g_y", "g_z"], ""),
    ("UniversalJoint", ["u_x", "u_y"], ""),
    ("PlanarJoint", ["p_rz", "p_tx", "p_ty"], ""),
    ("SliderJoint", ["s_x"], ""),
    ("EllipsoidJoint", ["e_x", "e_y", "e_z"], "<radii_x_y_z>0.05 0.08 0.11</radii_x_y_z>"),
    ("FreeJoint", ["f_rx", "f_ry", "f_rz", "f_tx", "f_ty", "f_tz"], ""),
    ("PinJoint", ["pin"], ""),
]


def _chain_xml() -> str:
    rng = np.random.default_rng(11)
    bodies, joints = [], []
    parent = "/ground"
    for k, (jt, coords, extra) in enumerate(CHAIN):
        b = f"link{k}"
        m = 1.0 + k * 0.3
        com = rng.normal(0, 0.05, 3) + np.array([0, -0.15, 0])
        I = np.diag(rng.uniform(0.005, 0.02, 3))
        I[0, 1] = I[1, 0] = 0.001
        bodies.append(f"""<Body name="{b}"><mass>{m}</mass><mass_center>{' '.join(map(str, com))}</mass_center>
            <inertia>{I[0, 0]} {I[1, 1]} {I[2, 2]} {I[0, 1]} 0 0</inertia></Body>""")
        cxml = "".join(f'<Coordinate name="{c}"><default_value>0</default_value><range>-3 3</range></Coordinate>'
                       for c in coords)
        tp = " ".join(map(str, rng.normal(0, 0.05, 3) + np.array([0, -0.3 if k else 1.0, 0])))
        op = " ".join(map(str, rng.normal(0, 0.3, 3)))
        oc = " ".join(map(str, rng.normal(0, 0.3, 3)))
        tc = " ".join(map(str, rng.normal(0, 0.03, 3)))
        joints.append(f"""<{jt} name="j{k}">
            <socket_parent_frame>{b}_parent</socket_parent_frame>
            <socket_child_frame>{b}_child</socket_child_frame>
            <coordinates>{cxml}</coordinates>
            <frames>
              <PhysicalOffsetFrame name="{b}_parent"><socket_parent>{parent}</socket_parent>
                <translation>{tp}</translation><orientation>{op}</orientation></PhysicalOffsetFrame>
              <PhysicalOffsetFrame name="{b}_child"><socket_parent>/bodyset/{b}</socket_parent>
                <translation>{tc}</translation><orientation>{oc}</orientation></PhysicalOffsetFrame>
            </frames>{extra}</{jt}>""")
        parent = f"/bodyset/{b}"
    return f"""<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40000"><Model name="chain">
  <gravity>0 -9.80665 0</gravity>
  <Ground name="ground"/>
  <BodySet name="bodyset"><objects>{''.join(bodies)}</objects></BodySet>
  <JointSet name="jointset"><objects>{''.join(joints)}</objects></JointSet>
</Model></OpenSimDocument>"""


@pytest.fixture
def chain(tmp_path):
    p = tmp_path / "chain.osim"
    p.write_text(_chain_xml())
    return p


@needs_opensim
def test_every_joint_type_poses_equal_opensim(chain):
    model = read_osim(chain)
    tree = compile_model(model)
    m, s = oracle.load(chain)
    rng = np.random.default_rng(3)
    for _ in range(5):
        oracle.assert_poses_equal(m, s, tree, rng.uniform(-0.8, 0.8, tree.nq))


@needs_opensim
def test_every_joint_type_inverse_dynamics_equals_opensim(chain, tmp_path):
    """Ball, Free (rotations) and Ellipsoid speeds are angular velocities in OpenSim; the tool
    reads the spline derivatives as those speeds and reports forces conjugate to them."""
    model = read_osim(chain)
    names = list(model.coordinates)
    t = np.linspace(0, 1, 101)
    data = 0.4 * np.sin(2 * np.pi * t[:, None] * (0.7 + 0.13 * np.arange(len(names))) + np.arange(len(names)))
    mot = tmp_path / "chain.mot"
    write_sto(mot, Table(name="chain", time=t, labels=names, data=data, in_degrees=False))
    labels, to, dat = oracle.run_id_tool(chain, mot, tmp_path, (0.1, 0.9), lowpass=6.0)
    res = run_inverse_dynamics(model, read_sto(mot), lowpass_hz=6.0, time_range=(0.1, 0.9))
    assert res.labels == labels
    for k, lab in enumerate(labels):
        np.testing.assert_allclose(res.column(lab), dat[:, k], atol=1e-7, rtol=1e-8, err_msg=lab)
