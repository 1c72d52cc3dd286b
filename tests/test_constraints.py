"""Assembly of constrained models against OpenSim's Model::assemble."""
from __future__ import annotations

import numpy as np

import oracle
from conftest import TSM, needs_data, needs_opensim
from arthron.io.osim import read_osim
from arthron.models.constraints import assemble, compile_constraints
from arthron.models.kinematics import compile_model


@needs_data
@needs_opensim
def test_thoracoscapular_ac_point_constraint_assembles_like_opensim():
    model = read_osim(TSM)
    tree = compile_model(model)
    m, s = oracle.load(TSM)
    cs = m.getCoordinateSet()
    names = [cs.get(i).getName() for i in range(cs.getSize())]
    for i, n in enumerate(names):
        cs.get(i).setValue(s, 0.01 * (i + 1), False)
    q_set = np.array([cs.get(i).getValue(s) for i in range(cs.getSize())])  # locked ones keep default
    m.assemble(s)
    q_os = np.array([cs.get(i).getValue(s) for i in range(cs.getSize())])
    order = [names.index(n) for n in tree.coordinate_names]
    q = assemble(model, tree, q_set[order][None])[0]
    assert np.abs(q - q_os[order]).max() < 1e-6          # Simbody's assembly accuracy is 1e-9 relative
    assert np.abs(q - q_set[order]).max() > 1e-2          # the constraint really moved the shoulder girdle
    c = compile_constraints(model, tree)
    assert c.size == 3 and np.abs(c.residuals(q[None])).max() < 1e-12
