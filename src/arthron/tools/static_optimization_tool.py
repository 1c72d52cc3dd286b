"""OpenSim's StaticOptimization (an AnalyzeTool analysis) on arthron's load-sharing solver.

``run_static_optimization_from_setup`` runs an AnalyzeTool setup as it is: ``model_file``,
``force_set_files`` (appended, or replacing the model's forces with ``replace_force_set``),
``coordinates_file``, ``initial_time``/``final_time``,
``lowpass_cutoff_frequency_for_coordinates``, ``external_loads_file``, and the
StaticOptimization's ``step_interval``, ``activation_exponent``, ``use_muscle_physiology``,
``use_model_force_set`` (false: the model's muscles and actuators are replaced by a
CoordinateActuator of optimal force 1 on every unconstrained coordinate, as OpenSim does).
It writes ``<name>_StaticOptimization_activation.sto`` and ``<name>_StaticOptimization_force.sto``
into ``results_directory`` (created when missing), whole or not at all.
``run_static_optimization`` does the same on files given directly (``arthron so``).
"""
from __future__ import annotations

import re
from pathlib import Path

import numpy as np

from ..errors import DataFileError, OptionError, UnsupportedFeature
from ..io.control_set import write_control_set
from ..io.osim import read_osim
from ..io.setup import read_external_loads
from ..io.sto import read_sto, write_sto
from ..models.forces import CoordinateActuator
from ..models.model import Model
from ..solvers.load_sharing import LoadSharingResult, static_optimization
from ..io.files import check_output, check_output_dir, make_output_folder, output_group
from .analyze_setup import AnalyzeSetup, analysis_name, model_with_force_sets, read_analyze_setup
from .analyze_setup import setup_step_rows
from .options import check_lowpass, check_result_name, check_time_range
from .setup_files import setting_bool, setting_float, setting_text, step_interval
from .setup_files import results_directory

__all__ = ["control_bounds", "run_static_optimization", "run_static_optimization_from_setup",
           "static_optimization_of_setup",
           "write_static_optimization", "coordinate_actuator_model", "joint_reactions_of",
           "static_optimization_outputs", "write_load_sharing"]

_CTRL = re.compile(r"<(min_control|max_control)>\s*([^<\s]+)\s*</\1>")


def control_bounds(model: Model) -> dict:
    """{force name: (min_control, max_control)} as written in the model's file (None where
    absent), read from the properties arthron keeps as text."""
    out = {}
    for n, f in model.forces.items():
        vals = {}
        extra = getattr(f, "extra", None) or {}
        for k in ("min_control", "max_control"):
            if k in extra:
                vals[k] = float(extra[k])
        for k, v in _CTRL.findall(getattr(f, "unmodelled_xml", "") or ""):
            vals[k] = setting_float(v, None, model.source, f"force '{n}': {k}")
        if vals:
            out[n] = (vals.get("min_control"), vals.get("max_control"))
    return out


def coordinate_actuator_model(model: Model) -> Model:
    """OpenSim's ``use_model_force_set = false``: a CoordinateActuator ``<coordinate>_actuator``
    (optimal force 1, unbounded) on every coordinate that is not locked or the dependent one
    of a coupler, in multibody-tree order, followed by every force of the model that is not a
    muscle (its own actuators included, as ``StaticOptimization::begin`` copies them back)."""
    import copy
    from ..multibody.kinematics import compile_model
    m = copy.copy(model)
    dependent = {c.properties.get("dependent_coordinate") for c in model.constraints
                 if c.enabled and c.type == "CoordinateCouplerConstraint"}
    tree = compile_model(model)
    forces = {}
    for i in tree.multibody_order:
        name = tree.coordinate_names[i]
        if getattr(model.coordinates[name], "locked", False) or name in dependent:
            continue
        f = CoordinateActuator(name=f"{name}_actuator")
        f.coordinate = name
        f.optimal_force = 1.0
        forces[f.name] = f
    for n, f in model.forces.items():
        if not f.is_muscle and n not in forces:
            forces[n] = f
    m.forces = forces
    return m


