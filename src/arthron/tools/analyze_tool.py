"""OpenSim's AnalyzeTool on arthron's solvers: setups whose AnalysisSet holds JointReaction,
MuscleAnalysis, StaticOptimization, BodyKinematics, Kinematics, PointKinematics, ForceReporter,
StatesReporter and Actuation analyses, and
the first two on files given directly (``arthron jr``, ``arthron paths``, ``arthron analyze``).

Results are written with OpenSim's names into the setup's ``results_directory`` (created when
missing): ``<tool name>_JointReaction_ReactionLoads.sto``,
``<tool name>_MuscleAnalysis_Length.sto``, ``<tool name>_MuscleAnalysis_MomentArm_<coordinate>.sto``,
``<tool name>_StaticOptimization_activation.sto`` and ``_force.sto``,
``<tool name>_BodyKinematics_pos_global.sto`` / ``_vel_global`` / ``_acc_global`` (``_bodyLocal``
in the bodies' frames), ``<tool name>_Kinematics_q.sto`` / ``_u`` / ``_dudt``,
``<tool name>_PointKinematics_<point_name>_pos.sto`` / ``_vel`` / ``_acc``,
``<tool name>_ForceReporter_forces.sto``, ``<tool name>_StatesReporter_states.sto``, where ``JointReaction``
... stand for each analysis' name in the setup (:func:`analysis_name`), as OpenSim 4.6 names them.
"""
from __future__ import annotations

import functools
import re
import warnings
from pathlib import Path

import numpy as np

from ..errors import ArthronWarning, DataFileError, ModelFileError, OptionError, SolverError, UnsupportedFeature
from ..io.files import check_output, input_guard, make_output_folder, output_group
from ..io.osim import read_osim
from ..io.setup import read_external_loads
from ..io.sto import expect_values, read_sto, write_sto
from ..tables import Table
from ..models.model import Model
from ..multibody.constraints import assemble
from ..multibody.kinematics import Tree, compile_model
from ..solvers.filtering import prepare_coordinates
from ..solvers.kinematics_analyses import (CENTER_OF_MASS, AnalysisStates,
                                           analysis_states_of, body_kinematics, coordinate_kinematics,
                                           point_kinematics)
from ..solvers.states_file import ModelStates, states_report
from ..solvers.muscle_states import shared_muscle_loads
from ..solvers.muscle_analysis import PathAnalysis, default_muscles, path_analysis
from ..solvers.reactions import JointReactionResult, joint_reactions
from ..models.motion import coordinates_from_table
from .analyze_setup import (AnalyzeSetup, model_with_force_sets, read_analyze_setup,  # noqa: F401
                            read_force_set_file, step_rows)
from .analyze_setup import analysis_name, setup_step_rows
from .options import check_lowpass, check_time_range
from .path_analysis_files import (_MUSCLE_ANALYSIS_DESCRIPTION, _path_table_files,  # noqa: F401
                                  _still_coordinates, _write_path_tables, write_path_analysis)
from .setup_files import setting_bool, setting_list, setting_text, step_interval
from .setup_files import find_setup_file, results_directory

__all__ = ["read_force_set_file", "model_with_force_sets", "AnalyzeSetup", "read_analyze_setup", "joint_reactions_from_setup",
           "muscle_analysis_from_setup", "run_analyze", "run_joint_reaction", "write_path_analysis",
           "write_joint_reactions", "SUPPORTED_ANALYSES"]

#: the AnalysisSet members arthron runs
SUPPORTED_ANALYSES = ("JointReaction", "MuscleAnalysis", "StaticOptimization", "BodyKinematics",
                      "Kinematics", "PointKinematics", "ForceReporter", "StatesReporter", "Actuation")
#: the kinematics analyses (:mod:`arthron.solvers.kinematics_analyses`)
KINEMATICS_ANALYSES = ("BodyKinematics", "Kinematics", "PointKinematics")
#: the Actuation analysis' files, ``<tool name>_<analysis>_<kind>.sto``
_ACTUATION_FILES = ("force", "speed", "power")


def _setup_input(st: AnalyzeSetup, model: Model):
    """What the setup's analyses run on (:func:`~arthron.tools.static_optimization_tool.setup_motion`)."""
    from .static_optimization_tool import setup_motion
    return setup_motion(st, model)


def _file_muscle_states(motion):
    """The muscle states a states file gives ({muscle: {state: (T,) array}}), or None for a
    coordinates file (the muscles at their default states)."""
    return motion.muscles if isinstance(motion, ModelStates) else None


def _external_loads(path):
    """(ExternalLoads, its data table) of an ExternalLoads file, or (None, None)."""
    if path is None:
        return None, None
    ext = read_external_loads(path)
    return ext, ext.load_table()


