"""The parameter study of Sarshari et al. (2021), "A Matlab toolbox for scaled-generic modeling of
shoulder and elbow", Sci Rep 11:20806, Fig. 5, on arthron's built-in shoulder–elbow model:
the glenohumeral joint reaction during scapular-plane abduction (de Groot & Brand 2001 rhythm)
for the generic male (1.86 m, 85.5 kg), a female, 60 and 100 kg, 1.60 and 1.95 m, glenoid
inclination −7° and 15°, and the rotator cuff's PCSA halved.

Run:  python examples/shoulder_parameter_study.py [OUTPUT_DIR]   (same as `arthron study --parameter-study`)
"""
import sys
from pathlib import Path

from arthron.tools.shoulder_study_tool import format_table, run_study

out = Path(sys.argv[1] if len(sys.argv) > 1 else "shoulder-parameter-study")
r = run_study(out, parameter_study=True, progress=print)
print(format_table(*r["table"]))
for p in r["files"]:
    print("wrote", p)