def static_optimization_outputs(out_dir, name: str, *, report: bool = False, joint_reactions: bool = False,
                                analysis: str = "StaticOptimization", what: str | None = "--name") -> list:
    """The files :func:`write_static_optimization` (and, with ``joint_reactions``, the joint
    reactions beside them) will write into ``out_dir``, each checked before anything is
    solved: ``name`` a name, not a path (:func:`arthron.tools.options.check_result_name`,
    OptionError naming ``what``; ``what=None``: not checked, a setup's name as OpenSim takes it), ``out_dir`` a folder or creatable
    (:func:`arthron.io.files.check_output_dir`), no output an input of the running command, a
    folder or a device (:func:`arthron.io.files.check_output`). Nothing is created.

    Returns the paths (activation, force, controls[, report][, ``<name>_JointReaction_ReactionLoads.sto``]).
    Raises OptionError / DataFileError naming the name or the file."""
    if what is not None:
        check_result_name(name, what)
    check_output_dir(out_dir)
    out = Path(out_dir)
    files = [out / f"{name}_{analysis}_{k}.sto" for k in ("activation", "force", "report")[:3 if report else 2]]
    files.insert(2, out / f"{name}_{analysis}_controls.xml")
    if joint_reactions:
        files.append(out / f"{name}_JointReaction_ReactionLoads.sto")
    for f in files:
        check_output(f)
    return files


def write_load_sharing(result: LoadSharingResult, out_dir, name: str, joint_reactions=None,
                       report: bool = True, *, rows=None, analysis: str = "StaticOptimization") -> list:
    """``arthron so``'s outputs: :func:`write_static_optimization` (with the report) and, when
    given, the JointReactionResult ``joint_reactions`` as
    ``<name>_JointReaction_ReactionLoads.sto``, in one output group (all files whole, or none);
    ``rows`` (the frames to keep, in every file) and ``analysis`` as
    :func:`write_static_optimization`. Returns the paths."""
    with output_group():
        written = write_static_optimization(result, out_dir, name, rows, report=report, analysis=analysis)
        if joint_reactions is not None:   # as analyze_tool.write_joint_reactions (importing it: a cycle)
            table = joint_reactions.to_table()
            if rows is not None:
                table.time, table.data = table.time[rows], table.data[rows]
            f = Path(out_dir) / f"{name}_JointReaction_ReactionLoads.sto"
            write_sto(f, table)
            written.append(f)
    return written


def write_static_optimization(result: LoadSharingResult, out_dir, name: str, rows=None,
                              report: bool = False, analysis: str = "StaticOptimization") -> list:
    """Write ``<name>_<analysis>_activation.sto``, ``_force.sto`` and ``_controls.xml`` (the
    activations as an OpenSim ControlSet, :func:`arthron.io.control_set.write_control_set`,
    as OpenSim 4.6 writes it for the ForwardTool and CMC) into ``out_dir``
    (created; ``analysis``: the analysis' name in its setup, as OpenSim names the files);
    ``rows`` the frames to keep; with ``report`` also
    ``<name>_StaticOptimization_report.sto`` (objective, residual, feasibility, cone per frame).
    All tables are computed before the first file is written. Returns the paths."""
    out = Path(out_dir)
    make_output_folder(out / f"{name}_{analysis}_activation.sto")   # one line naming it, not OSError
    written = []
    tables = [("activation", result.activation_table()), ("force", result.force_table())]
    if report:
        tables.append(("report", result.report_table()))
    for kind, table in tables:
        if rows is not None:
            table.time, table.data = table.time[rows], table.data[rows]
        f = out / f"{name}_{analysis}_{kind}.sto"
        write_sto(f, table)
        written.append(f)
        if kind == "force":
            f = out / f"{name}_{analysis}_controls.xml"
            write_control_set(f, tables[0][1])
            written.append(f)
    return written


