"""``arthron study`` and ``arthron demo``: the glenohumeral joint reaction during scapular-plane
abduction on the built-in shoulder–elbow model (Sarshari et al. 2021, "A Matlab toolbox for
scaled-generic modeling of shoulder and elbow", Sci Rep 11:20806; shoulder rhythm of de Groot &
Brand 2001), for one subject or as the parameter study of their Fig. 5; or on any model that names its
glenohumeral joint, cone and landmarks (:func:`study_spec_of_model`, ``arthron study --model``;
files then named after the model and no paper figures drawn beside).

Files written into the output folder (all of a run together, whole or not at all):

* ``<subject>.osim`` the scaled model; ``<subject>_abduction.mot`` coordinates (degrees);
  ``<subject>_abduction_markers.trc`` the landmarks along the motion;
* ``<subject>_abduction_InverseDynamics.sto`` (``<coordinate>_moment``, N·m);
* ``<subject>_abduction_StaticOptimization_force.sto`` muscle forces (N) and the ribcage
  constraints' multipliers (``<constraint>_lambda``);
* ``<subject>_abduction_JointReaction_ReactionLoads.sto`` the glenoid's force on the humerus in
  the scapula frame (``gh_on_humerus_in_scapula_f{x,y,z}``), its magnitude, its angle from the
  stability cone's axis and whether the cone is active;
* ``<subject>_gh_reaction.png`` the force against elevation with Sarshari et al.'s printed values;
* with the parameter study: ``parameter_study.csv`` and ``parameter_study.png`` (laid out like
  their Fig. 5); the demo adds ``<subject>_model.png`` (the model at 30°, 90° and 150°).
"""
from __future__ import annotations

import csv
import io as _io
import math
from dataclasses import replace
from pathlib import Path

import numpy as np

from ..errors import ModelFileError, OptionError, UnsupportedFeature
from ..io.files import atomic_write, make_output_dir, make_output_folder, output_group
from ..io.sto import write_sto
from ..io.trc import write_trc
from ..multibody.kinematics import compile_model, marker_positions
from ..solvers.load_sharing import InfeasibleFrames
from ..solvers.shoulder_study import (PARAMETER_STUDY, SARSHARI_2021, SUMMARY_ANGLES, StudySpec, Subject,
                                      run_abduction)
from ..tables import MarkerTrial, Table
from .options import check_result_name
from .shoulder_elbow_tool import export_shoulder_elbow

__all__ = ["run_study", "run_demo", "default_model", "arm_pose_spec", "study_table", "study_spec_of_model",
           "PAPER_POINTS"]

#: points of Sarshari et al. (2021) drawn beside the curves: {variant: [(elevation, N), ...]}
#: (the 684 N peak of 100 kg has no printed elevation: it is in the table only)
PAPER_POINTS = {"generic": [(20.0, 276.0), (60.0, 422.0), (122.0, 585.0)],
               "inclination_15": [(60.0, 456.0)], "rc_pcsa_50": [(130.0, 682.0)]}


def default_model():
    """(generic Model, StudySpec) of the built-in shoulder–elbow model."""
    from ..models.shoulder_elbow import build_shoulder_elbow_model, shoulder_elbow_info
    model = build_shoulder_elbow_model()
    return model, StudySpec.from_info(shoulder_elbow_info())


