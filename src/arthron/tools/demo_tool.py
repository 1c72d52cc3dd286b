"""``arthron demo``: the main jobs on the embedded default arm (:mod:`arthron.models.demo`),
written into a folder: the model, a synthesized elbow-flexion motion, its inverse dynamics,
joint reactions and MuscleAnalysis-style path lengths and moment arms.
"""
from __future__ import annotations

from pathlib import Path

import numpy as np

from ..io.files import make_output_dir, make_output_folder
from ..io.osim import write_osim
from ..io.sto import write_sto
from ..models.demo import build_demo_arm, elbow_flexion_trial
from ..solvers.inverse_dynamics import run_inverse_dynamics
from ..solvers.reactions import joint_reactions
from ..tables import Table
from .analyze_tool import write_joint_reactions, write_path_analysis
from .id_tool import write_inverse_dynamics

__all__ = ["run_demo"]


def run_demo(out_dir) -> dict:
    """Run the demo into ``out_dir`` (created).

    Writes ``demo_arm.osim``, ``elbow_flexion.mot`` (degrees), ``inverse_dynamics.sto`` (6 Hz
    low-pass, as OpenSim's InverseDynamicsTool), ``joint_reactions.sto`` (on the child, in the
    child frame) and ``<model>_MuscleAnalysis_*.sto``.

    Returns
    -------
    dict: ``model``, ``frames``, ``peak_elbow_moment`` (N·m), ``elbow_reaction_range``
    ((min, max) N of the elbow reaction on the forearm along it), ``files`` (sorted paths).
    """
    out = Path(out_dir)
    make_output_dir(out)                          # DataFileError naming a file given as the folder
    make_output_folder(out / "demo_arm.osim")
    model = build_demo_arm()
    write_osim(out / "demo_arm.osim", model)
    t, labels, vals = elbow_flexion_trial()
    motion = Table(name="elbow_flexion", time=t, labels=labels, data=vals, in_degrees=True)
    write_sto(out / "elbow_flexion.mot", motion)
    res = run_inverse_dynamics(model, motion, lowpass_hz=6.0)
    write_inverse_dynamics(res, out / "inverse_dynamics.sto")
    k = res.labels.index("elbow_flex_moment")
    jr = joint_reactions(model, motion, lowpass_hz=6.0, time_range=(float(t[0]), float(t[-1])),
                         on="child", in_frame="child")
    write_joint_reactions(jr, out / "joint_reactions.sto")
    fy = jr.column("elbow_on_forearm_in_forearm_fy")
    write_path_analysis(model, motion, out)
    return {"model": model.name, "frames": len(t),
            "peak_elbow_moment": float(np.abs(res.generalized_forces[:, k]).max()),
            "elbow_reaction_range": (float(fy.min()), float(fy.max())),
            "files": sorted(out.iterdir())}
