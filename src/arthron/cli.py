"""The ``arthron`` command: thin; parses arguments and calls library functions.

Every arthron error (bad input) is printed as one line naming the file and element, with exit
status 2; no traceback.
"""
from __future__ import annotations

import argparse
import sys
import warnings
from pathlib import Path

from .cli_study import _add_study_parsers, cmd_demo, cmd_study  # noqa: F401  (cmd_*: the handlers)
from .errors import ArthronError, ArthronWarning, OptionError


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
    from collections import Counter      # counted by type, as the joints and forces are
    print(f"constraints {len(s['constraints'])}" + (": " if s["constraints"] else "") + ", ".join(
        f"{k} ×{v}" for k, v in Counter(s["constraints"]).items()))
    print(f"markers    {s['markers']}")
    print("forces     " + ", ".join(f"{k} ×{v}" for k, v in s["forces"].items()))
    print(f"muscles    {s['muscles']}")
    import warnings
    from .errors import ArthronWarning
    from .io.mesh import model_geometry
    with warnings.catch_warnings():             # one warning below instead of one per file
        warnings.simplefilter("ignore", ArthronWarning)
        geoms = model_geometry(m)               # bodies, ground and offset frames, as show draws
    missing = sorted({g.mesh_file for _, g, p in geoms if p is None})
    nfiles = len({g.mesh_file for _, g, _ in geoms})
    print(f"meshes     {len(geoms)} referenced ({nfiles} files), {nfiles - len(missing)} files found "
          f"beside the model, {len(missing)} missing")
    if missing:
        warnings.warn(f"{m.source or m.name}: mesh file(s) not found beside the model or in its "
                      f"Geometry folder: {', '.join(missing)}", ArthronWarning, stacklevel=2)
    kept = [v for v in s["verbatim"]]
    print(f"kept verbatim ({len(kept)}):")
    for v in kept:
        print(f"  {v}")
    return 0


def cmd_convert(a):
    from .tools.convert_tool import check_conversion, convert_model
    m = convert_model(a.input, a.output, exclude_types=tuple(a.exclude or ()))
    print(f"wrote {a.output}")
    if a.check:
        try:                # the check loads the file in OpenSim when installed: no opensim.log in the user's folder
            import opensim
            opensim.Logger.removeFileSink()
        except Exception:   # not installed (the check is arthron's alone), or an OpenSim without it
            pass
        res = check_conversion(m, a.output, original_file=a.input, exclude_types=tuple(a.exclude or ()))
        print(res.report())
        return 0 if res.ok else 1
    return 0


def cmd_c3d(a):
    from .tools.c3d_tool import export_c3d
    r = export_c3d(a.input, a.output, force_location=a.force_location, rotation=a.rotate,
                   units=a.units, trc_units=a.trc_units, bodies=_names(a.bodies))
    t = r.trial
    print(f"wrote {r.trc} ({t.markers.n_frames} frames, {t.markers.n_markers} markers)")
    if r.grf is not None:
        print(f"wrote {r.grf} ({t.forces.n_rows} rows, {len(t.platforms)} force platforms, "
              f"at the {'platform centre' if a.force_location == 'origin' else 'centre of pressure'})")
        print(f"wrote {r.external_loads}")
    else:
        print("no force platform in this file: no GRF .mot or ExternalLoads written")
    return 0


def _names(values):
    """Comma-separated names given once or more (``--joints a,b --joints c``) → list or None."""
    return None if not values else [x for part in values for x in part.split(",") if x]


def cmd_id(a):
    from .tools.id_tool import run_id, run_id_from_setup
    if a.setup:
        _setup_only(a, "model", "motion", "external_loads", "bodies", "rotate", "force_location",
                    "lowpass", "time_range", "exclude", "body_forces", "body_forces_output")
        run = run_id_from_setup(a.setup, output=a.output, search_dirs=a.search_dir)
    else:
        if not (a.model and a.motion and a.output):
            raise SystemExit("arthron id: give MODEL MOTION -o OUT.sto, or --setup SETUP.xml")
        run = run_id(a.model, a.motion, external_loads=a.external_loads, lowpass_hz=a.lowpass,
                     time_range=a.time_range, forces_to_exclude=_names(a.exclude) or ["Muscles"],
                     output=a.output, bodies=_names(a.bodies), rotation=a.rotate,
                     force_location=a.force_location, body_forces=_names([a.body_forces] if a.body_forces else None),
                     body_forces_output=a.body_forces_output)
    out = run.write()
    res = run.result
    print(f"wrote {out} ({len(res.time)} frames, {len(res.labels)} generalized forces)")
    if getattr(run, "body_forces", None) is not None:
        print(f"wrote {run.body_forces_output} (body forces at {len(run.body_forces.joints)} joints)")
    return 0