def arm_pose_spec(model, spec: StudySpec | None, *, humeral_rotation=None, elbow_flexion=None):
    """(model, spec) with the command options ``--humeral-rotation`` and ``--elbow-flexion``
    (degrees; None: not given) set in ``spec`` (the built-in model's, :func:`default_model`,
    when ``spec`` is None); ``(model, spec)`` unchanged when neither is given.

    Raises OptionError for a rotation outside [−90°, 90°], a flexion outside EL_x's range, or a
    flexion for a model whose study does not solve EL_x."""
    if humeral_rotation is None and elbow_flexion is None:
        return model, spec
    if spec is None:
        model, spec = default_model()
    if humeral_rotation is not None:
        if not (math.isfinite(humeral_rotation) and abs(humeral_rotation) <= 90.0):
            raise OptionError(f"--humeral-rotation must lie in [-90, 90] degrees, got {humeral_rotation!r}")
        spec = replace(spec, humeral_rotation_deg=float(humeral_rotation))
    if elbow_flexion is not None:
        if "EL_x" not in spec.coordinates:
            raise OptionError("--elbow-flexion sets the built-in model's elbow coordinate EL_x, which the "
                              "model given with --model does not solve")
        lo, hi = (math.degrees(v) for v in model.coordinates["EL_x"].range)
        if not (math.isfinite(elbow_flexion) and lo <= elbow_flexion <= hi):
            raise OptionError(f"--elbow-flexion must lie in [{lo:g}, {hi:g}] degrees, got {elbow_flexion!r}")
        spec = replace(spec, fixed_coordinates=dict(spec.fixed_coordinates,
                                                    EL_x=math.radians(elbow_flexion)))
    return model, spec


def study_spec_of_model(path, *, cone, landmarks=None, coordinates=None, rotator_cuff=None,
                        specific_tension=None, model_subject=None):
    """(Model, StudySpec) of an ``.osim`` for the study (:meth:`StudySpec.for_model`), from the
    command's text options: ``cone`` ``JOINT:BODY:AX,AY,AZ:AP_DEG:SI_DEG``; ``landmarks``
    ``ROLE=MARKER,...``; ``coordinates`` and ``rotator_cuff`` comma-separated names;
    ``model_subject`` ``GENDER,HEIGHT_M,MASS_KG``.

    Raises OptionError (one line) for a missing or malformed option; the model's reader errors
    name the file."""
    from ..io.osim import read_osim
    from .load_sharing_extras import parse_cone
    if not cone:
        raise OptionError("--model needs --cone JOINT:BODY:AX,AY,AZ:AP_DEG:SI_DEG (the glenohumeral joint, the "
                          "glenoid's body and the cone's axis and half-angles)")
    c = parse_cone(cone)
    lm = {}
    for item in filter(None, (landmarks or "").split(",")):
        role, sep, marker = item.partition("=")
        if not sep or not role.strip() or not marker.strip():
            raise OptionError(f"--landmarks must be ROLE=MARKER,..., got {item!r}")
        lm[role.strip()] = marker.strip()
    subj = None
    if model_subject:
        bits = [b.strip() for b in model_subject.split(",")]
        try:
            subj = Subject(gender=bits[0], height=float(bits[1]), mass=float(bits[2])) if len(bits) == 3 else None
        except ValueError:
            subj = None
        if subj is None:
            raise OptionError(f"--model-subject must be GENDER,HEIGHT_M,MASS_KG, got {model_subject!r}")
        subj = subj.check()
    model = read_osim(path)
    names = lambda t: [n.strip() for n in t.split(",") if n.strip()] if t else None   # noqa: E731
    spec = StudySpec.for_model(model, glenohumeral_joint=c.joint, cone_body=c.body, cone_axis=c.axis,
                               half_angles_deg=c.half_angles_deg, coordinates=names(coordinates),
                               landmarks=lm, rotator_cuff=names(rotator_cuff) or (),
                               specific_tension=specific_tension, generic=subj)
    return model, spec


def _slug(s: Subject, spec: StudySpec) -> str:
    g = spec.generic
    if (s.gender, s.height, s.mass, s.rc_pcsa_factor) == (g.gender, g.height, g.mass, 1.0) \
            and s.shoulder_width in (None, g.shoulder_width) \
            and s.inclination_deg in (None, g.inclination_deg) and s.version_deg in (None, 0.0, g.version_deg):
        return "generic"
    parts = [s.gender[0], f"{s.height:.2f}m", f"{s.mass:g}kg"]
    if s.shoulder_width is not None and s.shoulder_width != g.shoulder_width:
        parts.append(f"sw{s.shoulder_width:g}m")
    if s.inclination_deg is not None:
        parts.append(f"incl{s.inclination_deg:g}")
    if s.version_deg:
        parts.append(f"vers{s.version_deg:g}")
    if s.rc_pcsa_factor != 1.0:
        parts.append(f"rc{s.rc_pcsa_factor:g}")
    return "_".join(parts)