# --------------------------------------------------------------------------------------
# JointReaction
# --------------------------------------------------------------------------------------
def _warn_default_state_muscles(model: Model, forces, accelerations, what: str, option: str,
                                stacklevel: int = 3):
    """Joint reactions without muscle forces and with forward-dynamics accelerations: OpenSim
    then takes the muscle forces from the muscles' default states (with
    solve_for_equilibrium_for_auxiliary_states false, unequilibrated fibres: reactions of 10^5 N
    on the Gait2354 pipeline's Analyze_Reactions setup), and so does arthron; say so."""
    if (forces is None and accelerations == "forward"
            and any(m.applies_force for m in model.muscles.values())):
        warnings.warn(f"{what}: the muscles pull with their forces at their default, unequilibrated "
                      "states (as OpenSim's JointReaction without a forces file), not the forces of "
                      f"the motion; give the StaticOptimization _force.sto as {option}",
                      ArthronWarning, stacklevel=stacklevel + 1)


def _joint_reaction(st: AnalyzeSetup, jr, model: Model, motion, accelerations, search_dirs, tree=None,
                    loads=None):
    fpath = find_setup_file(st.setup, setting_text(jr, "forces_file"), search_dirs)
    forces = read_sto(fpath) if fpath is not None else None
    if not isinstance(motion, ModelStates):     # a states file gives the muscles' states
        _warn_default_state_muscles(model, forces, accelerations,
                                    f"{st.path}: JointReaction without <forces_file>", "<forces_file>", 3)
    ext, loads_table = loads or _external_loads(st.external_loads_file)
    names = setting_list(setting_text(jr, "joint_names")) or ["ALL"]
    on = setting_list(setting_text(jr, "apply_on_bodies")) or ["child"]
    frames = setting_list(setting_text(jr, "express_in_frame")) or ["ground"]
    tree = compile_model(model) if tree is None else tree
    if names[0].upper() == "ALL":
        names = list(model.joints)
    else:
        bad = [n for n in names if n not in model.joints]
        if bad:
            raise SolverError(f"JointReaction joint_names: model '{model.name}' has no joint(s) "
                              f"{', '.join(bad)}", st.setup.path)
    n = len(names)
    # OpenSim: lists of the wrong length fall back to child / ground (with a warning)
    if len(on) not in (1, n):
        warnings.warn("apply_on_bodies length differs from joint_names: all on child (as OpenSim)",
                      ArthronWarning, stacklevel=3)
        on = ["child"]
    if len(frames) not in (1, n):
        warnings.warn("express_in_frame length differs from joint_names: all in ground (as OpenSim)",
                      ArthronWarning, stacklevel=3)
        frames = ["ground"]
    return joint_reactions(model, motion, forces, ext, names, on, frames, st.lowpass_hz, st.time_range,
                           accelerations=accelerations, loads_table=loads_table, tree=tree)


def joint_reactions_from_setup(setup_path, placeholders=None, accelerations="forward", *,
                               search_dirs=None) -> JointReactionResult:
    """Run the JointReaction analysis of an OpenSim AnalyzeTool setup.

    Reads ``model_file``, ``coordinates_file`` or ``states_file`` (the file's coordinates,
    speeds and muscle states, :mod:`arthron.solvers.states_file`; ``accelerations="forward"``),
    ``lowpass_cutoff_frequency_for_coordinates``, ``initial_time``/``final_time``,
    ``external_loads_file`` and the JointReaction's ``forces_file``, ``joint_names``,
    ``apply_on_bodies``, ``express_in_frame``, and the actuators of ``force_set_files``
    (appended, or replacing the model's forces when ``replace_force_set``); relative names are
    resolved against the setup's folder (as AnalyzeTool does). ``accelerations="forward"``
    reproduces OpenSim (see :func:`arthron.solvers.reactions.joint_reactions`).
    ``placeholders``: literal text substitutions before parsing
    (:func:`arthron.io.setup.parse_xml`). Every frame is returned (``step_interval`` is
    applied when writing, by :func:`run_analyze`).

    Returns
    -------
    JointReactionResult, columns in the order and with the labels OpenSim writes.

    Raises
    ------
    DataFileError (not an AnalyzeTool, no JointReaction, missing files), SolverError,
    UnsupportedFeature (states_file).
    """
    st = read_analyze_setup(setup_path, placeholders, search_dirs)
    jr = st.analysis("JointReaction")
    if jr is None:
        raise DataFileError("the AnalyzeTool setup has no enabled JointReaction analysis", st.path)
    model = model_with_force_sets(st)
    return _joint_reaction(st, jr, model, _setup_input(st, model), accelerations, search_dirs)