def cmd_ik(a):
    from .tools.ik_tool import run_ik, run_ik_from_setup
    from .tools.options import check_time_range
    if a.setup:
        _setup_only(a, "model", "trial", "rotate", "time_range")
        res = run_ik_from_setup(a.setup, progress=a.progress, search_dirs=a.search_dir)
        if a.output:     # -o: the marker errors and locations go beside it, not into results_directory
            out = Path(a.output).absolute()
            path = res.write(out, *(None if p is None else out.parent / p.name
                                    for p in (res.errors_file, res.locations_file)))
            res.errors_file, res.locations_file = (None if p is None else out.parent / p.name
                                                   for p in (res.errors_file, res.locations_file))
        else:
            path = res.write()
    else:
        if not (a.model and a.trial and a.output):
            raise SystemExit("arthron ik: give MODEL TRIAL.trc -o OUT.mot, or --setup SETUP.xml")
        res = run_ik(a.model, a.trial, time_range=check_time_range(a.time_range),
                     progress=a.progress, output=a.output, rotation=a.rotate)
        path = res.write()
    print(f"wrote {path} ({len(res.time)} frames; marker RMS max {1e3 * float(res.rms.max()):.3f} mm)")
    for p in (res.errors_file, res.locations_file):
        if p is not None:
            print(f"wrote {p}")
    return 0


def cmd_scale(a):
    from .tools.anthropometric_tool import run_anthropometric_scale
    from .tools.scale_tool import scale_from_setup
    if a.setup:
        _setup_only(a, "model", "static", "mass", "height", "output")
        res = scale_from_setup(a.setup, search_dirs=a.search_dir)
        written = res.write(a.output_dir)
        if not written:
            from .errors import DataFileError
            raise DataFileError(res.nothing_written_reason(), res.setup.path)
        for p in written:
            print(f"wrote {p}")
        return 0
    if not (a.model and a.mass and a.height and a.output):
        raise SystemExit("arthron scale: give --setup SETUP.xml, or MODEL --mass KG --height M "
                         "[--gender f|m] [--static STATIC.trc] -o OUT.osim")
    scaled, _, gender = run_anthropometric_scale(a.model, a.mass, a.height, a.gender, static=a.static,
                                                 output=a.output)
    print(f"wrote {a.output} ({gender}, {a.mass:g} kg, {a.height:g} m; total mass "
          f"{scaled.total_mass():.4g} kg)")
    return 0


def cmd_paths(a):
    from .tools.analyze_tool import run_analyze, write_path_analysis
    if a.setup:
        if a.plot or a.muscles:
            raise SystemExit("arthron paths --setup: the setup's MuscleAnalysis says which muscles; "
                             "--plot and --muscles go with MODEL MOTION")
        written = run_analyze(a.setup, only=("MuscleAnalysis",), results_dir=a.output,
                              search_dirs=a.search_dir)
    else:
        if not (a.model and a.motion and a.output):
            raise SystemExit("arthron paths: give MODEL MOTION -o DIR, or --setup ANALYZE_SETUP.xml")
        from .io.osim import read_osim
        from .io.sto import read_sto
        muscles = _names(a.muscles)
        model, motion = read_osim(a.model), read_sto(a.motion)
        written = list(write_path_analysis(model, motion, a.output, muscles=muscles) or [])
        if a.plot:
            try:
                from .plots import plot_moment_arms
            except ImportError as e:
                raise SystemExit(f"arthron paths --plot needs matplotlib (pip install 'arthron[plot]'): {e}")
            written += list(plot_moment_arms(model, motion, a.output, muscles=muscles) or [])
    for p in written:
        print(f"wrote {p}")
    return 0


def cmd_jr(a):
    from .tools.analyze_tool import run_analyze, run_joint_reaction, write_joint_reactions
    if a.setup:
        _setup_only(a, "model", "motion", "forces", "external_loads", "bodies", "rotate", "force_location",
                    "joints", "on", "in", "lowpass", "time_range", "accelerations", "constraint_forces")
        written = run_analyze(a.setup, only=("JointReaction",), joint_reaction_file=a.output,
                              search_dirs=a.search_dir)
        from .io.sto import read_sto
        t = read_sto(written[0])
        print(f"wrote {written[0]} ({len(t.time)} frames, {len(t.labels) // 9} joint reactions)")
        return 0
    if not (a.model and a.motion and a.output):
        raise SystemExit("arthron jr: give MODEL MOTION -o OUT.sto, or --setup SETUP.xml")
    res = run_joint_reaction(a.model, a.motion, forces=a.forces, external_loads=a.external_loads,
                             joints=_names(a.joints), on=a.on, in_frame=getattr(a, "in"),
                             lowpass_hz=a.lowpass, time_range=a.time_range,
                             accelerations=a.accelerations, constraint_forces=a.constraint_forces)
    out = write_joint_reactions(res, a.output)
    print(f"wrote {out} ({len(res.time)} frames, {len(res.labels) // 9} joint reactions)")
    return 0


def cmd_analyze(a):
    from .tools.analyze_tool import run_analyze
    for p in run_analyze(a.setup, results_dir=a.output_dir, search_dirs=a.search_dir):
        print(f"wrote {p}")
    return 0


