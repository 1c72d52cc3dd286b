"""arthron: musculoskeletal biomechanics that speaks OpenSim's file formats.

The curated public API; everything else is reachable in its module (``arthron.io``,
``arthron.models``, ``arthron.geometry``, ``arthron.solvers``).
"""
from .errors import (ArthronError, ArthronWarning, DataFileError, ModelFileError, SolverError,
                     UnsupportedFeature)
from .io.osim import read_osim, write_osim
from .tables import Table
from .io.sto import read_sto, write_sto
from .io.trc import read_trc, write_trc
from .tables import MarkerTrial
from .multibody.kinematics import compile_model, forward_kinematics, marker_positions, velocity_map
from .models.model import Model
from .solvers.inverse_dynamics import run_inverse_dynamics
from .tools.ik_tool import run_ik
from .solvers.reactions import joint_reactions

__version__ = "0.1.0"

__all__ = [
    "ArthronError", "ArthronWarning", "DataFileError", "ModelFileError", "SolverError",
    "UnsupportedFeature", "read_osim", "write_osim", "Table", "read_sto", "write_sto",
    "MarkerTrial", "read_trc", "write_trc", "compile_model", "forward_kinematics",
    "marker_positions", "velocity_map", "Model", "run_inverse_dynamics", "run_ik",
    "joint_reactions",
]
