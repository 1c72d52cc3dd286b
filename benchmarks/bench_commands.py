"""Whole-command times: ``arthron`` commands against OpenSim 4.6 doing the same job.

Run:  python benchmarks/bench_commands.py [--repeat N]

Every command runs as a fresh process (interpreter start, imports, reading, solving, writing),
``cwd`` a temporary copy of the Gait2354 pipeline (subject01 walk, 73 frames of ID in 0.4–1.6 s;
IK on 0.4–1.6 s of the TRC; the ScaleTool setup as shipped; a JointReaction of all joints with
the GRF; ID of a 10,000-frame trial made by tiling the walk, no filter, no loads). OpenSim's side is ``python -c "import opensim; <Tool>(setup).run()"`` (this install has
no ``opensim-cmd``); ``info`` is OpenSim loading the model and building its system
(``Model(file).initSystem()``), ``convert`` is ``Model(file).print(out)``. Prints the median
of N runs (default 3; after one untimed run of each side, which compiles the bytecode of the
modules the command imports; arthron and OpenSim alternate, so that a change of machine load hits
both sides), the ratio arthron / OpenSim (< 1: arthron faster), its inverse (how many times faster
arthron is) and the same from the fastest run of each side. Bytecode is cached as in an installed package (a private
``PYTHONPYCACHEPREFIX``, even where ``PYTHONDONTWRITEBYTECODE`` is set), with the load average before and after (other jobs on the
machine slow both sides alike: each pair runs back to back). BLAS is single-threaded on both
sides (OMP/OPENBLAS/MKL_NUM_THREADS=1). ``--only id`` runs the commands whose name starts so.
"""
from __future__ import annotations

import argparse
import os
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import DATA, GAIT, fresh_process_env, tiled_motion  # noqa: E402

GENERIC = DATA / "opensim-models/Models/Gait2354_Simbody/gait2354_simbody.osim"

JR_SETUP = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40600">
  <AnalyzeTool name="subject01_walk1">
    <model_file>subject01_simbody.osim</model_file>
    <replace_force_set>false</replace_force_set>
    <results_directory>ResultsJR</results_directory>
    <initial_time>0.4</initial_time>
    <final_time>1.6</final_time>
    <AnalysisSet name="Analyses"><objects>
      <JointReaction name="JointReaction">
        <on>true</on><start_time>0.4</start_time><end_time>1.6</end_time><step_interval>1</step_interval>
        <joint_names>ALL</joint_names><apply_on_bodies>child</apply_on_bodies>
        <express_in_frame>ground</express_in_frame>
      </JointReaction>
    </objects><groups /></AnalysisSet>
    <external_loads_file>subject01_walk1_grf.xml</external_loads_file>
    <coordinates_file>subject01_walk1_ik.mot</coordinates_file>
    <lowpass_cutoff_frequency_for_coordinates>6</lowpass_cutoff_frequency_for_coordinates>
  </AnalyzeTool>
</OpenSimDocument>
"""


ID_TILED_SETUP = """<?xml version="1.0" encoding="UTF-8" ?>
<OpenSimDocument Version="40600">
  <InverseDynamicsTool name="tiled">
    <results_directory>ResultsTiled</results_directory>
    <model_file>subject01_simbody.osim</model_file>
    <time_range>0 1000</time_range>
    <forces_to_exclude>Muscles</forces_to_exclude>
    <coordinates_file>tiled_10000.mot</coordinates_file>
    <lowpass_cutoff_frequency_for_coordinates>-1</lowpass_cutoff_frequency_for_coordinates>
    <output_gen_force_file>inverse_dynamics.sto</output_gen_force_file>
  </InverseDynamicsTool>
