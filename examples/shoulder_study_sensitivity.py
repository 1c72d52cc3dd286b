"""Sensitivity of the abduction study of Sarshari et al. (2021, Sci Rep 11:20806, Fig. 5) on
arthron's built-in shoulder–elbow model to what the paper does not give: the humerus's axial
rotation, the elbow's posture and the stability cone's half-angles. For each variant of the
motion or cone, the generic subject's glenohumeral reaction and the two findings that depend on
the cone (glenoid inclination −7° / 15°, rotator-cuff PCSA −50 %), as the README's sensitivity
table (issue 12) prints them.

Run:  python examples/shoulder_study_sensitivity.py [STEP_DEG]   (default 1°: about 30 s)
"""
import sys
from dataclasses import replace

import numpy as np

from arthron.solvers.shoulder_kinematics import solve_abduction
from arthron.solvers.shoulder_study import Subject, run_abduction
from arthron.tools.shoulder_study_tool import default_model

step = float(sys.argv[1]) if len(sys.argv) > 1 else 1.0
model, spec = default_model()
EL = np.arange(20.0, 150.0 + 1e-9, step)
low, late = EL <= 60, EL >= 100
VARIANTS = (  # label, humeral external rotation (deg), elbow flexion (deg), cone half-angles (AP, SI)
    ("default (18.8° × 31.4°, no humeral rotation)", 0.0, 0.0, (18.8, 31.4)),
    ("humerus 20° external rotation", 20.0, 0.0, (18.8, 31.4)),
    ("humerus 40° external rotation", 40.0, 0.0, (18.8, 31.4)),
    ("humerus 20° internal rotation", -20.0, 0.0, (18.8, 31.4)),
    ("elbow flexed 45°", 0.0, 45.0, (18.8, 31.4)),
    ("elbow flexed 90°", 0.0, 90.0, (18.8, 31.4)),
    ("cone 18.8° × 20°", 0.0, 0.0, (18.8, 20.0)),
    ("cone 10° × 10°", 0.0, 0.0, (10.0, 10.0)),
    ("cone of the Delft glenoid rim 38.55° × 44.37°", 0.0, 0.0, (38.55, 44.37)),
)


def span(a):
    return f"{a.min():+.1f} to {a.max():+.1f} %"


print("| variant | 20° | 60° | 90° | 120° | peak (at) | % BW 90° | cone active; free angle 20°–70° "
      "| −7° below 60° | 15° at 60° | cuff −50 %: below 60° / after 100° / peak |")
for label, rot, elbow, cone in VARIANTS:
    sp = replace(spec, half_angles_deg=cone, humeral_rotation_deg=rot,
                 fixed_coordinates={"EL_x": np.radians(elbow)} if elbow else {})
    kin = solve_abduction(model, sp.coordinates, elevation_deg=EL, humeral_rotation_deg=rot,
                          fixed=sp.fixed_coordinates or None)
    F = {}
    for key, subject in (("generic", None), ("inc-7", Subject(inclination_deg=-7.0)),
                         ("inc15", Subject(inclination_deg=15.0)), ("rc50", Subject(rc_pcsa_factor=0.5))):
        res = run_abduction(model, sp, subject, elevation_deg=EL, kinematics=kin)
        F[key] = res.forces.reaction_magnitude
        if key == "generic":
            active = int(res.forces.cone_active.sum())
            free = res.forces.extra["cone_angle_without_cone_deg"][EL <= 70]
    g = F["generic"]
    v = np.interp([20.0, 60.0, 90.0, 120.0], EL, g)
    rel = {k: 100.0 * (F[k] / g - 1.0) for k in F}
    print(f"| {label} | " + " | ".join(f"{x:.0f}" for x in v)
          + f" | {g.max():.0f} ({EL[g.argmax()]:.0f}°) | {100 * v[2] / (9.80665 * spec.generic.mass):.0f}"
          + f" | {active}/{len(EL)}; {free.min():.1f}°–{free.max():.1f}° | {span(rel['inc-7'][low])}"
          + f" | {100 * (np.interp(60.0, EL, F['inc15']) / v[1] - 1):+.1f} %"
          + f" | {span(rel['rc50'][low])} / {span(rel['rc50'][late])} / {F['rc50'].max():.0f} "
          + f"({EL[F['rc50'].argmax()]:.0f}°) |", flush=True)
