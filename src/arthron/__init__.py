"""arthron: musculoskeletal biomechanics that speaks OpenSim's file formats.

The curated public API; everything else is reachable in its module (``arthron.io``,
``arthron.models``, ``arthron.geometry``, ``arthron.solvers``).

The names below are imported on first use (PEP 562 module ``__getattr__``), so that
``import arthron`` and the ``arthron`` command load only the modules a task needs (the
inverse-dynamics command never imports inverse kinematics or joint reactions).
"""
from .errors import (ArthronError, ArthronWarning, DataFileError, ModelFileError, SolverError,
                     UnsupportedFeature)

__version__ = "0.1.0"

#: public name -> module that defines it (imported on first access)
_LAZY = {
    "read_osim": ".io.osim", "write_osim": ".io.osim",
    "Table": ".tables", "MarkerTrial": ".tables",
    "read_sto": ".io.sto", "write_sto": ".io.sto",
    "read_trc": ".io.trc", "write_trc": ".io.trc",
    "compile_model": ".multibody.kinematics", "forward_kinematics": ".multibody.kinematics",
    "marker_positions": ".multibody.kinematics", "velocity_map": ".multibody.kinematics",
    "Model": ".models.model",
    "run_inverse_dynamics": ".solvers.inverse_dynamics",
    "run_ik": ".tools.ik_tool",
    "joint_reactions": ".solvers.reactions",
}

__all__ = [
    "ArthronError", "ArthronWarning", "DataFileError", "ModelFileError", "SolverError",
    "UnsupportedFeature", "read_osim", "write_osim", "Table", "read_sto", "write_sto",
    "MarkerTrial", "read_trc", "write_trc", "compile_model", "forward_kinematics",
    "marker_positions", "velocity_map", "Model", "run_inverse_dynamics", "run_ik",
    "joint_reactions",
]


def __getattr__(name):
    mod = _LAZY.get(name)
    if mod is None:
        raise AttributeError(f"module 'arthron' has no attribute {name!r}")
    from importlib import import_module
    value = getattr(import_module(mod, __name__), name)
    globals()[name] = value
    return value


def __dir__():
    return sorted(set(globals()) | set(__all__))
