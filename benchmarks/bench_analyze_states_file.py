"""AnalyzeTool on a ``<states_file>``: OpenSim 4.6 vs arthron, end to end (setup read, model
loaded, states file read, Kinematics + BodyKinematics + JointReaction of every joint, files
written), side by side in one process, interleaved run by run.

Run:  python benchmarks/bench_analyze_states_file.py [n_rows_long]

Cases
-----
* gait10dof18musc (18 Millard2012EquilibriumMuscles): the states of OpenSim's forward simulation
  (0.1 s under constant excitations). Medians of 3 runs each.
* The same states tiled to ``n_rows_long`` rows (default 5000; times continued). Medians of 3.

The largest difference between the two tools' files is printed for each case (the accelerations
reach 1e5 deg/s²).

Figures (2 shared cores, load printed; medians of 3)
----------------------------------------------------
=====  ==============================  ==============================  =================
rows   before (load ~2)                after (load 1.4)                worst |diff| vs
                                                                       OpenSim (both)
=====  ==============================  ==============================  =================
74     OpenSim 0.063 s, arthron 0.10   OpenSim 0.064 s, arthron 0.048   4.9e-07
       s (0.6×)                        s (1.34×)
5000   OpenSim 3.18 s, arthron 2.37 s  OpenSim 3.26 s, arthron 0.609 s  4.9e-07
       (1.34×)                         (5.36×)
=====  ==============================  ==============================  =================

Another run after, at load 2.0: 1.26× and 4.97×. arthron's own files before and after differ by at most 1.2e-8 (2.6e-13 of the largest value, in
the accelerations of up to 1e5 deg/s²; positions and velocities bit for bit).

arthron's parts (ms, same machine, one process; before at load 0.4, after at load 1.9):

=======================================  ==============  ==============
part                                     74 rows         5000 rows
=======================================  ==============  ==============
model read (v30000 upgraded)             7.6 → 7.8       8.6 → 8.2
states file read                         1.4 → 1.5       54 → 54
kinematics' states (forward dynamics)    33 → 11         733 → 235
JointReaction                            35 → 6.7        817 → 117
Kinematics + BodyKinematics              2.3 → 2.3       20 → 22
writing the 7 .sto files                 13 → 13         708 → 168
total                                    98 → 48         2380 → 650
=======================================  ==============  ==============

What changed: the Millard curves' Bézier parameter by safeguarded Newton instead of 60 bisection
steps (``MuscleCurve._u``; ~10× faster, as close or closer to the exact inversion); each distinct
TendonForceLengthCurve built once and evaluated once for all the muscles sharing it; the poses,
body frames and paths built once for the muscles' lengths, lengthening speeds (from the bodies'
velocities, not the velocity map) and forces, and those loads shared between the kinematics
analyses and the JointReaction (``muscle_states.shared_muscle_loads``); the path forces summed
per body by ``np.bincount``; on the .sto writer's orjson route only the cells of repr's exponent
form are formatted by ``repr`` (not their whole rows: every row of these tables has one).
At 74 rows what is left is spread over fixed costs of 1-8 ms each (model reading and upgrade,
output checks and fsync, the repr formatting of small tables while orjson is not imported,
two forward-dynamics solves); the goal of 3× OpenSim there is not reached.
"""
from __future__ import annotations

import os
import statistics
import sys
import tempfile
import time
import warnings
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, ROOT  # noqa: E402

sys.path.insert(0, str(ROOT / "tests"))
from test_analyze_states_file import _forward  # noqa: E402 (OpenSim's forward simulation, as the tests make it)

from arthron.io.sto import read_sto  # noqa: E402
from arthron.tools.analyze_tool import run_analyze  # noqa: E402

MODEL = DATA / "opensim-models-legacy" / "gait10dof18musc_v30000.osim"
SETUP = """<?xml version="1.0" encoding="UTF-8"?>
<OpenSimDocument Version="40600"><AnalyzeTool name="g">
  <model_file>{model}</model_file><results_directory>{out}</results_directory>
  <initial_time>0</initial_time><final_time>1e6</final_time>
  <AnalysisSet name="Analyses"><objects>
   <Kinematics name="Kinematics"><on>true</on><coordinates>all</coordinates></Kinematics>
   <BodyKinematics name="BodyKinematics"><on>true</on><bodies>all</bodies></BodyKinematics>
   <JointReaction name="JointReaction"><on>true</on><joint_names>ALL</joint_names></JointReaction>
  </objects></AnalysisSet>
  <states_file>{states}</states_file>
</AnalyzeTool></OpenSimDocument>"""


def _tiled(src: Path, out: Path, n: int) -> Path:
    lines = src.read_text().splitlines()
    h = lines.index("endheader")
    rows = [r.split("\t") for r in lines[h + 2:]]
    t = np.array([float(r[0]) for r in rows])
    span = t[-1] - t[0] + (t[-1] - t[-2])
    body = []
    for k in range(n):
        r = rows[k % len(rows)]
        body.append("\t".join([repr(float(float(r[0]) + span * (k // len(rows))))] + r[1:]))
    head = [f"nRows={n}" if x.startswith("nRows") else x for x in lines[:h + 2]]
    out.write_text("\n".join(head + body) + "\n")
    return out


def _case(tmp: Path, label: str, states: Path, runs: int = 3):
    import opensim
    setup = tmp / f"{label}.xml"
    setup.write_text(SETUP.format(model=MODEL, out=tmp / f"{label}_osim", states=states))
    t_os, t_ar = [], []
    for _ in range(runs):                    # interleaved: the same machine load for both
        t = time.perf_counter()
        opensim.AnalyzeTool(str(setup)).run()
        t_os.append(time.perf_counter() - t)
        t = time.perf_counter()
        with warnings.catch_warnings():
            warnings.simplefilter("ignore")
            run_analyze(setup, results_dir=tmp / f"{label}_arthron")
        t_ar.append(time.perf_counter() - t)
    worst = 0.0
    for f in (tmp / f"{label}_arthron").iterdir():
        a, o = read_sto(f), read_sto(tmp / f"{label}_osim" / f.name)
        worst = max(worst, float(np.abs(a.data - o.data).max()))
    n = len(read_sto(states).time)
    os_, ar = statistics.median(t_os), statistics.median(t_ar)
    print(f"{label:10s} {n:6d} rows  OpenSim {os_:7.3f} s  arthron {ar:7.3f} s  ratio {os_ / ar:5.2f}x  "
          f"worst |diff| {worst:.1e}  (load {Path('/proc/loadavg').read_text().split()[0]})")


def main():
    import opensim
    opensim.Logger.setLevelString("error")
    n_long = int(sys.argv[1]) if len(sys.argv) > 1 else 5000
    with tempfile.TemporaryDirectory() as d:
        tmp = Path(d)
        os.chdir(tmp)                        # opensim.log goes there
        states = _forward(MODEL, tmp / "states.sto", 0.1, 1e-5)
        _case(tmp, "forward", states)
        _case(tmp, "tiled", _tiled(states, tmp / "long.sto", n_long))


if __name__ == "__main__":
    main()
