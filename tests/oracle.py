"""Helpers that ask the official OpenSim (extra 'interop') for reference numbers."""
from __future__ import annotations

import contextlib
import os
from pathlib import Path

import numpy as np


@contextlib.contextmanager
def _cwd(path):
    old = os.getcwd()
    os.chdir(path)
    try:
        yield
    finally:
        os.chdir(old)


def _quiet(osim):
    osim.Logger.setLevelString("error")
    try:
        osim.Logger.removeFileSink()      # no opensim.log beside the data
    except Exception:
        pass


_DEFAULTS_KEPT = {"CoordinateActuator": ("optimal_force",),
                  "CoordinateLimitForce": ("upper_stiffness", "upper_limit", "lower_stiffness",
                                           "lower_limit", "damping", "transition")}


@contextlib.contextmanager
def opensim_defaults_kept(tmpdir):
    """Put OpenSim's class defaults back after the block: a ``<defaults>`` block in a file
    OpenSim reads (gait2354_CMC_Actuators.xml's CoordinateActuator has optimal_force 1000)
    changes the default object of that class for the rest of the process, which would leak
    into later tests. The defaults are restored by OpenSim reading a ForceSet whose
    ``<defaults>`` hold the values taken before the block."""
    import opensim as osim
    _quiet(osim)
    keep = {cls: {k: (getattr(obj, "getOptimalForce")() if k == "optimal_force" else getattr(obj, f"get_{k}")())
                  for k in props}
            for cls, props in _DEFAULTS_KEPT.items() for obj in [getattr(osim, cls)()]}
    try:
        yield keep
    finally:
        body = "".join(f'<{cls} name="default">' + "".join(f"<{k}>{v!r}</{k}>" for k, v in vals.items())
                       + f"</{cls}>" for cls, vals in keep.items())
        reset = Path(tmpdir) / "opensim_defaults_reset.xml"
        reset.write_text('<?xml version="1.0" encoding="UTF-8"?><OpenSimDocument Version="40000">'
                         f'<ForceSet name="reset"><defaults>{body}</defaults><objects/></ForceSet>'
                         "</OpenSimDocument>")
        osim.ForceSet(str(reset))


def load(path, remove_types=()):
    """Load a model in OpenSim, optionally stripped of plugin classes.

    A stripped copy is written to a temporary folder (never beside the shared data) and deleted
    after loading; meshes are not needed (OpenSim only warns).
    """
    import shutil
    import tempfile

    import opensim as osim
    _quiet(osim)
    path = str(path)
    tmpdir = None
    if remove_types:
        from lxml import etree
        tree = etree.parse(path)
        for e in list(tree.getroot().iter()):
            if isinstance(e.tag, str) and e.tag in remove_types:
                e.getparent().remove(e)
        tmpdir = tempfile.mkdtemp(prefix="arthron-oracle-")
        path = os.path.join(tmpdir, os.path.basename(path))
        tree.write(path)
    try:
        m = osim.Model(path)
        s = m.initSystem()
    finally:
        if tmpdir:
            shutil.rmtree(tmpdir, ignore_errors=True)
    return m, s


def vec(v, n=3):
    return np.array([v.get(i) for i in range(n)])


def mat33(M):
    return np.array([[M.get(i, j) for j in range(3)] for i in range(3)])


def body_table(m):
    """Per body: mass, mass center, inertia (3,3) about the COM in the body frame."""
    out = {}
    bs = m.getBodySet()
    for i in range(bs.getSize()):
        b = bs.get(i)
        I = b.getInertia()
        mom, prod = I.getMoments(), I.getProducts()
        Im = np.array([[mom.get(0), prod.get(0), prod.get(1)],
                       [prod.get(0), mom.get(1), prod.get(2)],
                       [prod.get(1), prod.get(2), mom.get(2)]])
        out[b.getName()] = (b.getMass(), vec(b.getMassCenter()), Im)
    return out


def body_poses(m, s):
    """Per body: ground rotation (3,3) and origin (3,) in the state s."""
    m.realizePosition(s)
    out = {}
    bs = m.getBodySet()
    for i in range(bs.getSize()):
        b = bs.get(i)
        X = b.getTransformInGround(s)
        out[b.getName()] = (mat33(X.R()), vec(X.p()))
    return out


