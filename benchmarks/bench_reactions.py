"""Joint reactions: OpenSim 4.6's AnalyzeTool + JointReaction vs arthron's E-matrix (Blajer &
Czaplicki 2005, Eq. 2.10) vs arthron's classic formula (Eq. 2.11), side by side in one process.

Run:  python benchmarks/bench_reactions.py [n_frames_long]

Cases
-----
* arm26, 121 frames: the task-1 setup (SO physiological muscle forces, 6 Hz, ALL joints, on
  child in child). OpenSim: construct the AnalyzeTool from the setup XML and run() (model
  loading included, as in opensim-reference's timings). arthron: ``joint_reactions_from_setup``
  (reads the model and files, filters, muscle forces along its paths, forward-dynamics q̈ as
  OpenSim) end to end; then the solver parts alone on the prepared states.
* Gait2354, 10,000 frames tiled from the walk IK, no filter, ALL joints, on child in ground.
  OpenSim runs with its muscles disabled (``appliesForce`` false, so that both sides apply
  the same forces: gravity only; forward-dynamics q̈). arthron: ``joint_reactions`` (motion q̈;
  and forward q̈, OpenSim's definition: CRBA mass matrix and a Cholesky over the frames), the
  E-matrix alone, and the classic formula alone (motion q̈: it needs the joints' generalized
  forces, inverse dynamics time included; forward q̈: no mobility forces, locked coordinates
  constrained).

Times are wall-clock medians of 3 runs (1 run for OpenSim on the long trial).
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import (import_opensim, ARM, GAIT_MODEL, REF, median_time, tiled_motion)  # noqa: E402

from arthron.errors import UnsupportedFeature  # noqa: E402
from arthron.io.osim import read_osim  # noqa: E402
from arthron.io.sto import read_sto, write_sto  # noqa: E402
from arthron.multibody.kinematics import compile_model  # noqa: E402
from arthron.solvers.filtering import prepare_coordinates  # noqa: E402
from arthron.multibody.inverse_dynamics import inverse_dynamics  # noqa: E402
from arthron.solvers.inverse_dynamics import coordinates_from_table  # noqa: E402
from arthron.multibody.kinematics import forward_kinematics  # noqa: E402
from arthron.solvers.actuators import actuator_forces  # noqa: E402
from arthron.multibody.forward_dynamics import forward_accelerations  # noqa: E402
from arthron.solvers.reactions import joint_loads, joint_reactions, reaction_columns  # noqa: E402
from arthron.solvers.reactions_classic import classic_joint_loads  # noqa: E402
from arthron.tools.analyze_tool import joint_reactions_from_setup  # noqa: E402

ARM_DIR = REF / "task1_arm26"
ARM_SETUP = ARM_DIR / "setups" / "jr_setup_child_in_child.xml"


SETUP = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40600">
  <AnalyzeTool name="{name}">
    <model_file>{model}</model_file>
    <replace_force_set>false</replace_force_set>
    <force_set_files />
    <results_directory>{out}</results_directory>
    <output_precision>8</output_precision>
    <initial_time>{t0}</initial_time>
    <final_time>{t1}</final_time>
    <solve_for_equilibrium_for_auxiliary_states>false</solve_for_equilibrium_for_auxiliary_states>
    <AnalysisSet name="Analyses"><objects>
      <JointReaction name="JointReaction">
        <on>true</on><start_time>{t0}</start_time><end_time>{t1}</end_time><step_interval>1</step_interval>
        <in_degrees>true</in_degrees>
        <forces_file>{forces}</forces_file>
        <joint_names> ALL</joint_names>
        <apply_on_bodies> child</apply_on_bodies>
        <express_in_frame> {frame}</express_in_frame>
      </JointReaction>
    </objects><groups /></AnalysisSet>
    <ControllerSet name="Controllers"><objects /><groups /></ControllerSet>
    <external_loads_file />
    <states_file />
    <coordinates_file>{coords}</coordinates_file>
    <speeds_file />
    <lowpass_cutoff_frequency_for_coordinates>{lp}</lowpass_cutoff_frequency_for_coordinates>
  </AnalyzeTool>
</OpenSimDocument>
"""


def opensim_analyze(osim, setup_path):
    def run():
        tool = osim.AnalyzeTool(str(setup_path))
        tool.run()
    return run


