"""OpenSim's AnalyzeTool: setups with JointReaction (and MuscleAnalysis) analyses run on
arthron's solvers."""
from __future__ import annotations

import warnings

import numpy as np

from ..errors import ArthronWarning, DataFileError, SolverError, UnsupportedFeature
from ..multibody.kinematics import compile_model
from ..solvers.actuators import _xml_bool, _xml_text
from ..solvers.reactions import JointReactionResult, joint_reactions


def _split_list(text):
    return (text or "").split()


def read_force_set_file(path) -> list:
    """The actuators of an OpenSim ``ForceSet`` file (``force_set_files`` of a tool setup).

    Returns a list of :class:`arthron.models.model.Force` (type = element tag, ``properties``
    ``coordinate``, ``optimal_force``, ``appliesForce``; the element kept in ``raw`` for
    Point/TorqueActuator properties). ``<defaults>`` are ignored.

    Raises
    ------
    DataFileError for a missing or malformed file or one that is not a ForceSet.
    """
    from ..io.setup import parse_xml
    from ..models.model import Force
    root = parse_xml(path)
    fs = root if root.tag == "ForceSet" else root.find("ForceSet")
    if fs is None:
        raise DataFileError("not a <ForceSet> file", path)
    objs = fs.find("objects")
    out = []
    for el in ([] if objs is None else list(objs)):
        if not isinstance(el.tag, str):
            continue
        on = _xml_bool(el, "appliesForce", True) and not _xml_bool(el, "isDisabled", False)
        props = {"appliesForce": on}
        if el.find("coordinate") is not None:
            props["coordinate"] = _xml_text(el, "coordinate")
        if el.find("optimal_force") is not None:
            props["optimal_force"] = float(_xml_text(el, "optimal_force", "1"))
        out.append(Force(name=el.get("name", ""), type=el.tag, properties=props, raw=el))
    return out


def joint_reactions_from_setup(setup_path, placeholders=None, accelerations="forward") -> JointReactionResult:
    """Run an OpenSim AnalyzeTool setup whose AnalysisSet holds a JointReaction analysis.

    Reads ``model_file``, ``coordinates_file`` (``states_file`` is not supported),
    ``lowpass_cutoff_frequency_for_coordinates``, ``initial_time``/``final_time``,
    ``external_loads_file`` and the JointReaction's ``forces_file``, ``joint_names``,
    ``apply_on_bodies``, ``express_in_frame``, and the actuators of ``force_set_files``
    (appended, or replacing the model's forces when ``replace_force_set``); relative names are
    resolved against the setup's folder (as AnalyzeTool does). ``accelerations="forward"``
    reproduces OpenSim (see :func:`joint_reactions`). ``placeholders``: literal text
    substitutions before parsing (:func:`arthron.io.setup.parse_xml`).

    Returns
    -------
    JointReactionResult, columns in the order and with the labels OpenSim writes.

    Raises
    ------
    DataFileError (not an AnalyzeTool, no JointReaction, missing files), SolverError,
    UnsupportedFeature (states_file).
    """
    from ..io.osim import read_osim
    from ..io.setup import read_external_loads, read_tool_setup
    from ..io.sto import read_sto
    s = read_tool_setup(setup_path, placeholders)
    if s.tool != "AnalyzeTool":
        raise DataFileError(f"expected an <AnalyzeTool> setup, found <{s.tool}>", s.path)
    jr = None
    for el in s.element.iter("JointReaction"):
        if _xml_text(el, "on", "true").lower() in ("true", "1"):
            jr = el
            break
    if jr is None:
        raise DataFileError("the AnalyzeTool setup has no enabled JointReaction analysis", s.path)
    if s.resolve(s.get("states_file")):
        raise UnsupportedFeature("AnalyzeTool states_file (use coordinates_file)", s.path)
    mpath = s.resolve(s.get("model_file"))
    cpath = s.resolve(s.get("coordinates_file"))
    if mpath is None or cpath is None:
        raise DataFileError("the setup needs model_file and coordinates_file", s.path)
    model = read_osim(mpath)
    files = _split_list(s.get("force_set_files"))
    if files:
        if _xml_text(s.element, "replace_force_set", "false").lower() in ("true", "1"):
            model.forces = {}
        for name in files:
            for f in read_force_set_file(s.resolve(name)):
                model.forces[f.name] = f
    motion = read_sto(cpath)
    fpath = s.resolve(_xml_text(jr, "forces_file"))
    forces = read_sto(fpath) if fpath is not None else None
    epath = s.resolve(s.get("external_loads_file"))
    ext = read_external_loads(epath) if epath is not None else None
    lp = float(s.get("lowpass_cutoff_frequency_for_coordinates") or -1)
    t0 = float(s.get("initial_time") or -np.inf)
    t1 = float(s.get("final_time") or np.inf)
    names = _split_list(_xml_text(jr, "joint_names")) or ["ALL"]
    on = _split_list(_xml_text(jr, "apply_on_bodies")) or ["child"]
    frames = _split_list(_xml_text(jr, "express_in_frame")) or ["ground"]
    tree = compile_model(model)
    if names[0].upper() == "ALL":
        names = list(model.joints)
    else:
        bad = [n for n in names if n not in model.joints]
        if bad:
            raise SolverError(f"JointReaction joint_names: model '{model.name}' has no joint(s) "
                              f"{', '.join(bad)}")
    n = len(names)
    # OpenSim: lists of the wrong length fall back to child / ground (with a warning)
    if len(on) not in (1, n):
        warnings.warn("apply_on_bodies length differs from joint_names: all on child (as OpenSim)",
                      ArthronWarning, stacklevel=2)
        on = ["child"]
    if len(frames) not in (1, n):
        warnings.warn("express_in_frame length differs from joint_names: all in ground (as OpenSim)",
                      ArthronWarning, stacklevel=2)
        frames = ["ground"]
    return joint_reactions(model, motion, forces, ext, names, on, frames, lp, (t0, t1),
                           accelerations=accelerations, tree=tree)