def assert_poses_equal(m, s, tree, q, atol=1e-12):
    """OpenSim's body poses with its coordinates set to ``q`` (nq,) (arthron's order, ``tree``)
    equal arthron's forward kinematics: rotations and origins to ``atol``. Returns arthron's
    kinematics."""
    import numpy.testing as npt
    from arthron.multibody.kinematics import forward_kinematics
    cs = m.getCoordinateSet()
    for i in range(cs.getSize()):
        cs.get(i).setValue(s, q[tree.coordinate_index(cs.get(i).getName())], False)
    P = body_poses(m, s)
    kin = forward_kinematics(tree, np.asarray(q, float)[None])
    for bi, b in enumerate(tree.body_names):
        npt.assert_allclose(kin.R[0, tree.body_node[bi]], P[b][0], atol=atol, err_msg=b)
        npt.assert_allclose(kin.o[0, tree.body_node[bi]], P[b][1], atol=atol, err_msg=b)
    return kin


def marker_positions(m, s):
    m.realizePosition(s)
    ms = m.getMarkerSet()
    return {ms.get(i).getName(): vec(ms.get(i).getLocationInGround(s)) for i in range(ms.getSize())}


def set_coordinates(m, s, values: dict):
    cs = m.getCoordinateSet()
    for i in range(cs.getSize()):
        c = cs.get(i)
        if c.getName() in values:
            c.setValue(s, float(values[c.getName()]), False)
    m.assemble(s) if False else None
    m.realizePosition(s)



def inverse_dynamics_tool(model_path, coordinates_path, results_dir, *, lowpass, time_range,
                          excluded=()):
    """OpenSim's InverseDynamicsTool set up, not run, on the files (absolute paths): results
    ``results_dir``/id.sto, ``excluded`` its forces_to_exclude (empty: the muscles pull at
    their default states)."""
    import opensim as osim
    tool = osim.InverseDynamicsTool()
    tool.setModelFileName(str(model_path))
    tool.setCoordinatesFileName(str(coordinates_path))
    tool.setLowpassCutoffFrequency(lowpass)
    tool.setStartTime(time_range[0])
    tool.setEndTime(time_range[1])
    ex = osim.ArrayStr()
    for name in excluded:
        ex.append(name)
    tool.setExcludedForces(ex)
    tool.setResultsDir(str(results_dir))
    tool.setOutputGenForceFileName("id.sto")
    return tool

def inverse_dynamics_with_muscles(model_path, motion_path, out_dir, context, *, lowpass=6,
                                  time_range=(0, 1)):
    """OpenSim's InverseDynamicsTool with no forces excluded (the muscles pull at their default
    states) run inside ``context`` (a context manager: the working folder, OpenSim's defaults),
    and arthron's ``run_inverse_dynamics`` on the same files with every warning an error.
    Returns (arthron's result, OpenSim's id.sto as a Table)."""
    import warnings
    from arthron.io.osim import read_osim
    from arthron.io.sto import read_sto
    from arthron.solvers.inverse_dynamics import run_inverse_dynamics
    tool = inverse_dynamics_tool(model_path, motion_path, Path(out_dir), lowpass=lowpass,
                                 time_range=time_range)
    with context:
        tool.run()
    ref = read_sto(Path(out_dir) / "id.sto")
    with warnings.catch_warnings():
        warnings.simplefilter("error")
        got = run_inverse_dynamics(read_osim(model_path), read_sto(motion_path), lowpass_hz=lowpass,
                                   forces_to_exclude=())
    return got, ref


def run_id_tool(model_path, coordinates_path, out_dir, time_range, lowpass=-1.0, external_loads=None,
                exclude=("Muscles",)):
    """Run OpenSim's InverseDynamicsTool (absolute paths; ``exclude`` its forces_to_exclude) and
    return (labels, time, data)."""
    import opensim as osim
    _quiet(osim)
    tool = osim.InverseDynamicsTool()
    model = osim.Model(str(model_path))
    tool.setModel(model)
    tool.setCoordinatesFileName(str(coordinates_path))
    tool.setStartTime(time_range[0])
    tool.setEndTime(time_range[1])
    tool.setLowpassCutoffFrequency(lowpass)
    excl = osim.ArrayStr()
    for e in exclude:
        excl.append(e)
    tool.setExcludedForces(excl)
    if external_loads:
        tool.setExternalLoadsFileName(str(external_loads))
    tool.setResultsDir(str(out_dir))
    tool.setOutputGenForceFileName("id_out.sto")
    tool.run()
    t = osim.TimeSeriesTable(os.path.join(str(out_dir), "id_out.sto"))
    labels = list(t.getColumnLabels())
    time = np.array(t.getIndependentColumn())
    data = t.getMatrix().to_numpy()
    return labels, time, data