def _model_picture(res, path: Path, notes: list, builtin: bool = True) -> Path:
    """The model at 30°, 90° and 150° of elevation side by side: bone meshes, muscle paths and
    landmarks rendered off-screen (:func:`arthron.render.render_poses`), or, where nothing can
    render off-screen, the matplotlib line drawing of :func:`arthron.plots.plot_model_poses`."""
    from ..models.shoulder_elbow import MESH_DIR
    from ..render import offscreen_backend, render_poses
    el = res.kinematics.elevation_deg
    ks = [int(np.argmin(np.abs(el - a))) for a in (30.0, 90.0, 150.0)]
    window, why = offscreen_backend()
    if window is not None:
        render_poses(res.model, res.kinematics.q[ks], path, time=res.kinematics.time[ks],
                     geometry_dirs=(MESH_DIR,) if builtin else (), size=(600, 600))
        return path
    notes.append(f"model picture drawn as lines: no off-screen rendering here ({why})")
    from ..plots import plot_model_poses
    return plot_model_poses(res.model, res.kinematics.q[ks], path,
                            labels=[f"elevation {el[i]:.0f}°" for i in ks])


def _write_subject(out: Path, name: str, res, builtin: bool = True) -> list:
    k, f, model = res.kinematics, res.forces, res.model
    tree = compile_model(model)
    files = []
    p = out / f"{name}.osim"
    if builtin:
        files += export_shoulder_elbow(model, p)      # with its meshes in Geometry/ for the GUI
    else:
        from ..io.osim_write import write_osim
        files.append(write_osim(p, model))
    cols = [tree.coordinate_index(c) for c in model.coordinates]
    mot = Table(name=f"{name}_abduction", time=k.time, labels=list(model.coordinates),
                data=np.degrees(k.q[:, cols]), in_degrees=True)
    p = out / f"{name}_abduction.mot"
    write_sto(p, mot)
    files.append(p)
    mk, P = marker_positions(tree, k.q)
    trial = MarkerTrial(frames=np.arange(1, len(k.time) + 1), time=k.time, labels=mk,
                        positions=P, data_rate=(len(k.time) - 1) / (k.time[-1] - k.time[0]),
                        camera_rate=(len(k.time) - 1) / (k.time[-1] - k.time[0]),
                        orig_data_rate=(len(k.time) - 1) / (k.time[-1] - k.time[0]),
                        orig_start_frame=1, orig_num_frames=len(k.time), units="mm")
    p = out / f"{name}_abduction_markers.trc"
    write_trc(p, trial)
    files.append(p)
    for suffix, tab in (("InverseDynamics", f.inverse_dynamics_table()),
                        ("StaticOptimization_force", f.force_table()),
                        ("JointReaction_ReactionLoads", f.reaction_table())):
        p = out / f"{name}_abduction_{suffix}.sto"
        write_sto(p, tab)
        files.append(p)
    return files


def study_table(results: dict, spec: StudySpec) -> tuple[list, list]:
    """(header, rows) of the study: per variant the force (N) at :data:`SUMMARY_ANGLES`, the
    peak and its elevation, % body weight at 90°, the change of the peak from the generic
    subject, and Sarshari et al.'s printed figures beside."""
    header = ["variant", "label"] + [f"F{int(a)}_N" for a in SUMMARY_ANGLES] + [
        "peak_N", "peak_deg", "percent_bw_90", "peak_change_percent", "mean_change_below_60_percent",
        "sarshari2021_F20_N", "sarshari2021_F60_N", "sarshari2021_peak_N", "sarshari2021_peak_deg", "sarshari2021_note"]
    rows = []
    gen = results.get("generic")
    gen = gen[1] if gen is not None else None
    for key, (label, res) in results.items():
        s = res.summary
        ch = ("" if gen is None else 100.0 * (s["peak"] / gen.summary["peak"] - 1.0))
        below = ""
        if gen is not None:
            el = res.kinematics.elevation_deg
            m = el <= 60.0
            f0 = np.interp(el[m], gen.kinematics.elevation_deg, gen.forces.reaction_magnitude)
            below = 100.0 * float(np.mean(res.forces.reaction_magnitude[m] / f0 - 1.0))
        paper = SARSHARI_2021.get(key, {}) if spec.builtin else {}
        note = "; ".join(f"{k2}={v}" for k2, v in paper.items() if k2 not in (20, 60, "peak", "peak_deg"))
        rows.append([key, label] + [s[a] for a in SUMMARY_ANGLES] + [
            s["peak"], s["peak_deg"], s["percent_bw_90"], ch, below,
            paper.get(20, ""), paper.get(60, ""), paper.get("peak", ""), paper.get("peak_deg", ""), note])
    return header, rows


