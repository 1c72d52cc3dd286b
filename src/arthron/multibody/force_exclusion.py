"""Which forces OpenSim's ``forces_to_exclude`` leaves out (the InverseDynamicsTool's and
``arthron id --exclude``), and the actuator classes that apply no force without controls."""
from __future__ import annotations

from ..models.model import Model

__all__ = ["ZERO_WITHOUT_CONTROLS", "forces_to_exclude"]

ZERO_WITHOUT_CONTROLS = ("CoordinateActuator", "PathActuator", "PointActuator", "TorqueActuator",
                         "ActivationCoordinateActuator", "McKibbenActuator")


def forces_to_exclude(model: Model, exclude=()) -> tuple[set, list, list]:
    """The forces OpenSim's ``forces_to_exclude`` leaves out, as OpenSim 4.6's
    ``DynamicsTool::disableModelForces`` reads the list: the keywords ``All``, ``Actuators``
    (muscles and the other actuators) and ``Muscles`` in any letter case; else the name of a
    ForceSet group (:attr:`Model.force_groups`: all its members) or of a force.

    Two readings of arthron's differ from OpenSim's, each reported so callers can warn: when
    the model has ForceSet groups, OpenSim looks a name up among the groups only, so a force's
    own name excludes nothing there (arthron excludes the force); and a force class name
    (``Thelen2003Muscle``) excludes its forces in arthron, nothing in OpenSim.

    Returns (names of the excluded forces, the entries that match nothing, the entries that
    OpenSim 4.6 would not exclude on this model)."""
    out, unmatched, differs = set(), [], []
    for n in ((exclude,) if isinstance(exclude, str) else exclude or ()):   # one name is not its letters
        key = str(n).upper()
        if key == "ALL":
            return set(model.forces), unmatched, differs
        if key in ("ACTUATORS", "MUSCLES"):
            out |= {f.name for f in model.forces.values()
                    if f.is_muscle or (key == "ACTUATORS" and f.type in ZERO_WITHOUT_CONTROLS)}
        elif n in model.force_groups:
            out |= set(model.force_groups[n]) & set(model.forces)
        elif n in model.forces:
            out.add(n)
            if model.force_groups:
                differs.append(n)
        else:
            of_class = {f.name for f in model.forces.values() if f.type == n}
            out |= of_class
            (differs if of_class else unmatched).append(n)
    return out, unmatched, differs
