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
    print("joints     " + ", ".join(f"{k} ×{v}" for k, v in s["joints"].items()))
    coords = m.coordinates
    print(f"coordinates {len(coords)}: " + ", ".join(
        f"{c.name}{' (locked)' if c.locked else ''}" for c in coords.values()))
    print(f"constraints {len(s['constraints'])}: " + ", ".join(s["constraints"]))
    print(f"markers    {s['markers']}")
    print("forces     " + ", ".join(f"{k} ×{v}" for k, v in s["forces"].items()))
    print(f"muscles    {s['muscles']}")
    from .io.mesh import resolve_model_meshes
    meshes = resolve_model_meshes(m)
    found = sum(p is not None for p in meshes.values())
    print(f"meshes     {len(meshes)} referenced, {found} found beside the model, {len(meshes) - found} missing")
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
        lowpass, out, in_deg = a.lowpass, Path(a.output), None
        excl = [x for part in (a.exclude or ["Muscles"]) for x in part.split(",") if x]
        time_range = tuple(a.time_range) if a.time_range else None
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
    from .tables import Table
    from .io.sto import write_sto
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
    from .solvers.reactions import joint_reactions
    jr = joint_reactions(model, motion, lowpass_hz=6.0, time_range=(float(t[0]), float(t[-1])),
                         on="child", in_frame="child")
    jr.write(out / "joint_reactions.sto")
    fy = jr.column("elbow_on_forearm_in_forearm_fy")
    print(f"  elbow reaction on the forearm (along it): {fy.min():.2f} .. {fy.max():.2f} N")
    from .solvers.muscle_analysis import write_path_analysis
    write_path_analysis(model, motion, out)
    print(f"outputs written to {out}")
    for p in sorted(out.iterdir()):
        print(f"  {p.name}")
    return 0


def _progress(label):
    """A progress callback ``f(i, T)`` drawing a rich progress bar (silent for short trials)."""
    try:
        from rich.progress import Progress
    except ImportError:  # rich is a dependency; stay quiet if it is missing
        return None
    state = {}

    def cb(i, T):
        if T < 200:
            return
        if "p" not in state:
            state["p"] = Progress(transient=True)
            state["p"].start()
            state["t"] = state["p"].add_task(label, total=T)
        state["p"].update(state["t"], completed=i + 1)
        if i + 1 >= T:
            state["p"].stop()
    return cb


def cmd_ik(a):
    from .tools.ik_tool import run_ik, run_ik_from_setup
    if a.setup:
        res = run_ik_from_setup(a.setup, progress=_progress("inverse kinematics"))
        path = res.write(a.output) if a.output else res.write()
    else:
        if not (a.model and a.trial and a.output):
            raise SystemExit("arthron ik: give MODEL TRIAL.trc -o OUT.mot, or --setup SETUP.xml")
        tr = tuple(a.time_range) if a.time_range else None
        res = run_ik(a.model, a.trial, time_range=tr, progress=_progress("inverse kinematics"))
        path = res.write(a.output, Path(a.output).with_name(Path(a.output).stem + "_marker_errors.sto"))
    print(f"wrote {path} ({len(res.time)} frames; marker RMS max {1e3 * float(res.rms.max()):.3f} mm)")
    return 0


def cmd_scale(a):
    from .solvers.scaling import landmark_factors, scale_anthropometric
    from .tools.scale_tool import scale_from_setup
    if a.setup:
        res = scale_from_setup(a.setup)
        for p in res.write(a.output_dir):
            print(f"wrote {p}")
        return 0
    if not (a.model and a.mass and a.height and a.output):
        raise SystemExit("arthron scale: give --setup SETUP.xml, or MODEL --mass KG --height M "
                         "[--gender f|m] [--static STATIC.trc] -o OUT.osim")
    from .io.osim import read_osim, write_osim
    from .io.trc import read_trc
    model = read_osim(a.model)
    factors = None
    if a.static:
        factors = {b: [f] * 3 for b, f in landmark_factors(model, read_trc(a.static)).items()}
    gender = {"f": "female", "m": "male"}.get(a.gender.lower(), a.gender.lower())
    scaled, report = scale_anthropometric(model, a.mass, a.height, gender, segment_factors=factors)
    write_osim(a.output, scaled)
    print(f"wrote {a.output} ({gender}, {a.mass:g} kg, {a.height:g} m; total mass "
          f"{scaled.total_mass():.4g} kg)")
    return 0


