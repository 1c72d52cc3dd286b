"""Body forces at joints (InverseDynamicsTool ``joints_to_report_body_forces``): OpenSim 4.6 vs
arthron, side by side in one process.

Run:  python benchmarks/bench_id_body_forces.py
For the Gait2354 walk (73 frames, GRF) and a 10,000-frame trial made by tiling its motion, all
joints ("All"): OpenSim's tool with and without the body forces (the difference is what they
cost it; model loaded once, outside the timing) and arthron's inverse dynamics with and without
them (:func:`arthron.solvers.joint_body_forces.joint_body_forces`), medians of 3 runs (1 for
OpenSim on 10,000 frames). Files are written by neither side inside the timing except OpenSim's
(its tool always writes). BLAS single-threaded; the load average is printed before and after
(other jobs slow both sides alike).
"""
from __future__ import annotations

import os
import sys
import tempfile
from pathlib import Path

for _v in ("OMP_NUM_THREADS", "OPENBLAS_NUM_THREADS", "MKL_NUM_THREADS"):
    os.environ.setdefault(_v, "1")

sys.path.insert(0, str(Path(__file__).resolve().parent))
from _common import import_opensim, GAIT, GAIT_IK, GAIT_MODEL, median_time, tiled_motion  # noqa: E402

from arthron.io.osim import read_osim  # noqa: E402
from arthron.io.setup import read_external_loads  # noqa: E402
from arthron.io.sto import read_sto, write_sto  # noqa: E402
from arthron.multibody.kinematics import compile_model  # noqa: E402
from arthron.solvers.inverse_dynamics import run_inverse_dynamics  # noqa: E402
from arthron.solvers.joint_body_forces import joint_body_forces  # noqa: E402

GRF_XML = GAIT / "subject01_walk1_grf.xml"


def _setup(path, coords, t0, t1, lowpass, ext, joints):
    path.write_text(
        '<?xml version="1.0" encoding="UTF-8"?>\n<OpenSimDocument Version="40000">'
        f'<InverseDynamicsTool name="bench"><results_directory>{path.parent}</results_directory>'
        f"<model_file>{GAIT_MODEL}</model_file><time_range>{t0} {t1}</time_range>"
        "<forces_to_exclude>Muscles</forces_to_exclude>"
        f"<external_loads_file>{ext or ''}</external_loads_file><coordinates_file>{coords}</coordinates_file>"
        f"<lowpass_cutoff_frequency_for_coordinates>{lowpass}</lowpass_cutoff_frequency_for_coordinates>"
        f"<joints_to_report_body_forces>{joints}</joints_to_report_body_forces>"
        "</InverseDynamicsTool></OpenSimDocument>")
    return path


def main():
    osim = import_opensim()
    print(f"load average before: {os.getloadavg()[0]:.2f} (cores: {os.cpu_count()})")
    tmp = Path(tempfile.mkdtemp())
    long = tiled_motion(10_000)
    long_path = tmp / "tiled_10000.mot"
    write_sto(long_path, long)
    cases = [("Gait2354 walk (73 frames)", GAIT_IK, GRF_XML, (0.4, 1.6), 6.0),
             ("Gait2354 tiled (10,000 frames)", long_path, None, (long.time[0], long.time[-1]), -1.0)]
    model = read_osim(GAIT_MODEL)
    tree = compile_model(model)
    joints = list(model.joints)
    cwd = os.getcwd()
    rows = []
    for label, coords, ext, (t0, t1), lp in cases:
        motion = read_sto(coords)
        extl = read_external_loads(ext) if ext else None

        def a_id():
            return run_inverse_dynamics(model, motion, external_loads=extl, lowpass_hz=lp,
                                        time_range=(t0, t1), tree=tree)
        res = a_id()
        T = len(res.time)
        ta0 = median_time(a_id)
        tab = median_time(lambda: joint_body_forces(model, res, joints, tree))
        to0 = tob = float("nan")
        if osim is not None:
            n = 1 if T > 1000 else 3
            os.chdir(tmp)
            om = osim.Model(str(GAIT_MODEL))
            om.initSystem()
            times = []
            for js in ("", "All"):
                s = _setup(tmp / f"setup_{js or 'none'}.xml", coords, t0, t1, lp, ext, js)

                def run():
                    tool = osim.InverseDynamicsTool(str(s))
                    tool.setModel(om)
                    tool.run()
                times.append(median_time(run, n=n))
            os.chdir(cwd)
            to0, tob = times[0], times[1] - times[0]
        rows.append((label, T, to0, to0 + tob, tob, ta0, ta0 + tab, tab))
    print(f"{'case':32s} {'frames':>7s} | {'OpenSim ID':>10s} {'+bodyF':>8s} {'bodyF':>8s} | "
          f"{'arthron ID':>10s} {'+bodyF':>8s} {'bodyF':>8s} | {'ratio all':>9s} {'ratio bodyF':>11s}")
    for label, T, to0, to1, tob, ta0, ta1, tab in rows:
        print(f"{label:32s} {T:7d} | {to0:10.4f} {to1:8.4f} {tob:8.4f} | {ta0:10.4f} {ta1:8.4f} "
              f"{tab:8.4f} | {to1 / ta1:9.1f} {tob / tab:11.1f}")
    print("seconds; 'bodyF' = the body forces alone (OpenSim: tool with All minus tool without)")
    print(f"load average after: {os.getloadavg()[0]:.2f}")


if __name__ == "__main__":
    main()