def cmd_so(a):
    from .tools.static_optimization_tool import run_static_optimization_from_setup
    if a.setup:
        _setup_only(a, "model", "motion", "external_loads", "bodies", "rotate", "force_location", "lowpass",
                    "time_range", "activation_exponent", "no_physiology", "objective", "specific_tension",
                    "pcsa", "cone", "emg", "emg_map", "reserves", "name")
        res, written = run_static_optimization_from_setup(a.setup, results_dir=a.output,
                                                          joint_reactions=a.joint_reactions,
                                                          search_dirs=a.search_dir)
    else:
        if not (a.model and a.motion and a.output):
            raise SystemExit("arthron so: give MODEL MOTION -o DIR, or --setup SETUP.xml")
        from .tools.load_sharing_tool import run_load_sharing
        from .tools.static_optimization_tool import static_optimization_outputs, write_load_sharing
        name = a.name or Path(a.model).stem
        # the outputs before the solve (as id's check_output): a bad -o or --name fails at once
        static_optimization_outputs(a.output, name, report=True, joint_reactions=a.joint_reactions)
        res = run_load_sharing(a.model, a.motion, external_loads=a.external_loads, lowpass_hz=a.lowpass,
                               time_range=a.time_range, activation_exponent=a.activation_exponent,
                               use_muscle_physiology=not a.no_physiology, objective=a.objective,
                               specific_tension=a.specific_tension, pcsa=a.pcsa, cone=a.cone, emg=a.emg,
                               emg_mapping=a.emg_map, reserves=a.reserves)
        jr = None
        if a.joint_reactions:
            from .tools.static_optimization_tool import joint_reactions_of
            jr = joint_reactions_of(res, res.extra["model"], a.motion, external_loads=a.external_loads,
                                    lowpass_hz=a.lowpass, time_range=a.time_range)
        written = write_load_sharing(res, a.output, name, jr)
    for p in written:
        print(f"wrote {p}")
    return 0


def cmd_ligament(a):
    from .tools.ligament_tool import export_model, run_demo, run_model
    from .tools.options import check_positive_int
    if a.demo:
        out = Path(a.output) if a.output else Path.cwd() / "arthron-ligament-demo"
        run_demo(out)
        print(f"outputs written to {out}")
        return 0
    if not (a.model and a.ligament):
        raise SystemExit("arthron ligament: give MODEL.osim --ligament NAME [--mesh TIBIA.stl] "
                         "[--motion MOTION.mot] -o OUT.sto, or --demo")
    check_positive_int(a.triangles, "--triangles")
    table, info = run_model(a.model, a.ligament, mesh=a.mesh, motion=a.motion, out=a.output,
                            n_triangles=a.triangles, rule=a.rule)
    if a.export:
        export_model(info["model"], info["strands"], info["fibres"], a.export,
                     prefix=f"{a.ligament}_tpsm")
        print(f"wrote {a.export}: {len(info['strands'].names)} strands replaced by "
              f"{info['fibres'].n} TPSM fibres (Blankevoort1991Ligament)")
    print(f"{a.ligament}: TPSM-{a.rule} on {a.triangles} triangles, {len(table.time)} frame(s)"
          + (f"; wrote {a.output}" if a.output else ""))
    if not a.output:
        for lab, v in zip(table.labels, table.data[0]):
            print(f"  {lab:40s} {v: .6g}")
    return 0


def cmd_show(a):
    from .render import parse_frames, show
    from .tools.options import check_positive_int
    w, _, h = (a.size or "800x800").lower().partition("x")
    try:
        size = (int(w), int(h or w))
    except ValueError:
        raise OptionError(f"--size {a.size!r}: give WIDTHxHEIGHT in pixels, e.g. 800x600") from None
    check_positive_int(size[0], "--size width")
    check_positive_int(size[1], "--size height")
    a.progress.stage("posing the model")
    r = show(a.model, a.output, motion=a.motion, frames=parse_frames(a.frames, kind="frames"),
             times=parse_frames(a.times, kind="times"), gif=True if a.gif else None,
             geometry_dirs=a.geometry or (), size=size, progress=a.progress)
    n = len(r["frames"])
    print(f"wrote {r['output']} ({n} frame{'s' if n > 1 else ''}"
          + ((f", t = {r['time'][0]:g} s" if n == 1 else f", t = {r['time'][0]:g} .. {r['time'][-1]:g} s")
             if a.motion else ", default pose")
          + f"; {r['meshes']} meshes" + (f", {len(r['missing'])} not found" if r["missing"] else "") + ")")
    return 0


def cmd_plot(a):
    from .io.sto import read_sto
    from .plots import plot_time_series
    table = read_sto(a.results)
    model = None
    if a.model:
        from .io.osim import read_osim
        model = read_osim(a.model)
    out = a.output or str(Path(a.results).with_suffix(".png"))
    plot_time_series(table, _names(a.columns), out, model=model, title=a.title)
    print(f"wrote {out}")
    return 0


def _add_picture_parsers(sub):
    """``arthron show`` (pyvista, off-screen) and ``arthron plot`` (matplotlib)."""
    s = sub.add_parser("show", help="render a model (bone meshes, muscle paths, markers, wrap objects) "
                                    "off-screen to a PNG, or a GIF over a motion")
    s.add_argument("model", metavar="MODEL.osim")
    s.add_argument("--motion", metavar="MOTION.mot", help="coordinates .mot/.sto to pose the model "
                                                          "(default: the model's default pose)")
    g = s.add_mutually_exclusive_group()
    g.add_argument("--frames", metavar="LIST", help="frame indices of the motion: 0,50,-1 or slices "
                                                    "0:100:10 (several frames: side by side in a PNG; "
                                                    "a list starting with a minus: --frames=-1,0)")
    g.add_argument("--times", metavar="LIST", help="times (s) of the motion; the nearest frames are drawn")
    s.add_argument("--gif", action="store_true", help="an animation over the motion (default when -o ends in .gif)")
    s.add_argument("--geometry", action="append", metavar="DIR",
                   help="another folder of mesh files (after the model's folder and its Geometry folder)")
    s.add_argument("--size", metavar="WxH", help="image size in pixels (default 800x800)")
    s.add_argument("-o", "--output", required=True, metavar="OUT.png|OUT.gif",
                   help="a PNG (several frames side by side) or a GIF (an animation over the motion)")
    s.set_defaults(func=cmd_show)
    s = sub.add_parser("plot", help="time series of a .sto/.mot results file (matplotlib), units on the axes")
    s.add_argument("results", metavar="RESULTS.sto")
    s.add_argument("--columns", action="append", required=True, metavar="A,B,...",
                   help="column names or globs (hip_flexion_*, *_moment), comma separated")
    s.add_argument("--model", help="model telling rotational (deg) from translational (m) coordinates")
    s.add_argument("--title", help="plot title (default: the file name)")
    s.add_argument("-o", "--output", metavar="OUT.png", help="default: RESULTS.png beside the file")
    s.set_defaults(func=cmd_plot)