def main():
    n_long = int(sys.argv[1]) if len(sys.argv) > 1 else 10_000
    osim = import_opensim()
    tmp = Path(tempfile.mkdtemp())
    rows = []

    # ---------------------------------------------------------------- arm26, task-1 setup
    ph = {"<workdir>/arm26/arm26.osim": str(ARM), "<workdir>/arm26/results/JR_child_in_child": str(tmp / "arm_out"),
          "<workdir>/arm26/results": str(ARM_DIR)}
    text = ARM_SETUP.read_text()
    for k, v in ph.items():
        text = text.replace(k, v)
    arm_setup = tmp / "arm26_jr.xml"
    arm_setup.write_text(text)
    model = read_osim(ARM)
    tree = compile_model(model)
    to = median_time(opensim_analyze(osim, arm_setup)) if osim else float("nan")
    try:
        res = joint_reactions_from_setup(arm_setup)
        ta = median_time(lambda: joint_reactions_from_setup(arm_setup))
        t, q, qd, qdd = res.time, res.q, res.qd, res.qdd
        gen, loads = actuator_forces(model, tree, read_sto(ARM_DIR / "SO_phys" / "arm26_StaticOptimization_force.sto"),
                                     t, q=q)
    except UnsupportedFeature as e:       # path geometry not available: solver parts only
        print(f"arm26 end to end not timed: {e}")
        ta = float("nan")
        mot = read_sto(ARM_DIR / "IK" / "arm26_InverseKinematics.mot")
        t, q, qd, qdd = prepare_coordinates(mot.time, coordinates_from_table(model, mot), 6.0, (0.0, 1.0))
        loads = []
    T = len(t)
    te = median_time(lambda: reaction_columns(model, tree, joint_loads(model, tree, q, qd, qdd, loads), "child", "child"))

    def classic():
        tau = inverse_dynamics(tree, q, qd, qdd, loads)
        return classic_joint_loads(model, tree, q, qd, tau, loads)
    tc = median_time(classic)
    rows.append(("arm26 setup (SO forces, forward q̈)", T, to, ta, te, tc))

    # ---------------------------------------------------------------- Gait2354 tiled
    long = tiled_motion(n_long)
    long_path = tmp / f"tiled_{n_long}.mot"
    write_sto(long_path, long)
    gm = read_osim(GAIT_MODEL)
    for f in gm.forces.values():          # as OpenSim's side: muscles apply no force (without a
        if "Muscle" in f.type:            # forces file they would pull at their default states)
            f.applies_force = False
    gt = compile_model(gm)
    to = float("nan")
    if osim:
        cwd = os.getcwd()
        os.chdir(GAIT_MODEL.parent)
        om = osim.Model(str(GAIT_MODEL))
        os.chdir(cwd)
        ms = om.getMuscles()
        for i in range(ms.getSize()):
            ms.get(i).set_appliesForce(False)
        nomus = tmp / "gait_nomuscles.osim"
        om.printToXML(str(nomus))
        setup = tmp / "gait_jr.xml"
        setup.write_text(SETUP.format(name="gait", model=nomus, out=tmp / "gait_out", t0=long.time[0],
                                      t1=long.time[-1], forces="", frame="ground", coords=long_path, lp=-1))
        to = median_time(opensim_analyze(osim, setup), n=1)
    vals = coordinates_from_table(gm, long)
    t, q, qd, qdd = prepare_coordinates(long.time, vals, None, None)
    T = len(t)
    ta = median_time(lambda: joint_reactions(gm, long, joints=None, on="child", in_frame="ground", tree=gt))
    taf = median_time(lambda: joint_reactions(gm, long, joints=None, on="child", in_frame="ground", tree=gt,
                                              accelerations="forward"))
    te = median_time(lambda: reaction_columns(gm, gt, joint_loads(gm, gt, q, qd, qdd), "child", "ground"))

    def classic_g():
        tau = inverse_dynamics(gt, q, qd, qdd)
        return classic_joint_loads(gm, gt, q, qd, tau)
    tc = median_time(classic_g, n=1)
    locked = np.array([c.locked for c in gm.coordinates.values()])

    def forward_e():
        acc = forward_accelerations(gt, q, qd, locked=locked)
        return reaction_columns(gm, gt, joint_loads(gm, gt, q, qd, acc), "child", "ground")
    tef = median_time(forward_e)
    # Eq. 2.11 is a forward formula: with no mobility forces it gives the forward-dynamics loads
    tcf = median_time(lambda: classic_joint_loads(gm, gt, q, qd, np.zeros_like(q), locked=locked), n=1)
    tfa = median_time(lambda: forward_accelerations(gt, q, qd, locked=locked))
    rows.append(("Gait2354 tiled (motion q̈)", T, to, ta, te, tc))
    rows.append(("Gait2354 tiled (forward q̈)", T, to, taf, tef, tcf))
    kin = forward_kinematics(gt, q, qd, qdd)
    tk = median_time(lambda: forward_kinematics(gt, q, qd, qdd))
    te1 = median_time(lambda: joint_loads(gm, gt, q, qd, qdd, joints=["mtp_r"], kin=kin))
    tek = median_time(lambda: joint_loads(gm, gt, q, qd, qdd, joints=["knee_r"], kin=kin))
    te_all = median_time(lambda: joint_loads(gm, gt, q, qd, qdd, kin=kin))

    print(f"{'case':38s} {'frames':>7s} {'OpenSim s':>10s} {'arthron s':>10s} {'OS/arthron':>10s} "
          f"{'E-matrix s':>10s} {'classic s':>10s} {'classic/E':>9s}")
    for label, T, to, ta, te, tc in rows:
        print(f"{label:38s} {T:7d} {to:10.4f} {ta:10.4f} {to / ta:10.1f} {te:10.4f} {tc:10.4f} {tc / te:9.1f}")
    print(f"Gait2354 tiled, Eq. 2.10 given the kinematics ({tk:.4f} s for forward kinematics): all 12 joints "
          f"{te_all:.4f} s, knee_r (4 bodies) {tek:.4f} s, mtp_r (1 body) {te1:.4f} s")
    print(f"Gait2354 tiled, forward accelerations alone (CRBA mass matrix, Cholesky over the frames): {tfa:.4f} s")
    acc = forward_accelerations(gt, q, qd, locked=locked)
    d = np.abs(joint_loads(gm, gt, q, qd, acc).Lambda
               - classic_joint_loads(gm, gt, q, qd, np.zeros_like(q), locked=locked)).max()
    print(f"Gait2354 tiled, forward q̈: max |E-matrix − classic| = {d:.1e} N / N·m")
    print("arthron s = end to end (reading the setup's files, filtering, splines, path forces, "
          "solve, columns); E-matrix s = [forward accelerations +] forward kinematics + Eq. 2.10 + columns on "
          "prepared states; classic s = Eq. 2.11, after inverse dynamics for the joints' generalized forces "
          "in the motion-q̈ rows (arm26: augmented [M Cᵀ; C 0] form, its 'base' body is massless).")


if __name__ == "__main__":
    main()