def _fmt(v):
    if isinstance(v, float):
        return "" if math.isnan(v) else f"{v:.4g}"
    return str(v)


def run_study(out_dir, subject: Subject | None = None, *, parameter_study: bool = False,
              elevation_deg=None, model=None, spec: StudySpec | None = None, progress=None,
              picture: bool = False, plot: bool = True) -> dict:
    """Run the abduction for ``subject`` (default the generic one) and, with
    ``parameter_study``, every variant of :data:`arthron.solvers.shoulder_study.PARAMETER_STUDY`
    (each against the generic subject); write the files of the module docstring into
    ``out_dir`` (created).

    model, spec : the generic model and its :class:`StudySpec` (default: the built-in model)
    elevation_deg : humerothoracic elevations (default 20°…150° by 1°)
    progress : callable(str) (default silent); picture : also draw the model at 3 elevations;
    plot : write the PNGs (needs matplotlib: extra ``plot``)

    Returns
    -------
    dict: ``results`` {variant: (label, AbductionResult)}, ``files`` (paths written),
    ``table`` (header, rows) of :func:`study_table`, ``notes`` (e.g. figures skipped when
    matplotlib, extra ``plot``, is not installed: everything else is still written).

    Raises
    ------
    OptionError for a bad subject (one line naming the value).
    """
    say = progress or (lambda s: None)
    if model is None or spec is None:
        model, spec = default_model()
    subject = (subject or spec.generic).check()
    if parameter_study and not spec.scale:
        raise OptionError(f"the parameter study scales model '{model.name}' to other subjects: give the "
                          "subject it stands for (StudySpec.for_model(generic=...), --model-subject)")
    out = Path(out_dir)
    # the folder before the computation: an existing file as -o, or one that cannot be created,
    # fails at once in one line naming it (DataFileError), not after the solve with a traceback
    make_output_dir(out)
    make_output_folder(out / "summary.csv")
    if not spec.builtin:     # the files are named after the model: a name, not a path (before the solve)
        try:
            check_result_name(model.name or "model", "model name")
        except OptionError as e:
            raise ModelFileError(e.message, model.source) from None
    results = {}
    if parameter_study:
        motions = {}        # the kinematics depend on the geometry only (height, shoulder width)
        for key, label, change in PARAMETER_STUDY:
            s = replace(spec.generic, **change).check()
            if key == "generic":    # the subject the model stands for (--model-subject), not always the paper's
                label = f"generic {s.gender} {s.height:.2f} m, {s.mass:g} kg"
            say(f"[{len(results) + 1}/{len(PARAMETER_STUDY)}] {label}")
            geo = (s.height, s.shoulder_width)
            try:
                res = run_abduction(model, spec, s, elevation_deg=elevation_deg, kinematics=motions.get(geo))
            except InfeasibleFrames as e:
                raise InfeasibleFrames(f"variant '{label}': {e}", e.report) from None
            motions.setdefault(geo, res.kinematics)
            results[key] = (label, res)
        if _slug(subject, spec) != "generic":
            say(f"subject {_slug(subject, spec)}")
            results["subject"] = ("subject", run_abduction(model, spec, subject, elevation_deg=elevation_deg))
    else:
        key = _slug(subject, spec)
        say(f"subject {key}")
        results[key] = (key, run_abduction(model, spec, subject, elevation_deg=elevation_deg, progress=say))
    files, notes = [], []
    header, rows = study_table(results, spec)
    if plot or picture:
        try:
            from ..plots import _pyplot
            _pyplot()
        except UnsupportedFeature as e:
            notes.append(f"PNG figures skipped: {e}")
            plot = picture = False
    with output_group():
        for key, (label, res) in results.items():
            if parameter_study and key not in ("generic", "subject"):
                continue
            name = key if key != "subject" else _slug(subject, spec)
            if name == "generic" and not spec.builtin:
                name = model.name or "model"
            files += _write_subject(out, name, res, spec.builtin)
            if plot:
                from ..plots import plot_reaction_study
                pts = {name: [p for p in PAPER_POINTS["generic"]]}
                paper = spec.builtin and name == "generic"
                files.append(plot_reaction_study(
                    {name: (res.kinematics.elevation_deg, res.forces.reaction_magnitude)},
                    out / f"{name}_gh_reaction.png", published=pts if paper else None,
                    title=f"Glenohumeral reaction, scapular-plane abduction ({name})"
                          + ("; circles: Sarshari et al. 2021" if paper else "")))
            if picture:
                files.append(_model_picture(res, out / f"{name}_model.png", notes, spec.builtin))
        if parameter_study:
            buf = _io.StringIO()
            w = csv.writer(buf, lineterminator="\n")
            w.writerow(header)
            for r in rows:
                w.writerow([_fmt(v) for v in r])
            p = out / "parameter_study.csv"
            atomic_write(p, buf.getvalue())
            files.append(p)
            if plot:
                from ..plots import plot_reaction_study
                curves = {k: (r.kinematics.elevation_deg, r.forces.reaction_magnitude)
                          for k, (_, r) in results.items() if k != "subject"}
                files.append(plot_reaction_study(curves, out / "parameter_study.png",
                                                 published=PAPER_POINTS if spec.builtin else None,
                                                 title="Parameter study (after Fig. 5 of Sarshari et al. 2021); "
                                                       "circles: their printed values"))
    return {"results": results, "files": files, "table": (header, rows), "notes": notes}