def cmd_batch(a):
    from .tools.batch_tool import check_study, run_batch
    if a.check:
        study, problems = check_study(a.study)
        for msg in problems:
            print(f"arthron: error: {msg}", file=sys.stderr)
        n = sum(len(s.trials) for s in study.subjects)
        print(f"{a.study}: {len(study.subjects)} subjects, {n} trials, steps {' '.join(study.steps)}: "
              f"{len(problems) or 'no'} problem{'s' if len(problems) != 1 else ''}")
        return 2 if problems else 0
    res = run_batch(a.study, jobs=a.jobs, scheduler=a.scheduler, only=_names(a.only), output=a.output)
    for r in res.rows:
        if r["status"] == "failed":
            print(f"{r['subject']}/{r['trial']}: failed at {r['failed_step']}: {r['error']}")
        else:
            ik = f"; IK RMS {float(r['ik_rms_mean_mm']):.1f} mm" if r["ik_rms_mean_mm"] != "" else ""
            did = f"computed {r['computed_steps']}" if r["computed_steps"] else "all steps already done"
            print(f"{r['subject']}/{r['trial']}: {r['status']} ({did}{ik})")
    print(f"wrote {res.summary}" + (f" and {res.parquet.name}" if res.parquet else ""))
    print(f"{len(res.rows) - res.n_failed} of {len(res.rows)} trials done, {res.n_failed} failed; "
          f"{res.seconds:.1f} s ({res.executor})")
    return 1 if res.n_failed else 0


def _add_batch_parser(sub):
    s = sub.add_parser("batch", help="a whole study (subjects x trials; scale, ik, id, so, jr) on a local "
                                     "process pool or a Dask cluster, with a summary table and resume")
    s.add_argument("study", metavar="STUDY.toml", help="study file (TOML, or YAML with PyYAML); see the README")
    s.add_argument("-j", "--jobs", type=int, default=None,
                   help="worker processes of the local pool (default: the number of cores; 1: one after the other)")
    s.add_argument("--scheduler", metavar="ADDRESS",
                   help="run on the Dask distributed scheduler at ADDRESS (tcp://host:8786; extra 'cluster')")
    s.add_argument("--only", action="append", metavar="SUBJECT[/TRIAL],...",
                   help="run only these subjects or subject/trial pairs")
    s.add_argument("-o", "--output", metavar="DIR", help="output folder (default: the study's output)")
    s.add_argument("--check", action="store_true",
                   help="check the study file, its files and marker names without computing")
    s.set_defaults(func=cmd_batch)


def _add_external_loads_options(s):
    """The external-load options (an ExternalLoads XML, or a C3D's force platforms) of
    ``id``, ``jr`` and ``so``."""
    s.add_argument("--external-loads", help="ExternalLoads XML (with its GRF .mot), or a .c3d trial "
                                            "whose force platforms are applied to --bodies")
    s.add_argument("--bodies", action="append", metavar="BODY,BODY",
                   help="with a .c3d: the body on each force platform, in platform order")
    s.add_argument("--rotate", metavar="AXIS+ANGLE", default=None,
                   help="with a .c3d: lab-to-OpenSim rotation, e.g. x-90 (as arthron c3d)")
    s.add_argument("--force-location", choices=("origin", "cop"), default="origin",
                   help="with a .c3d: platform wrench at the platform centre or at the centre of pressure")


def _add_loads_and_filter_options(s):
    """The external-load and coordinate filtering options shared by ``id`` and ``so``."""
    _add_external_loads_options(s)
    s.add_argument("--lowpass", type=float, default=None, help="low-pass cut-off for coordinates (Hz)")
    s.add_argument("--time-range", nargs=2, type=float, metavar=("T0", "T1"),
                   help="first and last time (s) of the motion to use (default: all of it)")