def run_joint_reaction(model, motion, *, forces=None, external_loads=None, joints=None, on="child",
                       in_frame="ground", lowpass_hz=None, time_range=None, accelerations="motion",
                       constraint_forces="auto") -> JointReactionResult:
    """Joint reactions of files or objects (``arthron jr MODEL MOTION``).

    model : Model or ``.osim`` path; motion : Table or ``.mot/.sto`` path; forces : Table or
    path of actuator forces (e.g. static optimization ``_force.sto``); external_loads :
    ExternalLoads or path of its XML; the rest as
    :func:`arthron.solvers.reactions.joint_reactions` (default time range: the whole motion).

    Raises
    ------
    OptionError for a time range that is not two increasing numbers or a cut-off that is not a
    finite number (:mod:`arthron.tools.options`); the errors of the readers and of the solver.
    """
    time_range = check_time_range(time_range)
    lowpass_hz = check_lowpass(lowpass_hz)
    model = model if isinstance(model, Model) else read_osim(model)
    motion = motion if hasattr(motion, "labels") else read_sto(motion)
    if forces is not None and not hasattr(forces, "labels"):
        forces = read_sto(forces)
    ext, loads_table = (external_loads, None) if external_loads is None or hasattr(external_loads, "forces") \
        else _external_loads(external_loads)
    if ext is not None and loads_table is None:
        loads_table = ext.load_table()
    if time_range is None:
        time_range = (float(motion.time[0]), float(motion.time[-1]))
    _warn_default_state_muscles(model, forces, accelerations,
                                f"model '{model.name}': joint reactions without forces", "forces", 2)
    return joint_reactions(model, motion, forces_table=forces, external_loads=ext, joints=joints, on=on,
                           in_frame=in_frame, lowpass_hz=lowpass_hz, time_range=time_range,
                           accelerations=accelerations, constraint_forces=constraint_forces,
                           loads_table=loads_table)


def write_joint_reactions(result: JointReactionResult, path, rows=None) -> Path:
    """Write a JointReaction result as OpenSim's ``_ReactionLoads.sto`` (whole or not at all);
    ``rows``: the frames to keep (default all). Returns the path."""
    table = result.to_table()
    if rows is not None:
        table.time, table.data = table.time[rows], table.data[rows]
    make_output_folder(path)
    write_sto(path, table)
    return Path(path)


# --------------------------------------------------------------------------------------
# MuscleAnalysis
# --------------------------------------------------------------------------------------
def _setup_t_q_u(st: AnalyzeSetup, model: Model, motion):
    """(time, q, u) the setup's analyses start from, before any assembly: a states file's rows
    (coordinates and speeds as given), or the coordinates file's quintic splines (missing
    coordinates at their defaults, filtered, over the setup's time range) and their
    derivatives, as :func:`arthron.solvers.kinematics_analyses.analysis_states` builds them."""
    if isinstance(motion, ModelStates):
        return motion.time, motion.q, motion.u
    vals = coordinates_from_table(model, motion, missing="default")
    lp = st.lowpass_hz if st.lowpass_hz > 0 else None
    t, q, u, _ = prepare_coordinates(np.asarray(motion.time, float), vals, lp, st.time_range,
                                     source=getattr(motion, "source", None))
    return t, q, u


def _setup_q_qd(st: AnalyzeSetup, model: Model, tree: Tree, motion, t_q_u=None):
    """(time, q, q̇) of the states AnalyzeTool visits: :func:`_setup_t_q_u` (``t_q_u``, when
    prepared already), q assembled when the model has constraints, q̇ from the speeds
    (:func:`arthron.multibody.kinematics.qdot_from_speeds`)."""
    t, q, u = t_q_u or _setup_t_q_u(st, model, motion)
    if any(c.enabled for c in model.constraints):
        q = assemble(model, tree, q)
    qd = u
    if tree.angular_velocity_groups:
        from ..multibody.kinematics import qdot_from_speeds
        qd = qdot_from_speeds(tree, q, u)
    return np.asarray(t, float), q, qd


def _setup_coordinates(st: AnalyzeSetup, model: Model, tree: Tree, motion):
    """(time, q) where AnalyzeTool evaluates its analyses: the coordinates file, missing
    coordinates at their defaults, filtered and splined as the tools do
    (:func:`arthron.solvers.filtering.prepare_coordinates`) over the setup's time range, and
    assembled when the model has constraints; with a states file, its coordinates."""
    return _setup_q_qd(st, model, tree, motion)[:2]


def _muscle_analysis(st: AnalyzeSetup, ma, model: Model, motion, tree=None, fibers=False,
                     q_qd=None) -> tuple:
    """(PathAnalysis, the coordinates to write moment arms for, {file kind: (T, m) array} of the
    other files to write (``fibers``: :func:`_fiber_files`; else {})). ``q_qd``:
    :func:`_setup_q_qd` of the setup, when prepared already."""
    tree = compile_model(model) if tree is None else tree
    mlist = setting_list(setting_text(ma, "muscle_list"))
    muscles = None if not mlist or mlist[0].lower() == "all" else mlist
    if muscles is not None:
        bad = [m for m in muscles if m not in model.forces]
        if bad:
            raise _setting_error(st, ma, "muscle_list", f"model '{model.name}' has no muscle "
                                 f"{', '.join(map(repr, bad))} (OpenSim 4.6 leaves such names out "
                                 "without a word)")
    if q_qd is not None:
        t, q, qd = q_qd
    elif fibers:
        t, q, qd = _setup_q_qd(st, model, tree, motion)
    else:
        t, q = _setup_coordinates(st, model, tree, motion)
    if muscles is None and not default_muscles(model):
        # OpenSim 4.6 runs a MuscleAnalysis on a model without muscles: its files hold the
        # time column only (and the other analyses run)
        q = np.atleast_2d(np.asarray(q, float))
        res = PathAnalysis(time=np.asarray(t, float), names=[], coordinates=list(tree.coordinate_names),
                           lengths=np.zeros((len(q), 0)), moment_arms=np.zeros((len(q), 0, tree.nq)), q=q)
    else:
        res = path_analysis(model, q, time=t, muscles=muscles, tree=tree)
    clist = setting_list(setting_text(ma, "moment_arm_coordinate_list"))
    if not clist or clist[0].lower() == "all":
        coords = list(res.coordinates)           # OpenSim 4.6: every coordinate of the model
    else:
        bad = [c for c in clist if c not in model.coordinates]
        if bad:
            raise _setting_error(st, ma, "moment_arm_coordinate_list", f"model '{model.name}' has "
                                 f"no coordinate {', '.join(map(repr, bad))} (OpenSim 4.6 leaves such "
                                 "names out without a word)")
        coords = clist
    extra = _fiber_files(st, ma, model, tree, res, coords, motion, qd) if fibers else {}
    return res, coords, extra