def run_static_optimization(model, motion, *, external_loads=None, lowpass_hz=None, time_range=None,
                            activation_exponent: float = 2.0, use_muscle_physiology: bool = True,
                            use_model_force_set: bool = True, weights=None,
                            on_infeasible: str = "raise", **kw) -> LoadSharingResult:
    """Static optimization of files or objects.

    model : Model or ``.osim`` path; motion : Table or ``.mot/.sto`` path (or a states file's
    ModelStates, :func:`setup_motion`); external_loads :
    ExternalLoads or the path of its XML; the rest as
    :func:`arthron.solvers.load_sharing.static_optimization` (bounds ``min_control`` /
    ``max_control`` from the model file, OpenSim 4.6's rules otherwise).

    Raises
    ------
    OptionError for a bad time range, cut-off or exponent; the readers' and solver's errors
    (InfeasibleFrames naming the frames and the reserves that would fix them).
    """
    time_range = check_time_range(time_range)
    lowpass_hz = check_lowpass(lowpass_hz)
    try:
        p = float(activation_exponent)
    except (TypeError, ValueError):
        raise OptionError(f"activation exponent must be a number, got {activation_exponent!r}") from None
    model = model if isinstance(model, Model) else read_osim(model)
    motion = _motion(motion)
    ext = external_loads
    if ext is not None and not hasattr(ext, "forces"):
        ext = read_external_loads(ext)
    if not use_model_force_set:
        model = coordinate_actuator_model(model)
    return static_optimization(model, motion, external_loads=ext, lowpass_hz=lowpass_hz,
                               time_range=time_range, activation_exponent=p,
                               use_muscle_physiology=use_muscle_physiology, weights=weights,
                               controls=control_bounds(model), on_infeasible=on_infeasible, **kw)


def run_static_optimization_from_setup(setup_path, *, placeholders=None, search_dirs=None,
                                       results_dir=None, write: bool = True,
                                       on_infeasible: str = "raise", joint_reactions: bool = False):
    """Run the StaticOptimization of an OpenSim AnalyzeTool setup (see the module docstring).

    With ``joint_reactions`` the solved forces also go straight into the joint reactions of
    every joint (:func:`joint_reactions_of`: on the child, in ground, OpenSim JointReaction's
    layout), written as ``<name>_JointReaction_ReactionLoads.sto`` beside the two
    StaticOptimization files and kept in ``result.extra["joint_reactions"]``.

    Returns
    -------
    (LoadSharingResult over every frame, list of written paths) — the files keep the frames
    OpenSim records with ``step_interval``.

    Raises
    ------
    DataFileError (not an AnalyzeTool, no enabled StaticOptimization, missing files, bad
    numbers), UnsupportedFeature (states_file), SolverError / InfeasibleFrames.
    """
    st = read_analyze_setup(setup_path, placeholders, search_dirs)
    so = st.analysis("StaticOptimization")
    if so is None:
        raise DataFileError("the AnalyzeTool setup has no enabled StaticOptimization analysis", st.path)
    if write:     # the outputs before the solve: a bad folder or an input as output fails at once
        static_optimization_outputs(results_directory(st.setup, results_dir, create=False), st.name,
                                    joint_reactions=joint_reactions, what=None,
                                    analysis=analysis_name(so, "StaticOptimization"))
    model = model_with_force_sets(st)
    motion = setup_motion(st, model)
    if joint_reactions and st.states_file is not None:
        raise UnsupportedFeature("joint reactions of a StaticOptimization on a <states_file> are not "
                                 "computed here: add a JointReaction with the _force.sto as its "
                                 "<forces_file> to an AnalyzeTool setup", st.path)
    res = static_optimization_of_setup(st, so, model, motion, on_infeasible=on_infeasible)
    if joint_reactions:
        inp = res.extra["setup_inputs"]
        res.extra["joint_reactions"] = joint_reactions_of(
            res, res.extra["model"], motion, external_loads=inp["external_loads"],
            lowpass_hz=inp["lowpass_hz"], time_range=inp["time_range"])
    written = []
    if write:
        out = results_directory(st.setup, results_dir)
        n = step_interval(so, st.path)
        rows = setup_step_rows(st, motion, res.time, n)
        jr = res.extra["joint_reactions"] if joint_reactions else None
        written = write_load_sharing(res, out, st.name, jr, report=False, rows=rows,
                                     analysis=analysis_name(so, "StaticOptimization"))
    return res, written


def _motion(motion):
    """A motion given as a Table or a states file's ModelStates, as it is; a path, read."""
    if hasattr(motion, "labels") or hasattr(motion, "speed_spline_accelerations"):
        return motion
    return read_sto(motion)