class _Version(argparse.Action):
    """``arthron --version``: the installed distribution's version, looked up only when asked
    (no package metadata read at every command's start)."""

    def __call__(self, parser, namespace, values, option_string=None):
        from importlib.metadata import PackageNotFoundError, version
        try:
            v = version("arthron")
        except PackageNotFoundError:            # run from a source tree that is not installed
            v = "(not installed)"
        print(f"arthron {v}")
        parser.exit()


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser; ``only``: a parser holding just that command's subparser (what
    ``main`` parses a known command with: the other commands' arguments are not built)."""
    p = argparse.ArgumentParser(prog="arthron", description="Musculoskeletal biomechanics that speaks OpenSim.",
                                epilog="Start with 'arthron demo' (the built-in shoulder-elbow model's abduction "
                                       "study); 'arthron COMMAND --help' describes each command.")
    p.add_argument("--version", action=_Version, nargs=0, help="print arthron's version and exit")
    sub = p.add_subparsers(dest="command", required=True)
    if only is not None:
        sub = _OneCommand(sub, only)
    s = sub.add_parser("info", help="summarize a model")
    s.add_argument("model", metavar="MODEL.osim", help="OpenSim model (4.x, or 2.x/3.x read as OpenSim upgrades it)")
    s.set_defaults(func=cmd_info)
    s = sub.add_parser("convert", help="read a model and write it as OpenSim 4.x")
    s.add_argument("input")
    s.add_argument("output")
    s.add_argument("--exclude", action="append", metavar="CLASS",
                   help="leave out components of this OpenSim class (e.g. plugin forces)")
    s.add_argument("--check", action="store_true",
                   help="read the written file back and compare it with the original (masses, "
                        "frames, poses at random coordinates, path lengths; with OpenSim "
                        "installed, also load it there); exit status 1 if they differ")
    s.set_defaults(func=cmd_convert)
    s = sub.add_parser("c3d", help="C3D trial (ezc3d) to .trc, GRF .mot and an ExternalLoads .xml")
    s.add_argument("input", metavar="TRIAL.c3d")
    s.add_argument("-o", "--output", required=True, metavar="DIR", help="output folder")
    s.add_argument("--force-location", choices=("origin", "cop"), default="origin",
                   help="express each platform's wrench at its centre (origin, default) or at the "
                        "centre of pressure with the free moment, as OpenSim's C3DFileAdapter")
    s.add_argument("--rotate", metavar="AXIS+ANGLE", default=None,
                   help="lab-to-OpenSim rotation applied to markers and forces, e.g. x-90 (Z-up lab "
                        "to Y-up ground) or x-90,y90 (turns about the lab axes, left to right)")
    s.add_argument("--units", choices=("m", "file"), default="m",
                   help="GRF .mot in N, m, N·m (default) or in the C3D's units")
    s.add_argument("--trc-units", choices=("mm", "cm", "m"), default=None,
                   help="marker file unit (default: the C3D's POINT:UNITS)")
    s.add_argument("--bodies", action="append", metavar="BODY,BODY",
                   help="applied_to_body of each platform's ExternalForce, in platform order")
    s.set_defaults(func=cmd_c3d)
    s = sub.add_parser("id", help="inverse dynamics (generalized forces)")
    s.add_argument("model", nargs="?")
    s.add_argument("motion", nargs="?")
    s.add_argument("--setup", help="OpenSim InverseDynamicsTool setup file")
    _add_loads_and_filter_options(s)
    s.add_argument("--exclude", action="append", metavar="FORCES",
                   help="forces to exclude, as OpenSim's forces_to_exclude: All, Actuators or Muscles "
                        "(any case; default Muscles), ForceSet group or force names (class names too, "
                        "which OpenSim ignores: warned); the other passive elements (springs, limit "
                        "forces, ligaments) are applied")
    s.add_argument("--body-forces", metavar="JOINTS",
                   help="also the body forces at these joints (comma-separated names, or All), as OpenSim's "
                        "joints_to_report_body_forces: written to --body-forces-output")
    s.add_argument("--body-forces-output", metavar="FILE",
                   help="with --body-forces: the .sto (default body_forces_at_joints.sto beside -o)")
    s.add_argument("-o", "--output", help="output .sto (with --setup: default "
                                          "<results_directory>/<output_gen_force_file>)")
    s.set_defaults(func=cmd_id)
    s = sub.add_parser("ik", help="inverse kinematics from a marker trial")
    s.add_argument("model", nargs="?")
    s.add_argument("trial", nargs="?", help=".trc or .c3d marker trial")
    s.add_argument("--rotate", metavar="AXIS+ANGLE", default=None,
                   help="with a .c3d trial: lab-to-OpenSim rotation, e.g. x-90 (as arthron c3d)")
    s.add_argument("--setup", help="OpenSim InverseKinematicsTool setup file")
    s.add_argument("--time-range", nargs=2, type=float, metavar=("T0", "T1"),
                   help="first and last time (s) of the trial to solve (default: all of it)")
    s.add_argument("-o", "--output", help="output .mot (degrees, like OpenSim)")
    s.set_defaults(func=cmd_ik)
    s = sub.add_parser("scale", help="scale a model: OpenSim ScaleTool setup, or anthropometric (mass, height, gender)")
    s.add_argument("model", nargs="?")
    s.add_argument("--setup", help="OpenSim ScaleTool setup file")
    s.add_argument("--output-dir", help="with --setup: folder for the outputs (default: as the setup says)")
    s.add_argument("--static", help="static trial .trc for per-segment factors")
    s.add_argument("--mass", type=float, help="subject mass (kg)")
    s.add_argument("--height", type=float, help="subject height (m)")
    s.add_argument("--gender", default="m", help="f or m (default m)")
    s.add_argument("-o", "--output", help="output .osim")
    s.set_defaults(func=cmd_scale)
    s = sub.add_parser("paths", help="muscle lengths and moment arms, like OpenSim's MuscleAnalysis")
    s.add_argument("model", nargs="?")
    s.add_argument("motion", nargs="?")
    s.add_argument("--setup", help="OpenSim AnalyzeTool setup with a MuscleAnalysis")
    s.add_argument("--muscles", action="append", help="muscle names (comma separated; default all)")
    s.add_argument("--plot", action="store_true", help="also plot moment arm vs coordinate (PNG)")
    s.add_argument("-o", "--output", help="output folder (with --setup: default the setup's "
                                          "results_directory)")
    s.set_defaults(func=cmd_paths)
    s = sub.add_parser("jr", help="joint reactions by the E-matrix (Blajer & Czaplicki 2005)")
    s.add_argument("model", nargs="?")
    s.add_argument("motion", nargs="?")
    s.add_argument("--setup", help="OpenSim AnalyzeTool setup with a JointReaction analysis")
    s.add_argument("--forces", help="actuator/muscle forces .sto (e.g. static optimization output)")
    _add_external_loads_options(s)
    s.add_argument("--joints", action="append", help="joint names (comma separated; default all)")
    s.add_argument("--on", default="child", choices=("child", "parent"),
                   help="the body the reaction acts on (default child, OpenSim's apply_on_bodies)")
    s.add_argument("--in", default="ground", help="frame: ground, child, parent or a body name")
    s.add_argument("--lowpass", type=float, default=None, help="low-pass cut-off for coordinates (Hz)")
    s.add_argument("--time-range", nargs=2, type=float, metavar=("T0", "T1"),
                   help="first and last time (s) of the motion to use (default: all of it)")
    s.add_argument("--accelerations", default="motion", choices=("motion", "forward"),
                   help="motion: the trial's accelerations (Blajer & Czaplicki 2005); forward: from the equations "
                        "of motion with the given forces, as OpenSim's JointReaction (without --forces: "
                        "the muscles at their default states, as OpenSim)")
    s.add_argument("--constraint-forces", default="auto", choices=("auto", "least_squares", "none"),
                   help="with the motion's accelerations: model-constraint forces by least squares "
                        "(auto: only when a forces file is given)")
    s.add_argument("-o", "--output", help="output .sto (with --setup: default "
                                          "<results_directory>/<tool name>_<analysis name>_ReactionLoads.sto)")
    s.set_defaults(func=cmd_jr)
    s = sub.add_parser("analyze", help="OpenSim AnalyzeTool setup: its JointReaction, MuscleAnalysis, "
                                       "StaticOptimization, BodyKinematics, Kinematics and PointKinematics")
    s.add_argument("--setup", required=True, help="OpenSim AnalyzeTool setup file (on its coordinates_file, "
                                                  "or its states_file: CMC's or a forward simulation's states)")
    s.add_argument("--output-dir", help="folder for the outputs (default: the setup's results_directory)")
    s.set_defaults(func=cmd_analyze)
    s = sub.add_parser("so", help="load sharing: OpenSim's StaticOptimization, or the stress objective with a "
                                  "glenohumeral stability cone (Sarshari et al. 2021)")
    s.add_argument("model", nargs="?")
    s.add_argument("motion", nargs="?")
    s.add_argument("--setup", help="OpenSim AnalyzeTool setup with a StaticOptimization analysis")
    _add_loads_and_filter_options(s)
    s.add_argument("--activation-exponent", type=float, default=2.0,
                   help="p of the opensim objective, sum of activations^p (default 2, OpenSim's)")
    s.add_argument("--no-physiology", action="store_true",
                   help="muscle force per activation = max isometric force (OpenSim use_muscle_physiology=false)")
    s.add_argument("--objective", default="opensim", choices=("opensim", "stress"),
                   help="opensim: sum of activations^p; stress: sum of (force/PCSA)^2")
    s.add_argument("--specific-tension", type=float, default=None,
                   help="N/m^2 for PCSA = max isometric force / specific tension (stress objective)")
    s.add_argument("--pcsa", help="stress objective: text file of 'muscle PCSA_cm2' lines")
    s.add_argument("--cone", help="stability cone JOINT:BODY:AX,AY,AZ:AP_DEG:SI_DEG[:N_PLANES] (axis in BODY's "
                                  "frame, from the socket into the joint; e.g. 18.8 and 31.4 degrees)")
    s.add_argument("--emg", help="normalized EMG envelopes .sto/.mot (columns named by muscle): "
                                 "0.3 f_EMG <= f <= 0.7 f_EMG (Sarshari et al. 2021)")
    s.add_argument("--emg-map", help="text file of 'column muscle' lines mapping EMG columns to muscles")
    s.add_argument("--reserves", type=float, default=None,
                   help="add a CoordinateActuator of this optimal force on every coordinate")
    s.add_argument("--joint-reactions", action="store_true",
                   help="also write <name>_JointReaction_ReactionLoads.sto (all joints, on child in ground) "
                        "with the solved forces applied")
    s.add_argument("--name", help="prefix of the output files, a name, not a path (default: the model file's name)")
    s.add_argument("-o", "--output", help="output folder (with --setup: default the setup's results_directory)")
    s.set_defaults(func=cmd_so)
    s = sub.add_parser("ligament", help="thin-plate spline ligament model (TPSM) wrench: --demo, or a model's strands")
    s.add_argument("model", nargs="?", help=".osim with the ligament as strands")
    s.add_argument("--demo", action="store_true", help="study on the embedded synthetic ACL")
    s.add_argument("--ligament", help="strand name prefix, e.g. ACL")
    s.add_argument("--mesh", help="tibia mesh (STL/VTP/OBJ) in the tibial body frame")
    s.add_argument("--motion", help="coordinates .mot/.sto (default pose if omitted)")
    s.add_argument("--triangles", type=int, default=360,
                   help="triangles of the tibial insertion's triangulation (default 360)")
    s.add_argument("--rule", type=int, default=3, choices=(1, 3, 4, 6, 7),
                   help="Gauss points per triangle, one fibre each (default 3: TPSM-3)")
    s.add_argument("--export", metavar="OUT.osim",
                   help="write the model with the strands replaced by the TPSM fibres")
    s.add_argument("-o", "--output", help="output .sto (or folder with --demo)")
    s.set_defaults(func=cmd_ligament)
    _add_batch_parser(sub)
    _add_picture_parsers(sub)
    _add_study_parsers(sub)
    _add_setup_search_options(sub)
    return p