def cmd_paths(a):
    from .io.osim import read_osim
    from .io.sto import read_sto
    from .solvers.muscle_analysis import write_path_analysis
    muscles = None if not a.muscles else [m for part in a.muscles for m in part.split(",") if m]
    model, motion = read_osim(a.model), read_sto(a.motion)
    written = list(write_path_analysis(model, motion, a.output, muscles=muscles) or [])
    if a.plot:
        try:
            from .solvers.muscle_analysis import plot_moment_arms
            written += list(plot_moment_arms(model, motion, a.output, muscles=muscles) or [])
        except ImportError as e:
            raise SystemExit(f"arthron paths --plot needs matplotlib (pip install 'arthron[plot]'): {e}")
    for p in written:
        print(f"wrote {p}")
    return 0


def cmd_jr(a):
    from .io.osim import read_osim
    from .io.setup import read_external_loads
    from .io.sto import read_sto
    from .solvers.reactions import joint_reactions
    from .tools.analyze_tool import joint_reactions_from_setup
    if a.setup:
        res = joint_reactions_from_setup(a.setup)
        out = Path(a.output) if a.output else Path(a.setup).with_name(
            Path(a.setup).stem + "_JointReaction_ReactionLoads.sto")
    else:
        if not (a.model and a.motion and a.output):
            raise SystemExit("arthron jr: give MODEL MOTION -o OUT.sto, or --setup SETUP.xml")
        joints = None if not a.joints else [j for part in a.joints for j in part.split(",") if j]
        motion = read_sto(a.motion)
        tr = tuple(a.time_range) if a.time_range else (float(motion.time[0]), float(motion.time[-1]))
        res = joint_reactions(read_osim(a.model), motion, time_range=tr,
                              forces_table=read_sto(a.forces) if a.forces else None,
                              external_loads=read_external_loads(a.external_loads) if a.external_loads else None,
                              joints=joints, on=a.on, in_frame=getattr(a, "in"), lowpass_hz=a.lowpass,
                              accelerations=a.accelerations, constraint_forces=a.constraint_forces)
        out = Path(a.output)
    res.write(out)
    print(f"wrote {out} ({len(res.time)} frames, {len(res.labels) // 9} joint reactions)")
    return 0


