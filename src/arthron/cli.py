"""The ``arthron`` command: thin; parses arguments and calls library functions.

Every arthron error (bad input) is printed as one line naming the file and element, with exit
status 2; no traceback.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from .errors import ArthronError, ArthronWarning


def _warn_format(message, category, filename, lineno, line=None):
    return f"arthron: warning: {message}\n"


def cmd_info(a):
    from .io.osim import read_osim
    m = read_osim(a.model)
    s = m.summary()
    print(f"model      {s['name']}  ({a.model}, Version {m.version})")
    print(f"bodies     {s['bodies']}  total mass {s['mass']:.6g} kg")
    print(f"joints     " + ", ".join(f"{k} ×{v}" for k, v in s["joints"].items()))
    coords = m.coordinates
    print(f"coordinates {len(coords)}: " + ", ".join(
        f"{c.name}{' (locked)' if c.locked else ''}" for c in coords.values()))
    print(f"constraints {len(s['constraints'])}: " + ", ".join(s["constraints"]))
    print(f"markers    {s['markers']}")
    print(f"forces     " + ", ".join(f"{k} ×{v}" for k, v in s["forces"].items()))
    print(f"muscles    {s['muscles']}")
    kept = [v for v in s["verbatim"]]
    print(f"kept verbatim ({len(kept)}):")
    for v in kept:
        print(f"  {v}")
    return 0


def cmd_convert(a):
    from .io.osim import read_osim, write_osim
    m = read_osim(a.input)
    write_osim(a.output, m, exclude_types=tuple(a.exclude or ()))
    print(f"wrote {a.output}")
    return 0


def cmd_id(a):
    from .io.osim import read_osim
    from .io.setup import read_external_loads, read_id_setup
    from .io.sto import read_sto
    from .solvers.inverse_dynamics import run_inverse_dynamics
    if a.setup:
        st = read_id_setup(a.setup)
        model_file, motion_file = st.model_file, st.coordinates_file
        ext_file = st.external_loads_file
        lowpass = st.lowpass_cutoff_frequency_for_coordinates
        time_range = st.time_range
        excl = st.forces_to_exclude
        out = Path(a.output) if a.output else st.output_gen_force_file or (st.results_directory / "inverse_dynamics.sto")
        in_deg = st.coordinates_in_degrees
    else:
        if not (a.model and a.motion and a.output):
            raise SystemExit("arthron id: give MODEL MOTION -o OUT.sto, or --setup SETUP.xml")
        model_file, motion_file, ext_file = a.model, a.motion, a.external_loads
        lowpass, time_range, excl, out, in_deg = a.lowpass, None, ["Muscles"], Path(a.output), None
    model = read_osim(model_file)
    motion = read_sto(motion_file)
    ext = read_external_loads(ext_file) if ext_file else None
    res = run_inverse_dynamics(model, motion, external_loads=ext, lowpass_hz=lowpass,
                               time_range=time_range, forces_to_exclude=excl, in_degrees=in_deg)
    res.write(out)
    print(f"wrote {out} ({len(res.time)} frames, {len(res.labels)} generalized forces)")
    return 0


def cmd_demo(a):
    import numpy as np

    from .io.osim import write_osim
    from .io.sto import Table, write_sto
    from .models.demo import build_demo_arm, elbow_flexion_trial
    from .solvers.inverse_dynamics import run_inverse_dynamics
    out = Path(a.output) if a.output else Path.cwd() / "arthron-demo"
    out.mkdir(parents=True, exist_ok=True)
    model = build_demo_arm()
    write_osim(out / "demo_arm.osim", model)
    t, labels, vals = elbow_flexion_trial()
    motion = Table(name="elbow_flexion", time=t, labels=labels, data=vals, in_degrees=True)
    write_sto(out / "elbow_flexion.mot", motion)
    res = run_inverse_dynamics(model, motion, lowpass_hz=6.0)
    res.write(out / "inverse_dynamics.sto")
    k = res.labels.index("elbow_flex_moment")
    print(f"arthron demo: model {model.name}, {len(t)} frames of elbow flexion")
    print(f"  peak elbow flexion moment {np.abs(res.generalized_forces[:, k]).max():.3f} N·m")
    extra = getattr(sys.modules[__name__], "_demo_extras", None)
    if extra:
        extra(model, motion, out)
    print(f"outputs written to {out}")
    for p in sorted(out.iterdir()):
        print(f"  {p.name}")
    return 0


def build_parser() -> argparse.ArgumentParser:
    p = argparse.ArgumentParser(prog="arthron", description="Musculoskeletal biomechanics that speaks OpenSim.")
    sub = p.add_subparsers(dest="command", required=True)
    s = sub.add_parser("info", help="summarize a model")
    s.add_argument("model")
    s.set_defaults(func=cmd_info)
    s = sub.add_parser("convert", help="read a model and write it as OpenSim 4.x")
    s.add_argument("input")
    s.add_argument("output")
    s.add_argument("--exclude", action="append", metavar="CLASS",
                   help="leave out components of this OpenSim class (e.g. plugin forces)")
    s.set_defaults(func=cmd_convert)
    s = sub.add_parser("id", help="inverse dynamics (generalized forces)")
    s.add_argument("model", nargs="?")
    s.add_argument("motion", nargs="?")
    s.add_argument("--setup", help="OpenSim InverseDynamicsTool setup file")
    s.add_argument("--external-loads", help="ExternalLoads XML (with its GRF .mot)")
    s.add_argument("--lowpass", type=float, default=None, help="low-pass cut-off for coordinates (Hz)")
    s.add_argument("-o", "--output", help="output .sto")
    s.set_defaults(func=cmd_id)
    s = sub.add_parser("demo", help="run the main job on the embedded default model")
    s.add_argument("-o", "--output", help="output folder (default ./arthron-demo)")
    s.set_defaults(func=cmd_demo)
    return p


def main(argv=None) -> int:
    warnings.formatwarning = _warn_format
    warnings.simplefilter("default", ArthronWarning)
    args = build_parser().parse_args(argv)
    try:
        return args.func(args) or 0
    except ArthronError as e:
        print(f"arthron: error: {e}", file=sys.stderr)
        return 2


if __name__ == "__main__":
    sys.exit(main())