def _fiber_files(st: AnalyzeSetup, ma, model: Model, tree: Tree, res: PathAnalysis, coords, motion,
                 qd) -> dict:
    """{file kind: (T, m) array} of the MuscleAnalysis files besides Length and MomentArm that
    arthron reproduces for every analysed muscle (:func:`arthron.solvers.muscle_fibers.muscle_fibers`,
    at the default states or the states file's), and ``Moment_<coordinate>`` (moment arm × the
    muscle's force) with ``compute_moments``; one warning names the files OpenSim 4.6 writes that
    are left out, and the muscle classes why."""
    from ..multibody.paths import compile_paths, lengthening_speeds
    from ..solvers.muscle_fibers import MUSCLE_ANALYSIS_FILES, muscle_fibers
    muscles = [model.forces[n] for n in res.names]
    if not muscles:
        values = {k: np.zeros((len(res.time), 0)) for k in MUSCLE_ANALYSIS_FILES}
        have = {k: np.zeros(0, bool) for k in MUSCLE_ANALYSIS_FILES}
    elif not all(getattr(m, "is_muscle", False) for m in muscles):
        values = {}
        have = {k: np.zeros(len(muscles), bool) for k in MUSCLE_ANALYSIS_FILES}
    else:
        speeds = lengthening_speeds(compile_paths(model, tree, forces=list(res.names)), tree, res.q, qd)
        states = _file_muscle_states(motion)
        values, have = muscle_fibers(muscles, res.lengths, speeds, _muscle_defaults(model), states)
        for k, m in enumerate(muscles):         # a disabled muscle: OpenSim's force is not arthron's
            if not m.applies_force:
                for f in ("TendonForce", "FiberForce", "ActiveFiberForce", "PassiveFiberForce",
                          "ActiveFiberForceAlongTendon", "PassiveFiberForceAlongTendon",
                          "MuscleActuatorPower"):
                    have[f][k] = False
    out = {k: values[k] for k in MUSCLE_ANALYSIS_FILES if have[k].all()}
    skipped = [k for k in MUSCLE_ANALYSIS_FILES if k not in out]
    if setting_bool(ma, "compute_moments", True):
        if "TendonForce" in out:
            for c in coords:
                j = res.coordinates.index(c)
                out[f"Moment_{c}"] = res.moment_arms[:, :, j] * out["TendonForce"]
        else:
            skipped.append("Moment_<coordinate>")
    if skipped:
        why = sorted({m.type for k, m in enumerate(muscles) if not all(
            have[f][k] for f in MUSCLE_ANALYSIS_FILES if f in skipped)} | {
            m.type for m in muscles if not m.applies_force})
        warnings.warn(f"{st.path}: <MuscleAnalysis name='{analysis_name(ma, 'MuscleAnalysis')}'>: "
                      f"files not written (not reproduced for {', '.join(why) or 'these muscles'}): "
                      + ", ".join(skipped), ArthronWarning, stacklevel=4)
    return out


def muscle_analysis_from_setup(setup_path, placeholders=None, *, search_dirs=None) -> PathAnalysis:
    """Run the MuscleAnalysis of an OpenSim AnalyzeTool setup: path lengths and moment arms of
    ``muscle_list`` (``all``: every muscle) over the setup's coordinates (filtered with
    ``lowpass_cutoff_frequency_for_coordinates``, between ``initial_time`` and ``final_time``).

    Returns every frame (:class:`arthron.solvers.muscle_analysis.PathAnalysis`).

    Raises
    ------
    DataFileError (not an AnalyzeTool, no MuscleAnalysis, unknown muscles or coordinates,
    missing files).
    """
    st = read_analyze_setup(setup_path, placeholders, search_dirs)
    ma = st.analysis("MuscleAnalysis")
    if ma is None:
        raise DataFileError("the AnalyzeTool setup has no enabled MuscleAnalysis analysis", st.path)
    model = model_with_force_sets(st)
    return _muscle_analysis(st, ma, model, _setup_input(st, model))[0]