</OpenSimDocument>
"""


def workspace() -> Path:
    d = Path(tempfile.mkdtemp(prefix="arthron-bench-"))
    for p in GAIT.iterdir():
        if p.is_file():
            shutil.copy(p, d / p.name)
    for n in ("subject01_simbody.osim", "subject01_walk1_ik.mot"):
        shutil.copy(GAIT / "OutputReference" / n, d / n)
    shutil.copy(GENERIC, d / GENERIC.name)
    (d / "subject01_Setup_JR.xml").write_text(JR_SETUP)
    (d / "tiled_Setup_ID.xml").write_text(ID_TILED_SETUP)
    from arthron.io.sto import write_sto
    write_sto(d / "tiled_10000.mot", tiled_motion(10_000))
    return d


def opensim(code: str) -> list:
    return [sys.executable, "-c", "import opensim\nopensim.Logger.setLevelString('error')\n" + code]


def arthron(*args) -> list:
    return [sys.executable, "-m", "arthron.cli", *args]


COMMANDS = [
    ("info", arthron("info", "subject01_simbody.osim"),
     opensim("m = opensim.Model('subject01_simbody.osim'); m.initSystem(); "
             "print(m.getNumBodies(), m.getNumCoordinates())")),
    ("convert", arthron("convert", "gait2354_simbody.osim", "out_a.osim"),
     opensim("opensim.Model('gait2354_simbody.osim').printToXML('out_o.osim')")),
    ("id --setup", arthron("id", "--setup", "subject01_Setup_InverseDynamics.xml"),
     opensim("opensim.InverseDynamicsTool('subject01_Setup_InverseDynamics.xml').run()")),
    ("id 10,000 frames", arthron("id", "--setup", "tiled_Setup_ID.xml"),
     opensim("opensim.InverseDynamicsTool('tiled_Setup_ID.xml').run()")),
    ("ik --setup", arthron("ik", "--setup", "subject01_Setup_IK.xml"),
     opensim("opensim.InverseKinematicsTool('subject01_Setup_IK.xml').run()")),
    ("scale --setup", arthron("scale", "--setup", "subject01_Setup_Scale.xml"),
     opensim("opensim.ScaleTool('subject01_Setup_Scale.xml').run()")),
    ("jr --setup", arthron("jr", "--setup", "subject01_Setup_JR.xml"),
     opensim("opensim.AnalyzeTool('subject01_Setup_JR.xml').run()")),
]


def run(cmd, cwd, env) -> float:
    t0 = time.perf_counter()
    r = subprocess.run(cmd, cwd=cwd, env=env, capture_output=True, text=True)
    dt = time.perf_counter() - t0
    if r.returncode != 0:
        raise RuntimeError(f"{' '.join(cmd[:4])} failed:\n{r.stderr[-2000:]}")
    return dt


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--repeat", type=int, default=3)
    ap.add_argument("--only", default="", help="run only the commands whose name starts so")
    args = ap.parse_args()
    # bytecode cached as in an installed package (pip compiles it), in a folder of our own
    env = fresh_process_env(OMP_NUM_THREADS="1", OPENBLAS_NUM_THREADS="1", MKL_NUM_THREADS="1")
    print(f"load average before: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    ws = workspace()
    try:
        run([sys.executable, "-c", "import opensim, arthron.cli"], ws, env)     # warm the caches
        print(f"{'command':17s} {'arthron (s)':>12s} {'OpenSim (s)':>12s} {'ratio':>7s} {'faster':>7s}")
        for name, a, o in COMMANDS:
            if not name.startswith(args.only):
                continue
            run(a, ws, env)                     # untimed: the modules this command imports
            run(o, ws, env)                     # are compiled to bytecode once, as installed
            tas, tos = [], []
            for _ in range(args.repeat):        # alternating: a change of load hits both sides
                tas.append(run(a, ws, env))
                tos.append(run(o, ws, env))
            # the ScaleTool setup writes subject01_simbody.osim: the next commands get the
            # OutputReference model back (as in the pipeline's other setups)
            shutil.copy(GAIT / "OutputReference" / "subject01_simbody.osim", ws / "subject01_simbody.osim")
            ta, to = statistics.median(tas), statistics.median(tos)
            print(f"{name:17s} {ta:12.3f} {to:12.3f} {ta / to:7.3f} {to / ta:6.1f}×  "
                  f"(min {min(tas):.3f} / {min(tos):.3f} s: {min(tos) / min(tas):.1f}×)", flush=True)
        t = statistics.median(run([sys.executable, "-c", "pass"], ws, env) for _ in range(args.repeat))
        print(f"(python start alone: {t:.2f} s; load average after: {os.getloadavg()[0]:.2f})")
    finally:
        shutil.rmtree(ws, ignore_errors=True)


if __name__ == "__main__":
    main()