def _add_setup_search_options(sub):
    """``--search-dir DIR`` (repeatable) on every command that runs a setup: where to look, by file
    name, for the files a setup names that do not exist as written (a tutorial's setup naming a
    model one folder up, a setup copied from another machine); :mod:`arthron.tools.setup_files`."""
    for name in ("ik", "id", "scale", "analyze", "so", "jr", "paths"):
        sub.choices[name].add_argument(
            "--search-dir", action="append", metavar="DIR",
            help="with --setup: a folder searched (then its subfolders) for the files the setup names "
                 "that do not exist as written; repeatable")


class _Ignored:
    """Stands in for the subparser of a command the parser is not built for: whatever is added
    to it is dropped."""

    def __getattr__(self, name):
        return lambda *a, **k: self


class _OneCommand:
    """The subparsers action of ``build_parser(only=...)``: ``add_parser`` builds the one command
    and returns an :class:`_Ignored` for the others (``choices[name]`` too)."""

    def __init__(self, sub, only):
        self._sub, self._only = sub, only

    def add_parser(self, name, **kw):
        if name == self._only or self._only in kw.get("aliases", ()):
            return self._sub.add_parser(name, **kw)
        return _Ignored()

    @property
    def choices(self):
        return _IgnoredChoices(self._sub.choices)

    def __getattr__(self, name):
        return getattr(self._sub, name)