# --------------------------------------------------------------------------------------
# ForceReporter
# --------------------------------------------------------------------------------------
def _force_reporter(st: AnalyzeSetup, el, model: Model, motion, tree: Tree, loads=None, q_qd=None):
    """One ForceReporter of a setup (:func:`arthron.solvers.force_reporter.force_reporter`):
    the records at the AnalyzeTool's states, muscles at their default states (a coordinates
    file) or the file's (a states file). A ForceReporter arthron cannot reproduce
    (``include_constraint_forces`` on a constrained model) is None, with a warning; forces left
    out of the file are named in a warning. ``loads``, ``q_qd``: :func:`_external_loads` and
    :func:`_setup_q_qd` of the setup, when prepared already."""
    from ..solvers.force_reporter import force_reporter
    t, q, qd = q_qd or _setup_q_qd(st, model, tree, motion)
    ext, loads_table = loads or _external_loads(st.external_loads_file)
    try:
        rep = force_reporter(model, t, q, qd, tree=tree,
                             muscle_states=_file_muscle_states(motion),
                             default_fiber_lengths=_muscle_defaults(model), external_loads=ext,
                             loads_table=loads_table,
                             include_constraint_forces=setting_bool(el, "include_constraint_forces", False))
    except UnsupportedFeature as e:
        warnings.warn(f"{st.path}: <ForceReporter name='{analysis_name(el, 'ForceReporter')}'> skipped: "
                      f"{e.message}", ArthronWarning, stacklevel=4)
        return None
    if rep.omitted:
        warnings.warn(f"{st.path}: the ForceReporter file leaves out the columns OpenSim 4.6 writes for "
                      + ", ".join(f"{a} '{b}'" for a, b in rep.omitted), ArthronWarning, stacklevel=4)
    return rep


# --------------------------------------------------------------------------------------
# Actuation
# --------------------------------------------------------------------------------------
def _actuation(st: AnalyzeSetup, model: Model, motion, tree: Tree, kin_states: AnalysisStates):
    """One Actuation analysis of a setup (:func:`arthron.solvers.actuation.actuation`) at the
    kinematics analyses' states; the actuators left out are named in a warning."""
    from ..solvers.actuation import actuation
    res = actuation(model, tree, kin_states.time, kin_states.q, kin_states.u, kin_states.qd,
                    muscle_states=_file_muscle_states(motion),
                    default_fiber_lengths=_muscle_defaults(model))
    if res.omitted:
        warnings.warn(f"{st.path}: the Actuation files leave out the actuators OpenSim 4.6 records "
                      + ", ".join(f"{a} '{b}'" for a, b in res.omitted), ArthronWarning, stacklevel=4)
    return res


# --------------------------------------------------------------------------------------
# StatesReporter
# --------------------------------------------------------------------------------------
def _states_reporter(st: AnalyzeSetup, model: Model, motion, tree: Tree, kin_states) -> Table | None:
    """A StatesReporter of a setup (:func:`arthron.solvers.states_file.states_report`): the
    model's states at the AnalyzeTool's frames: a states file's rows (missing states at their
    defaults), or the coordinates file's q and u (``kin_states``, the splines the kinematics
    analyses record) with every muscle state at its default (the AnalyzeTool does not
    equilibrate them). A muscle state without a default arthron knows: None, with a warning;
    forces arthron does not model (their states, if any, are not in the file): a warning."""
    from ..solvers.muscle_states import STATE_NAMES
    others = sorted({f"{f.type} '{n}'" for n, f in model.forces.items()
                     if not getattr(f, "modelled", True) or (f.is_muscle and f.type not in STATE_NAMES)})
    if others:
        warnings.warn(f"{st.path}: the StatesReporter file holds the coordinates' and the muscles' "
                      "states only; OpenSim 4.6 adds the state variables, if any, of "
                      + ", ".join(others), ArthronWarning, stacklevel=4)
    if not isinstance(motion, ModelStates):
        motion = ModelStates(time=kin_states.time, index=np.arange(len(kin_states.time)),
                             q=kin_states.q, u=kin_states.u, source=st.path)
    try:
        return states_report(model, motion)
    except UnsupportedFeature as e:
        warnings.warn(f"{st.path}: <StatesReporter> skipped: {e.message}", ArthronWarning, stacklevel=4)
        return None


# --------------------------------------------------------------------------------------
# BodyKinematics, Kinematics, PointKinematics
# --------------------------------------------------------------------------------------
def _kinematics_states(st: AnalyzeSetup, model: Model, motion, tree: Tree, loads=None,
                       t_q_u=None) -> AnalysisStates:
    """The states the kinematics analyses record (one set for all of them): those of the
    states file (its q, u and muscle states), or of the coordinates file's splines
    (:func:`_setup_t_q_u`, as :func:`arthron.solvers.kinematics_analyses.analysis_states`).
    ``loads``, ``t_q_u``: :func:`_external_loads` and :func:`_setup_t_q_u` of the setup, when
    prepared already."""
    ext, loads_table = loads or _external_loads(st.external_loads_file)
    t, q, u = t_q_u or _setup_t_q_u(st, model, motion)
    return analysis_states_of(model, t, q, u, external_loads=ext, loads_table=loads_table, tree=tree,
                              default_fiber_lengths=_muscle_defaults(model),
                              muscle_states=_file_muscle_states(motion))


