"""Paths compiled and rebuilt once per set of frames (``arthron.multibody.paths.shared_paths``,
entered by the AnalyzeTool for all its analyses): the shared route equals separate
computations bit for bit, on arm26 (ellipsoid and cylinder wraps, several wrap objects per
path) and on the AnalyzeTool's files."""
from __future__ import annotations

import warnings
from pathlib import Path

import numpy as np

from conftest import ARM26, REF, needs_data
from arthron.io.osim import read_osim
from arthron.io.sto import read_sto
from arthron.multibody import paths as P
from arthron.multibody.kinematics import compile_model
from arthron.solvers.muscle_analysis import coordinates_of_motion
from arthron.tools.analyze_tool import run_analyze

pytestmark = needs_data
IK = REF / "task1_arm26" / "IK" / "arm26_InverseKinematics.mot"


def _everything(model, tree, q, qd):
    """Lengths, moment arms, lengthening speeds and path loads of every path, each function
    with its own compile_paths (as the analyses call them)."""
    names = list(P.compile_paths(model, tree).names)
    ten = np.linspace(10, 60, len(names))[None, :].repeat(len(q), 0)
    loads, mob = P.path_external_loads(P.compile_paths(model, tree, forces=names[::-1]), tree, q,
                                       ten[:, ::-1])
    return [P.path_lengths(P.compile_paths(model, tree), tree, q),
            P.moment_arms(P.compile_paths(model, tree, forces=names[2:]), tree, q),
            P.lengthening_speeds(P.compile_paths(model, tree), tree, q, qd), mob] + [
        getattr(ld, f) for ld in loads for f in ("force", "point", "torque")]


def test_shared_paths_equal_separate_calls():
    """arm26 on its IK motion: within ``shared_paths`` each path is compiled once (the same
    object whatever forces are selected with it) and rebuilt once per q (the cached arrays
    read-only); every result equals the one computed without the context bit for bit."""
    model = read_osim(ARM26)
    tree = compile_model(model)
    q = coordinates_of_motion(model, read_sto(IK))[:60]
    qd = np.gradient(q, 1 / 120, axis=0)
    alone = _everything(model, tree, q, qd)
    with P.shared_paths():
        a, b = P.compile_paths(model, tree), P.compile_paths(model, tree, forces=["BIClong", "TRIlong"])
        assert a.paths[a.index("BIClong")] is b.paths[0]
        s1 = P.path_states(a, tree, q)
        s2 = P.path_states(b, tree, q)
        assert s2[0][0] is s1[a.index("BIClong")][0]
        assert not s1[0][0].length.flags.writeable
        assert P.path_states(a, tree, q[:10])[0][0] is not s1[0][0]     # other frames: computed
        shared = _everything(model, tree, q, qd)
    assert len(alone) == len(shared) > 4
    for x, y in zip(alone, shared):
        assert x.shape == y.shape and np.array_equal(x, y, equal_nan=True)


SETUP = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40600"><AnalyzeTool name="arm">
  <model_file>{model}</model_file><results_directory>out</results_directory>
  <initial_time>0</initial_time><final_time>0.5</final_time>
  <AnalysisSet name="Analyses"><objects>
   <Kinematics name="Kinematics"><on>true</on></Kinematics>
   <BodyKinematics name="BodyKinematics"><on>true</on></BodyKinematics>
   <MuscleAnalysis name="MuscleAnalysis"><on>true</on><compute_moments>true</compute_moments></MuscleAnalysis>
   <ForceReporter name="ForceReporter"><on>true</on></ForceReporter>
   <JointReaction name="JointReaction"><on>true</on><joint_names>ALL</joint_names></JointReaction>
  </objects></AnalysisSet>
  <coordinates_file>{ik}</coordinates_file>
</AnalyzeTool></OpenSimDocument>"""


def test_analyze_tool_shared_route_equals_each_analysis_alone(tmp_path):
    """The AnalyzeTool's five analyses run together (the paths, muscle loads and external
    loads shared) write the same bytes as each analysis run alone."""
    setup = tmp_path / "arm.xml"
    setup.write_text(SETUP.format(model=ARM26, ik=IK))
    with warnings.catch_warnings():
        warnings.simplefilter("ignore")
        together = run_analyze(setup, results_dir=tmp_path / "all")
        alone = []
        for k in ("Kinematics", "BodyKinematics", "MuscleAnalysis", "ForceReporter", "JointReaction"):
            alone += run_analyze(setup, results_dir=tmp_path / k, only=[k])
    assert sorted(p.name for p in map(Path, together)) == sorted(
        p.name for p in map(Path, alone))
    assert len(together) > 15
    by_name = {p.name: p for p in map(Path, alone)}
    for f in map(Path, together):
        assert f.read_bytes() == by_name[f.name].read_bytes(), f.name



def test_expect_values_imports_orjson_for_many_values():
    """``expect_values``: the AnalyzeTool's many small tables take the orjson route (the same
    text, tests/test_io_trc_sto.py) once their values together reach ``_ORJSON_MIN``."""
    import sys
    from arthron.io import sto
    sto.expect_values(sto._ORJSON_MIN)
    assert "orjson" in sys.modules


def test_output_group_stages_each_folder_once(tmp_path):
    """In an output group each folder is made and cleaned of a finished run's temporary files
    once and the umask read once: every file still gets the umask's permissions, a folder
    first named in the group is made, the stale temporary file is removed."""
    import os
    import stat
    from arthron.io.files import atomic_write, output_group
    stale = tmp_path / ".a.txt.arthron-999999999-abcd1234.tmp"     # no such process
    stale.write_text("old")
    old = os.umask(0o027)
    try:
        with output_group():
            for name in ("a.txt", "b.txt", "sub/c.txt"):
                atomic_write(tmp_path / name, name)
    finally:
        os.umask(old)
    assert not stale.exists()
    for name in ("a.txt", "b.txt", "sub/c.txt"):
        assert (tmp_path / name).read_text() == name
        assert stat.S_IMODE((tmp_path / name).stat().st_mode) == 0o640


def test_shared_paths_take_a_generator_of_force_names():
    """A generator of force names selects the same paths inside ``shared_paths`` as outside (the
    context's cache key used the generator up: the path set came back empty)."""
    model = read_osim(ARM26)
    tree = compile_model(model)
    outside = P.compile_paths(model, tree, forces=(n for n in ("TRIlong", "BIClong"))).names
    with P.shared_paths():
        inside = P.compile_paths(model, tree, forces=(n for n in ("TRIlong", "BIClong"))).names
    assert list(outside) == list(inside) == ["TRIlong", "BIClong"]