class _IgnoredChoices(dict):
    def __missing__(self, name):
        return _Ignored()


_PARSER = None


def _parser(command: str | None = None) -> argparse.ArgumentParser:
    """The command line's parser, built once per process (``main`` and the ``--setup`` checks
    share it; argparse parsers are reusable across ``parse_args`` calls). With ``command`` (the
    first word of the command line), a parser of that command alone when it is one (building
    all the commands' arguments is a few ms of every command's start-up), else the whole one."""
    global _PARSER
    if _PARSER is not None and (command is None or getattr(_PARSER, "_arthron_only", None) in (None, command)):
        return _PARSER
    if command and not command.startswith("-"):
        p = build_parser(only=command)
        if command in p._subparsers._group_actions[0].choices:
            p._arthron_only = command
            _PARSER = p
            return p
    _PARSER = build_parser()
    return _PARSER


def _setup_only(a, *dests):
    """Refuse, with --setup, the options the setup itself gives (they would be ignored silently)."""
    sp = _parser()._subparsers._group_actions[0].choices[a.command]
    for d in dests:
        v = getattr(a, d, None)
        if v not in (None, False, [], sp.get_default(d)):
            opt = next((o for act in sp._actions if act.dest == d for o in act.option_strings
                        if o.startswith("--")), None)
            what = opt or d.upper()
            if d == "output":
                raise OptionError(f"{what} does not go with --setup: give the folder with --output-dir")
            raise OptionError(f"{what} does not go with --setup: the setup file gives it "
                              f"(edit the setup, or run without --setup)")


_INPUT_ARGS = ("model", "motion", "trial", "input", "setup", "forces", "external_loads", "static",
               "mesh", "results")
#: commands that can take more than a second: a progress bar on a terminal (arthron.progress)
_PROGRESS = {"ik": "inverse kinematics", "id": "inverse dynamics", "so": "static optimization",
             "jr": "joint reactions", "analyze": "analyze", "paths": "muscle paths", "scale": "scaling",
             "ligament": "ligament", "c3d": "reading the C3D", "show": "rendering", "plot": "plotting",
             "demo": "demo", "convert": "converting"}
_FILE_OUTPUT = ("id", "ik", "jr", "convert", "scale", "show", "plot")     # commands whose -o/OUTPUT is one file


#: commands whose process ends without the interpreter's final garbage collections (main): one
#: job that writes its files itself; not those with figures, renderers or worker pools
_QUICK_EXIT = frozenset(("info", "convert", "c3d", "id", "ik", "scale", "paths", "jr", "analyze",
                         "so", "ligament"))