def _muscle_defaults(model: Model) -> dict:
    """{muscle: (default_fiber_length, maximum_pennation_angle)} of the muscles whose file gives
    either (kept verbatim by the reader among the properties arthron does not model)."""
    out = {}
    for name, m in model.muscles.items():
        xml = getattr(m, "unmodelled_xml", "") or ""
        vals = []
        for tag in ("default_fiber_length", "maximum_pennation_angle"):
            hit = re.search(rf"<{tag}>\s*([^<]+?)\s*</{tag}>", xml)
            try:
                vals.append(float(hit.group(1)) if hit else None)
            except ValueError:
                raise DataFileError(f"muscle '{name}': <{tag}> {hit.group(1)!r} is not a number",
                                    model.source) from None
        if any(v is not None for v in vals):
            out[name] = tuple(vals)
    return out


def _setting_error(st: AnalyzeSetup, el, tag: str, what: str) -> DataFileError:
    """A DataFileError naming the setup, the analysis element and its setting."""
    c = el.find(tag)
    line = (c if c is not None else el).sourceline
    return DataFileError(f"<{el.tag} name='{analysis_name(el, el.tag)}'> <{tag}>: {what}", st.path,
                         f"line {line}" if line else None)


def _kinematics_analysis(st: AnalyzeSetup, kind: str, el, model: Model, tree: Tree,
                         states: AnalysisStates):
    """One BodyKinematics / Kinematics / PointKinematics of a setup, over ``states``."""
    deg = setting_bool(el, "in_degrees", True)
    if kind == "BodyKinematics":
        bodies = setting_list(setting_text(el, "bodies")) or ["all"]
        bad = [b for b in bodies if b not in ("all", CENTER_OF_MASS) and b not in tree.body_names]
        if bad:
            raise _setting_error(st, el, "bodies", f"model '{model.name}' has no body "
                                 f"{', '.join(map(repr, bad))}")
        return body_kinematics(tree, states, bodies, in_degrees=deg,
                               local=setting_bool(el, "express_results_in_body_local_frame", False))
    if kind == "Kinematics":
        coords = setting_list(setting_text(el, "coordinates")) or ["all"]
        bad = [c for c in coords if c != "all" and c not in tree.coordinate_names]
        if bad:
            raise _setting_error(st, el, "coordinates", f"model '{model.name}' has no coordinate "
                                 f"{', '.join(map(repr, bad))}")
        return coordinate_kinematics(model, tree, states, coords, in_degrees=deg)
    names = {}
    for tag, default in (("body_name", "ground"), ("relative_to_body_name", "none")):
        name = setting_text(el, tag, default)
        if not (tag == "relative_to_body_name" and name.lower() == "none"):
            try:
                tree.body_index(name)
            except ModelFileError:
                raise _setting_error(st, el, tag, f"model '{model.name}' has no body {name!r}") from None
        names[tag] = name
    text = setting_list(setting_text(el, "point", "0 0 0"))
    try:
        point = np.array([float(x) for x in text], float)
    except ValueError:
        point = np.array([])
    if point.shape != (3,) or not np.isfinite(point).all():
        raise _setting_error(st, el, "point", f"three numbers expected (m), got {' '.join(text)!r}")
    return point_kinematics(tree, states, names["body_name"], point,
                            relative_to=names["relative_to_body_name"],
                            point_name=setting_text(el, "point_name", "NONAME"))


def _kinematics_files(tool: str, kind: str, el, res) -> list:
    """The file names OpenSim 4.6 gives a kinematics analysis' results, with the kind of each
    table (``[(name, kind)]``)."""
    a = analysis_name(el, kind)
    if kind == "BodyKinematics":
        sfx = "_bodyLocal" if res.local else "_global"
        return [(f"{tool}_{a}_pos_global.sto", "pos"), (f"{tool}_{a}_vel{sfx}.sto", "vel"),
                (f"{tool}_{a}_acc{sfx}.sto", "acc")]
    if kind == "Kinematics":
        return [(f"{tool}_{a}_{k}.sto", k) for k in ("q", "u", "dudt")]
    return [(f"{tool}_{a}_{res.point_name}_{k}.sto", k) for k in ("pos", "vel", "acc")]


def _write_kinematics(res, files) -> list:
    for f, kind in files:
        make_output_folder(f)
        write_sto(f, res.to_table(kind))
    return [Path(f) for f, _ in files]


# --------------------------------------------------------------------------------------
# the whole AnalyzeTool
# --------------------------------------------------------------------------------------
def _array_values(res) -> int:
    """About how many values the files of a result hold: the sizes of its arrays (those of
    its fields, of a tuple, list or dict of them)."""
    if isinstance(res, np.ndarray):
        return res.size
    if isinstance(res, (list, tuple)):
        return sum(_array_values(r) for r in res)
    if isinstance(res, dict):
        return sum(_array_values(r) for r in res.values())
    fields = getattr(res, "__dict__", None) or {}
    return sum(v.size for v in fields.values() if isinstance(v, np.ndarray))


