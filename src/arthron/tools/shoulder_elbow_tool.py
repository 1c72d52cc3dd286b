"""Export of the built-in shoulder–elbow model (:mod:`arthron.models.shoulder_elbow`) as an
OpenSim model folder: the ``.osim`` and, in ``Geometry/`` beside it (where OpenSim looks), the
display meshes it references."""
from __future__ import annotations

from pathlib import Path

from ..io.files import atomic_write, output_group
from ..io.osim import write_osim
from ..models.model import Model
from ..models.shoulder_elbow import MESH_DIR

__all__ = ["export_shoulder_elbow"]


def export_shoulder_elbow(model: Model, path) -> list:
    """Write ``model`` (built by :func:`~arthron.models.shoulder_elbow.build_shoulder_elbow_model`,
    scaled or not) to ``path`` (``.osim``) and copy the shipped meshes it references into
    ``Geometry/`` beside it, all files whole or none (one output group).

    OpenSim 4.6 loads the file; it has no point-on-ellipsoid constraint, so the ribcage
    constraints are written where OpenSim ignores them (an ArthronWarning says so; see
    :mod:`arthron.io.osim`), and the ellipsoids show as the thorax's inactive wrap ellipsoids.

    Returns
    -------
    list of Path written (the model first). Raises DataFileError naming a file that cannot be
    written.
    """
    path = Path(path)
    meshes = sorted({g.mesh_file for b in model.bodies.values() for g in b.geometry
                     if g.mesh_file and (MESH_DIR / g.mesh_file).is_file()})
    written = [path]
    with output_group():
        write_osim(path, model)
        for name in meshes:
            dst = path.parent / "Geometry" / name
            atomic_write(dst, (MESH_DIR / name).read_bytes())
            written.append(dst)
    return written