def main(argv=None) -> int:
    """Run the command line ``argv`` (default ``sys.argv[1:]``); returns the exit status.

    Run as the program (``argv`` None: the ``arthron`` script, ``python -m arthron.cli``), every
    command but ``batch`` first asks glibc to keep the memory it frees for reuse
    (:func:`arthron.runtime.keep_freed_memory`) and the garbage collector to run less often
    (:func:`arthron.runtime.collect_less`), and a command of :data:`_QUICK_EXIT` leaves
    the objects it made to the process's end (``gc.freeze``): the interpreter's final
    collections then scan none of the modules and objects still alive (some 10–15 ms of a
    command's end); it then ends the process without the interpreter's teardown
    (:func:`arthron.runtime.end_process`: streams flushed, ``atexit`` functions run, same exit
    status). Its files are already written and closed; what changes is only that
    reference cycles left at exit are not collected before the process ends (Python does not
    promise ``__del__`` for them either). Called with ``argv`` (from Python, the tests), none of
    this is done, and the command's process-wide choices (``runtime.light_imports``, the warning
    format) end with the call."""
    from . import runtime
    command = sys.argv[1] if argv is None and len(sys.argv) > 1 else None
    if command is not None and command != "batch":      # one job: glibc keeps freed memory
        runtime.keep_freed_memory()                      # for its next phase; fewer collections
        runtime.collect_less()                           # (runtime)
    light, fmt = runtime.light_imports, warnings.formatwarning
    try:
        status = _main(argv)
    finally:            # called from Python: later library calls take the library's routes again
        runtime.light_imports, warnings.formatwarning = light, fmt
    if command in _QUICK_EXIT:
        import gc
        gc.freeze()
        if isinstance(status, int):
            runtime.end_process(status)      # returns only where it cannot end the process
    return status


def _main(argv=None) -> int:
    from . import runtime
    runtime.light_imports = True     # a command's start-up: no scipy.interpolate/signal import on short trials
    warnings.formatwarning = _warn_format
    warnings.simplefilter("default", ArthronWarning)
    words = _negative_lists(sys.argv[1:] if argv is None else list(argv))
    args, extra = _parser(words[0] if words else None).parse_known_args(words)
    if extra:           # refused by the whole parser (its usage line lists every command)
        hint = _option_hint(words[0], extra)
        if hint:
            build_parser().error(f"unrecognized arguments: {' '.join(extra)} ({hint})")
        build_parser().parse_args(words)
    from .io.files import check_output, input_guard
    try:
        # no command writes onto a file it reads (the files named here, and every file a reader
        # opens while the command runs): arthron.io.files
        with input_guard([getattr(args, k) for k in _INPUT_ARGS if getattr(args, k, None)], command=True):
            if getattr(args, "search_dir", None) and not getattr(args, "setup", None):
                raise OptionError("--search-dir goes with --setup (it finds the files a setup names)")
            if args.command in _FILE_OUTPUT and getattr(args, "output", None):
                check_output(args.output)
            from .progress import progress_bar
            with progress_bar(_PROGRESS.get(args.command, args.command)) as bar:
                args.progress = bar
                status = args.func(args) or 0
            sys.stdout.flush()      # a closed pipe is reported here (below), not at the interpreter's exit
            return status
    except ArthronError as e:
        print(f"arthron: error: {e}", file=sys.stderr)
        return 2
    except KeyboardInterrupt:       # Ctrl-C: one line, no traceback; files not yet renamed into place
        print("arthron: interrupted (files already written are whole; none is half-written)",
              file=sys.stderr)
        return 130
    except SystemExit as e:         # a handler's usage line (arguments missing): exit status 2, as argparse's
        if isinstance(e.code, str):
            print(e.code, file=sys.stderr)
            return 2
        raise
    except BrokenPipeError:         # the reader of the output went away (`arthron info M | head`): no traceback
        _quiet_stdout()
        return 141                  # 128 + SIGPIPE, what a shell reports for a process ended by a closed pipe


def _quiet_stdout() -> None:
    """Send what is left of standard output to the null device (the pipe is closed: the
    interpreter's final flush would otherwise report a BrokenPipeError)."""
    import os
    try:
        devnull = os.open(os.devnull, os.O_WRONLY)
        os.dup2(devnull, sys.stdout.fileno())
    except (OSError, ValueError, AttributeError):      # no file descriptor (output captured in Python)
        pass


def _negative_lists(words: list) -> list:
    """``--frames -1,0`` as ``--frames=-1,0``: argparse takes a word starting with a minus for an
    option unless it is one number, so a list of indices counted from the end was refused."""
    out = list(words)
    for i in range(len(out) - 1):
        if out[i] in ("--frames", "--times") and len(out[i + 1]) > 1 and out[i + 1][0] == "-" \
                and (out[i + 1][1].isdigit() or out[i + 1][1] == "."):
            out[i] = f"{out[i]}={out.pop(i + 1)}"
            break
    return out


def _option_hint(command, extra) -> str:
    """'did you mean --step?' for a mistyped option of ``command`` (the closest of its options),
    or '' when nothing is close."""
    import difflib
    try:
        sp = _parser(command)._subparsers._group_actions[0].choices[command]
    except (KeyError, AttributeError, TypeError):
        return ""
    options = [o for a in sp._actions for o in a.option_strings if o.startswith("--")]
    for word in extra:
        if word.startswith("--"):
            close = difflib.get_close_matches(word.split("=", 1)[0], options, n=1, cutoff=0.75)
            if close:
                return f"did you mean {close[0]}? 'arthron {command} --help' lists its options"
    return ""


if __name__ == "__main__":
    sys.exit(main())