def run_analyze(setup_path, *, placeholders=None, search_dirs=None, results_dir=None,
                accelerations="forward", only=None, joint_reaction_file=None) -> list:
    """Run an OpenSim AnalyzeTool setup: each enabled JointReaction, MuscleAnalysis,
    StaticOptimization, BodyKinematics, Kinematics and PointKinematics.

    Writes into ``results_dir`` (default the setup's ``results_directory``, relative to the
    setup's folder; created when missing), with OpenSim's names:
    (``JointReaction`` ... standing for the analysis' name in the setup, :func:`analysis_name`)
    ``<tool name>_JointReaction_ReactionLoads.sto``, ``<tool name>_MuscleAnalysis_Length.sto``
    ``<tool name>_MuscleAnalysis_MomentArm_<coordinate>.sto`` (every coordinate of
    ``moment_arm_coordinate_list``; with ``all``, every coordinate of the model, as OpenSim 4.6,
    zeros about those no listed path crosses; OpenSim writes them
    only with ``compute_moments``, arthron always), the MuscleAnalysis' other files
    (``_FiberLength.sto`` ... ``_MuscleActuatorPower.sto``, and ``_Moment_<coordinate>.sto`` with
    ``compute_moments``) that arthron reproduces for every listed muscle
    (:mod:`arthron.solvers.muscle_fibers`; the others named in one warning),
    ``<tool name>_StaticOptimization_activation.sto`` and ``_force.sto``
    (:func:`arthron.tools.static_optimization_tool.static_optimization_of_setup`: the same
    files as ``arthron so --setup``; each analysis solves on its own, as in OpenSim, where
    StaticOptimization works on its own copy of the model), and the kinematics analyses' files
    (:func:`_kinematics_files`; computed by :mod:`arthron.solvers.kinematics_analyses` over
    AnalyzeTool's states, the accelerations by forward dynamics as OpenSim realizes them, with
    the muscles at their default states, :mod:`arthron.solvers.muscle_states`; other muscle
    models apply no force there, with a warning). Each analysis' ``step_interval`` keeps the
    frames OpenSim records (:func:`step_rows`). Other analyses are skipped with a warning.
    A setup with a ``states_file`` runs on the file's rows within the time range: coordinates,
    speeds and muscle states as given, the accelerations of forward dynamics with the muscles
    at those states (:mod:`arthron.solvers.states_file`); a StaticOptimization meets the
    derivatives of the splines of the file's speeds, as OpenSim's.
    A ForceReporter writes ``<tool name>_ForceReporter_forces.sto``
    (:mod:`arthron.solvers.force_reporter`: every force's records at the same states, the
    muscles' forces at their default or the states file's states); with
    ``include_constraint_forces`` on a model with enabled constraints it is skipped with a
    warning. A StatesReporter writes ``<tool name>_StatesReporter_states.sto``
    (:func:`arthron.solvers.states_file.states_report`: every coordinate's value and speed and
    every muscle state, 4.x labels in model order, at the same frames). An Actuation writes
    ``<tool name>_Actuation_force.sto``, ``_speed.sto`` and ``_power.sto``
    (:mod:`arthron.solvers.actuation`: muscles, CoordinateActuators, PointActuators and
    TorqueActuators at the same states; others named in a warning).
    ``only``: the analysis classes to run (default :data:`SUPPORTED_ANALYSES`);
    ``joint_reaction_file``: write the JointReaction result there instead.

    Returns
    -------
    list of the written paths.

    Raises
    ------
    DataFileError (not an AnalyzeTool, no analysis arthron runs, missing files, an output that
    would replace an input, a kinematics analysis naming a body, coordinate or point the model
    lacks: the setup, the element and its line; a states file in degrees or without coordinates),
    UnsupportedFeature (an equilibration of the muscles on a states file), SolverError
    (InfeasibleFrames of a StaticOptimization).
    """
    with input_guard(), shared_muscle_loads():  # the kinematics' and JointReaction's muscle loads once
        return _run_analyze(setup_path, placeholders, search_dirs, results_dir, accelerations,
                            only, joint_reaction_file)