def cmd_ligament(a):
    from .tools.ligament_tool import export_model, run_demo, run_model
    if a.demo:
        out = Path(a.output) if a.output else Path.cwd() / "arthron-ligament-demo"
        run_demo(out)
        print(f"outputs written to {out}")
        return 0
    if not (a.model and a.ligament):
        raise SystemExit("arthron ligament: give MODEL.osim --ligament NAME [--mesh TIBIA.stl] "
                         "[--motion MOTION.mot] -o OUT.sto, or --demo")
    table, info = run_model(a.model, a.ligament, mesh=a.mesh, motion=a.motion, out=a.output,
                            n_triangles=a.triangles, rule=a.rule)
    if a.export:
        from .io.osim import read_osim
        export_model(read_osim(a.model), info["strands"], info["fibres"], a.export,
                     prefix=f"{a.ligament}_tpsm")
        print(f"wrote {a.export}: {len(info['strands'].names)} strands replaced by "
              f"{info['fibres'].n} TPSM fibres (Blankevoort1991Ligament)")
    print(f"{a.ligament}: TPSM-{a.rule} on {a.triangles} triangles, {len(table.time)} frame(s)"
          + (f"; wrote {a.output}" if a.output else ""))
    if not a.output:
        for lab, v in zip(table.labels, table.data[0]):
            print(f"  {lab:40s} {v: .6g}")
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
    s.add_argument("--time-range", nargs=2, type=float, metavar=("T0", "T1"))
    s.add_argument("--exclude", action="append", metavar="FORCES",
                   help="forces to exclude: names, classes, Muscles, Actuators or All (default Muscles); "
                        "the other passive elements (springs, limit forces, ligaments) are applied")
    s.add_argument("-o", "--output", help="output .sto")
    s.set_defaults(func=cmd_id)
    s = sub.add_parser("ik", help="inverse kinematics from a marker trial")
    s.add_argument("model", nargs="?")
    s.add_argument("trial", nargs="?", help=".trc marker trial")
    s.add_argument("--setup", help="OpenSim InverseKinematicsTool setup file")
    s.add_argument("--time-range", nargs=2, type=float, metavar=("T0", "T1"))
    s.add_argument("-o", "--output", help="output .mot (degrees, like OpenSim)")
    s.set_defaults(func=cmd_ik)
    s = sub.add_parser("scale", help="scale a model: OpenSim ScaleTool setup, or anthropometric (seed 001)")
    s.add_argument("model", nargs="?")
    s.add_argument("--setup", help="OpenSim ScaleTool setup file")
    s.add_argument("--output-dir", help="with --setup: folder for the outputs (default: as the setup says)")
    s.add_argument("--static", help="static trial .trc for per-segment factors")
    s.add_argument("--mass", type=float, help="subject mass (kg)")
    s.add_argument("--height", type=float, help="subject height (m)")
    s.add_argument("--gender", default="m", help="f or m")
    s.add_argument("-o", "--output", help="output .osim")
    s.set_defaults(func=cmd_scale)
    s = sub.add_parser("paths", help="muscle lengths and moment arms, like OpenSim's MuscleAnalysis")
    s.add_argument("model")
    s.add_argument("motion")
    s.add_argument("--muscles", action="append", help="muscle names (comma separated; default all)")
    s.add_argument("--plot", action="store_true", help="also plot moment arm vs coordinate (PNG)")
    s.add_argument("-o", "--output", required=True, help="output folder")
    s.set_defaults(func=cmd_paths)
    s = sub.add_parser("jr", help="joint reactions by the E-matrix (seed 002)")
    s.add_argument("model", nargs="?")
    s.add_argument("motion", nargs="?")
    s.add_argument("--setup", help="OpenSim AnalyzeTool setup with a JointReaction analysis")
    s.add_argument("--forces", help="actuator/muscle forces .sto (e.g. static optimization output)")
    s.add_argument("--external-loads", help="ExternalLoads XML (with its GRF .mot)")
    s.add_argument("--joints", action="append", help="joint names (comma separated; default all)")
    s.add_argument("--on", default="child", choices=("child", "parent"))
    s.add_argument("--in", default="ground", help="frame: ground, child, parent or a body name")
    s.add_argument("--lowpass", type=float, default=None, help="low-pass cut-off for coordinates (Hz)")
    s.add_argument("--time-range", nargs=2, type=float, metavar=("T0", "T1"))
    s.add_argument("--accelerations", default="motion", choices=("motion", "forward"),
                   help="motion: the trial's accelerations (seed 002); forward: from the equations "
                        "of motion with the given forces, as OpenSim's JointReaction")
    s.add_argument("--constraint-forces", default="auto", choices=("auto", "least_squares", "none"),
                   help="with the motion's accelerations: model-constraint forces by least squares "
                        "(auto: only when a forces file is given)")
    s.add_argument("-o", "--output", help="output .sto")
    s.set_defaults(func=cmd_jr)
    s = sub.add_parser("ligament", help="TPSM ligament wrench (seed 000): --demo, or a model's strands")
    s.add_argument("model", nargs="?", help=".osim with the ligament as strands")
    s.add_argument("--demo", action="store_true", help="study on the embedded synthetic ACL")
    s.add_argument("--ligament", help="strand name prefix, e.g. ACL")
    s.add_argument("--mesh", help="tibia mesh (STL/VTP/OBJ) in the tibial body frame")
    s.add_argument("--motion", help="coordinates .mot/.sto (default pose if omitted)")
    s.add_argument("--triangles", type=int, default=360)
    s.add_argument("--rule", type=int, default=3, choices=(1, 3, 4, 6, 7))
    s.add_argument("--export", metavar="OUT.osim",
                   help="write the model with the strands replaced by the TPSM fibres")
    s.add_argument("-o", "--output", help="output .sto (or folder with --demo)")
    s.set_defaults(func=cmd_ligament)
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
