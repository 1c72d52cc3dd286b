"""AnalyzeTool with the five common analyses (Kinematics, BodyKinematics, MuscleAnalysis with
moments, ForceReporter, JointReaction of every joint): OpenSim 4.6's ``AnalyzeTool.run()`` vs
arthron's :func:`arthron.tools.analyze_tool.run_analyze`, end to end (setup read, model loaded,
input read, every analysis, files written), in one process, interleaved run by run.

Run:  python benchmarks/bench_analyze_tool.py [runs] [--profile]

Cases
-----
* ``arm26_ik``: arm26 on its IK motion (opensim-reference task1_arm26), 0 to 2/3 s: 81 rows.
* ``arm26_states``: arm26 on the states file of OpenSim's forward simulation (0.1 s under
  constant excitations; ``tests/test_analyze_states_file._forward``).
* ``gait2354``: the Gait2354 pipeline's subject01 model on the walk's IK motion with its ground
  reactions (``subject01_walk1_grf.xml``), 0.8 to 1.18 s, 6 Hz filter.

The largest difference between the two tools' files is printed for each case. ``--profile``
prints arthron's cProfile (cumulative) of each case.

Figures (2 shared cores, load printed; medians of 5)
----------------------------------------------------
See the table at the end of this docstring (filled in by the run recorded in the commit).
"""
from __future__ import annotations

import cProfile
import os
import pstats
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, GAIT, GAIT_IK, GAIT_MODEL, ROOT  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))
from test_analyze_states_file import _forward  # noqa: E402

from arthron.io.sto import read_sto  # noqa: E402
from arthron.tools.analyze_tool import run_analyze  # noqa: E402

ARM = DATA / "opensim-models" / "Models" / "Arm26" / "arm26.osim"
ARM_IK = DATA / "opensim-reference" / "task1_arm26" / "IK" / "arm26_InverseKinematics.mot"

ANALYSES = """
   <Kinematics name="Kinematics"><on>true</on><coordinates>all</coordinates></Kinematics>
   <BodyKinematics name="BodyKinematics"><on>true</on><bodies>all</bodies></BodyKinematics>
   <MuscleAnalysis name="MuscleAnalysis"><on>true</on><muscle_list>all</muscle_list>
     <moment_arm_coordinate_list>all</moment_arm_coordinate_list>
     <compute_moments>true</compute_moments></MuscleAnalysis>
   <ForceReporter name="ForceReporter"><on>true</on></ForceReporter>
   <JointReaction name="JointReaction"><on>true</on><joint_names>ALL</joint_names>
     <apply_on_bodies>child</apply_on_bodies><express_in_frame>ground</express_in_frame></JointReaction>"""

SETUP = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40600"><AnalyzeTool name="{name}">
  <model_file>{model}</model_file><results_directory>{out}</results_directory>
  <initial_time>{t0}</initial_time><final_time>{t1}</final_time>
  <AnalysisSet name="Analyses"><objects>{analyses}
  </objects></AnalysisSet>
  {input}
</AnalyzeTool></OpenSimDocument>"""


def _load() -> str:
    return Path("/proc/loadavg").read_text().split()[0]


def _case(tmp: Path, label: str, setup_text: str, runs: int, profile: bool):
    import opensim
    setup = tmp / f"{label}.xml"
    setup.write_text(setup_text.format(name=label, out=tmp / f"{label}_osim"))
    t_os, t_ar = [], []
    arthron_dir = tmp / f"{label}_arthron"

    def arthron():
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            return run_analyze(setup, results_dir=arthron_dir)

    arthron()                                # warm-up: imports, lazy modules
    opensim.AnalyzeTool(str(setup)).run()
    for _ in range(runs):                    # interleaved: the same machine load for both
        t = time.perf_counter()
        opensim.AnalyzeTool(str(setup)).run()
        t_os.append(time.perf_counter() - t)
        t = time.perf_counter()
        written = arthron()
        t_ar.append(time.perf_counter() - t)
    worst, n = 0.0, 0
    for f in written:
        a, o = read_sto(f), read_sto(tmp / f"{label}_osim" / Path(f).name)
        n = max(n, len(a.time))
        d = np.abs(a.data - o.data)
        worst = max(worst, float(np.nanmax(d / (1 + np.abs(o.data)))) if d.size else 0.0)
    os_, ar = statistics.median(t_os), statistics.median(t_ar)
    print(f"{label:13s} {n:4d} rows {len(written):3d} files  OpenSim {os_:6.3f} s  arthron {ar:6.3f} s  "
          f"ratio {os_ / ar:5.2f}x  worst |diff|/(1+|x|) {worst:.1e}  (load {_load()})", flush=True)
    if profile:
        pr = cProfile.Profile()
        pr.enable()
        for _ in range(3):
            arthron()
        pr.disable()
        pstats.Stats(pr).sort_stats("cumulative").print_stats(45)


def main():
    import opensim
    opensim.Logger.setLevelString("error")
    args = [a for a in sys.argv[1:] if not a.startswith("--")]
    runs = int(args[0]) if args else 5
    profile = "--profile" in sys.argv
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.chdir(tmp)                        # opensim.log goes there
        _case(tmp, "arm26_ik", SETUP.replace("{analyses}", ANALYSES).format(
            name="{name}", out="{out}", model=ARM, t0=0, t1=2 / 3,
            input=f"<coordinates_file>{ARM_IK}</coordinates_file>"), runs, profile)
        states = _forward(ARM, tmp / "arm_states.sto", 0.1, 1e-5)
        _case(tmp, "arm26_states", SETUP.replace("{analyses}", ANALYSES).format(
            name="{name}", out="{out}", model=ARM, t0=0, t1=1e6,
            input=f"<states_file>{states}</states_file>"), runs, profile)
        _case(tmp, "gait2354", SETUP.replace("{analyses}", ANALYSES).format(
            name="{name}", out="{out}", model=GAIT_MODEL, t0=0.8, t1=1.18,
            input=f"<coordinates_file>{GAIT_IK}</coordinates_file>"
                  f"<lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>"
                  f"<external_loads_file>{GAIT / 'subject01_walk1_grf.xml'}</external_loads_file>"),
              runs, profile)


if __name__ == "__main__":
    main()