def _run_analyze(setup_path, placeholders, search_dirs, results_dir, accelerations, only,
                 joint_reaction_file) -> list:
    st = read_analyze_setup(setup_path, placeholders, search_dirs)
    kinds = tuple(SUPPORTED_ANALYSES if only is None else only)
    bad = [k for k in kinds if k not in SUPPORTED_ANALYSES]
    if bad:
        raise OptionError(f"analyses arthron runs are {', '.join(SUPPORTED_ANALYSES)}; not {', '.join(bad)}")
    todo = [(k, el) for k, el in st.analyses if k in kinds]
    skipped = [k for k, _ in st.analyses if k not in SUPPORTED_ANALYSES]
    if skipped and only is None:
        warnings.warn(f"{st.path}: analyses arthron does not run are skipped: {', '.join(skipped)}",
                      ArthronWarning, stacklevel=2)
    if not todo:
        raise DataFileError(f"the AnalyzeTool setup has no enabled {' or '.join(kinds)} analysis",
                            st.path)
    model = model_with_force_sets(st)
    motion = _setup_input(st, model)
    tree = compile_model(model)
    # what several analyses use, prepared once per run when first needed
    loads = functools.cache(lambda: _external_loads(st.external_loads_file))
    t_q_u = functools.cache(lambda: _setup_t_q_u(st, model, motion))     # the splines once
    q_qd = functools.cache(lambda: _setup_q_qd(st, model, tree, motion, t_q_u()))
    kin_states = functools.cache(lambda: _kinematics_states(st, model, motion, tree, loads(), t_q_u()))
    # compute everything before writing anything
    results = []
    for kind, el in todo:
        n = step_interval(el, st.path)
        if kind == "JointReaction":
            results.append((kind, el, n, _joint_reaction(st, el, model, motion, accelerations,
                                                         search_dirs, tree, loads())))
        elif kind == "StaticOptimization":
            from .static_optimization_tool import static_optimization_of_setup
            results.append((kind, el, n, static_optimization_of_setup(st, el, model, motion)))
        elif kind == "ForceReporter":
            rep = _force_reporter(st, el, model, motion, tree, loads(), q_qd())
            if rep is not None:
                results.append((kind, el, n, rep))
        elif kind in KINEMATICS_ANALYSES:
            results.append((kind, el, n, _kinematics_analysis(st, kind, el, model, tree, kin_states())))
        elif kind == "Actuation":
            results.append((kind, el, n, _actuation(st, model, motion, tree, kin_states())))
        elif kind == "StatesReporter":
            rep = _states_reporter(st, model, motion, tree,
                                   None if isinstance(motion, ModelStates) else kin_states())
            if rep is not None:
                results.append((kind, el, n, rep))
        else:
            results.append((kind, el, n, _muscle_analysis(st, el, model, motion, tree, fibers=True,
                                                          q_qd=q_qd())))
    out = results_directory(st.setup, results_dir, create=False)
    plan = []
    for kind, el, n, res in results:
        if kind == "JointReaction":
            plan.append([Path(joint_reaction_file) if joint_reaction_file is not None
                         else out / f"{st.name}_{analysis_name(el, kind)}_ReactionLoads.sto"])
        elif kind == "StaticOptimization":
            plan.append([out / f"{st.name}_{analysis_name(el, kind)}_{k}.sto"
                         for k in ("activation", "force")])
        elif kind == "ForceReporter":
            plan.append([out / f"{st.name}_{analysis_name(el, kind)}_forces.sto"])
        elif kind == "Actuation":
            plan.append([out / f"{st.name}_{analysis_name(el, kind)}_{k}.sto" for k in _ACTUATION_FILES])
        elif kind == "StatesReporter":
            plan.append([out / f"{st.name}_{analysis_name(el, kind)}_states.sto"])
        elif kind in KINEMATICS_ANALYSES:
            plan.append([(out / f, k) for f, k in _kinematics_files(st.name, kind, el, res)])
        else:
            a = analysis_name(el, kind)
            plan.append(_path_table_files(res[1], out, st.name, a)
                        + [out / f"{st.name}_{a}_{k}.sto" for k in res[2]])
    for f in (f for fs in plan for f in fs):     # every output checked before anything is created
        check_output(f[0] if isinstance(f, tuple) else f)
    expect_values(sum(_array_values(res) for *_, res in results))
    written = []
    with output_group():
        for (kind, el, n, res), files in zip(results, plan):
            if kind == "JointReaction":
                written.append(write_joint_reactions(res, files[0],
                                                     setup_step_rows(st, motion, res.time, n)))
            elif kind == "StaticOptimization":
                from .static_optimization_tool import write_static_optimization
                written += write_static_optimization(res, out, st.name,
                                                     setup_step_rows(st, motion, res.time, n),
                                                     analysis=analysis_name(el, kind))
            elif kind in ("ForceReporter", "Actuation", "StatesReporter"):   # a table per file
                r = setup_step_rows(st, motion, res.time, n)
                if kind == "StatesReporter":
                    tables = [res if r is None else Table(
                        name=res.name, time=res.time[r], labels=res.labels, data=res.data[r],
                        in_degrees=False, comments=res.comments)]
                else:
                    res = res if r is None else res.rows(r)
                    tables = ([res.to_table()] if kind == "ForceReporter"
                              else [res.to_table(k) for k in _ACTUATION_FILES])
                for f, table in zip(files, tables):
                    make_output_folder(f)
                    write_sto(f, table)
                    written.append(f)
            elif kind in KINEMATICS_ANALYSES:
                res = res.rows(setup_step_rows(st, motion, res.time, n)) if n > 1 else res
                written += _write_kinematics(res, files)
            else:
                pa, coords, extra = res
                rows = setup_step_rows(st, motion, pa.time, n) if n > 1 else slice(None)
                pa = pa.rows(rows) if n > 1 else pa
                still = _still_coordinates(pa)
                written += _write_path_tables(pa, coords, out, st.name, analysis_name(el, kind))
                for (k, v), f in zip(extra.items(), files[-len(extra):] if extra else []):
                    write_sto(f, Table(name=k, time=np.array(pa.time, float), labels=list(pa.names),
                                       data=np.asarray(v, float)[rows], in_degrees=False,
                                       comments=list(_MUSCLE_ANALYSIS_DESCRIPTION)),
                              allow_nan=k.startswith("Moment_") and k[7:] in still)
                    written.append(f)
    return written