def setup_motion(st: AnalyzeSetup, model: Model):
    """What an AnalyzeTool setup's analyses run on: its coordinates file (a Table), or the
    model's states in its ``states_file`` within its time range (ModelStates,
    :func:`arthron.solvers.states_file.states_from_table`)."""
    if st.states_file is None:
        return read_sto(st.coordinates_file)
    from ..solvers.states_file import states_from_table
    return states_from_table(model, read_sto(st.states_file), st.time_range)


def static_optimization_of_setup(st: AnalyzeSetup, so, model: Model, motion, *,
                                 on_infeasible: str = "raise") -> LoadSharingResult:
    """The StaticOptimization analysis ``so`` (its setup element) of the AnalyzeTool setup
    ``st`` on ``model`` (the setup's, force sets applied) and ``motion`` (its coordinates
    file), every frame; what :func:`run_static_optimization_from_setup` and the AnalyzeTool
    (:func:`arthron.tools.analyze_tool.run_analyze`) run. ``result.extra`` holds ``model``
    (the model solved) and ``setup_inputs`` (external loads, low-pass, time range).

    ``motion`` may be the ModelStates of the setup's states file (:func:`setup_motion`).

    Raises DataFileError for bad settings; the solver's errors."""
    step_interval(so, st.path)               # checked before the solve
    p = setting_float(setting_text(so, "activation_exponent"), 2.0, st.path, "activation_exponent")
    if not p >= 1:
        raise DataFileError(f"<StaticOptimization> activation_exponent must be ≥ 1, got {p:g}", st.path)
    phys = setting_bool(so, "use_muscle_physiology", True)
    use_mfs = setting_bool(so, "use_model_force_set", True)
    ext = read_external_loads(st.external_loads_file) if st.external_loads_file is not None else None
    t0, t1 = st.time_range
    t0 = max(t0, float(motion.time[0]))
    t1 = min(t1, float(motion.time[-1]))
    # the analysis' own start/end times narrow the tool's
    a0 = setting_float(setting_text(so, "start_time"), -np.inf, st.path, "start_time")
    a1 = setting_float(setting_text(so, "end_time"), np.inf, st.path, "end_time")
    t0, t1 = max(t0, a0), min(t1, a1)
    lowpass = st.lowpass_hz if st.lowpass_hz > 0 else None
    solved = model if use_mfs else coordinate_actuator_model(model)
    res = run_static_optimization(solved, motion, external_loads=ext, lowpass_hz=lowpass,
                                  time_range=(t0, t1), activation_exponent=p,
                                  use_muscle_physiology=phys, on_infeasible=on_infeasible)
    res.extra["model"] = solved
    res.extra["setup_inputs"] = {"external_loads": ext, "lowpass_hz": lowpass, "time_range": (t0, t1)}
    return res


def joint_reactions_of(result: LoadSharingResult, model, motion, *, external_loads=None, joints=None,
                       on="child", in_frame="ground", lowpass_hz=None, time_range=None,
                       accelerations="forward"):
    """Joint reactions (issue 4's E-matrix, OpenSim JointReaction's layout) with the actuator
    forces of a load-sharing result applied directly (no ``_force.sto`` round trip).

    ``model`` must be the model the result was solved on (with its reserves); ``motion``,
    ``external_loads``, ``lowpass_hz`` and ``time_range`` those of the solve. Returns a
    :class:`arthron.solvers.reactions.JointReactionResult`."""
    from ..solvers.reactions import joint_reactions
    from ..tables import Table
    model = model if isinstance(model, Model) else read_osim(model)
    motion = _motion(motion)
    ext = external_loads
    if ext is not None and not hasattr(ext, "forces"):
        ext = read_external_loads(ext)
    forces = Table(name="forces", time=np.array(result.time, float), labels=list(result.names),
                   data=np.array(result.forces, float), in_degrees=False)
    if time_range is None:
        time_range = (float(result.time[0]), float(result.time[-1]))
    return joint_reactions(model, motion, forces_table=forces, external_loads=ext, joints=joints, on=on,
                           in_frame=in_frame, lowpass_hz=lowpass_hz, time_range=time_range,
                           accelerations=accelerations)