def format_table(header, rows) -> str:
    """The study table as aligned text (the columns a reader compares)."""
    keep = ["variant"] + [f"F{int(a)}_N" for a in SUMMARY_ANGLES] + [
        "peak_N", "peak_deg", "percent_bw_90", "peak_change_percent", "mean_change_below_60_percent",
        "sarshari2021_F20_N", "sarshari2021_F60_N", "sarshari2021_peak_N", "sarshari2021_peak_deg"]
    idx = [header.index(k) for k in keep]
    short = ["variant", "F20", "F60", "F90", "F120", "peak", "at°", "%BW90", "Δpeak%", "Δ<60°%",
             "paper20", "paper60", "paperpk", "at°"]
    lines = ["  ".join(f"{h:>9}" if i else f"{h:<15}" for i, h in enumerate(short))]
    for r in rows:
        cells = []
        for i, j in enumerate(idx):
            v = r[j]
            t = (f"{v:.0f}" if isinstance(v, float) and not math.isnan(v) else ("" if isinstance(v, float) else str(v)))
            cells.append(f"{t:>9}" if i else f"{t:<15}")
        lines.append("  ".join(cells))
    return "\n".join(lines)


def run_demo(out_dir, subject: Subject | None = None, progress=None, elevation_deg=None,
             model=None, spec: StudySpec | None = None) -> dict:
    """``arthron demo``: the abduction of one subject (default the generic male of Sarshari et
    al. 2021) on the built-in model (or ``model``, ``spec``), with the reaction plot and a
    picture of the model. Returns :func:`run_study`'s dict plus ``summary`` (the subject's
    force summary)."""
    r = run_study(out_dir, subject, progress=progress, picture=True, elevation_deg=elevation_deg,
                  model=model, spec=spec)
    r["summary"] = next(iter(r["results"].values()))[1].summary
    return r
