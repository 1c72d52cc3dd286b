"""Issue 11 finding 14: inverse dynamics and joint reactions run long trials in chunks of
frames (bounded memory); the numbers do not depend on the chunking. Peak memory on a
100,000-frame trial is measured in benchmarks/bench_memory.py."""
from __future__ import annotations

import numpy as np
import pytest

from arthron.io.osim import read_osim
from arthron.io.setup import read_external_loads
from arthron.io.sto import read_sto
from arthron.solvers import inverse_dynamics as id_mod
from arthron.solvers.inverse_dynamics import run_inverse_dynamics
from arthron.solvers.reactions import joint_reactions
from conftest import ARM26, GAIT_PIPE, GAIT_REF_MODEL, REF, needs_data

GAIT_IK = GAIT_PIPE / "OutputReference" / "subject01_walk1_ik.mot"
GAIT_GRF = GAIT_PIPE / "subject01_walk1_grf.xml"
ARM_IK = REF / "task1_arm26" / "IK" / "arm26_InverseKinematics.mot"
ARM_SO = REF / "task1_arm26" / "SO_phys" / "arm26_StaticOptimization_force.sto"


@needs_data
def test_chunked_inverse_dynamics_equals_one_pass(monkeypatch):
    """Gait2354 walk with GRF, 6 Hz: chunks of 7 frames (the last one shorter) give the
    generalized forces of one pass over all frames to rounding."""
    model, mot, ext = read_osim(GAIT_REF_MODEL), read_sto(GAIT_IK), read_external_loads(GAIT_GRF)
    one = run_inverse_dynamics(model, mot, external_loads=ext, lowpass_hz=6.0)
    monkeypatch.setattr(id_mod, "FRAME_CHUNK", 7)
    assert len(id_mod.frame_chunks(len(one.time))) > 5
    chunked = run_inverse_dynamics(model, mot, external_loads=ext, lowpass_hz=6.0)
    np.testing.assert_array_equal(chunked.time, one.time)
    assert np.abs(chunked.generalized_forces - one.generalized_forces).max() <= \
        1e-12 * np.abs(one.generalized_forces).max()


@needs_data
@pytest.mark.parametrize("accelerations", ["motion", "forward"])
def test_chunked_joint_reactions_equal_one_pass(monkeypatch, accelerations):
    """arm26 with the static-optimization muscle forces along their paths (and Gait2354 with
    GRF): reactions, residuals and accelerations in chunks of 11 frames equal one pass."""
    cases = [(read_osim(ARM26), read_sto(ARM_IK), read_sto(ARM_SO), None),
             (read_osim(GAIT_REF_MODEL), read_sto(GAIT_IK), None, read_external_loads(GAIT_GRF))]
    for model, mot, forces, ext in cases:
        kw = dict(forces_table=forces, external_loads=ext, lowpass_hz=6.0, accelerations=accelerations)
        one = joint_reactions(model, mot, **kw)
        monkeypatch.setattr(id_mod, "FRAME_CHUNK", 11)
        chunked = joint_reactions(model, mot, **kw)
        monkeypatch.undo()
        assert one.loads is not None and chunked.loads is None
        assert chunked.labels == one.labels
        assert np.abs(chunked.data - one.data).max() <= 1e-12 * np.abs(one.data).max()
        np.testing.assert_allclose(chunked.qdd, one.qdd, rtol=0, atol=1e-9)
        if forces is not None:
            assert np.abs(chunked.residual - one.residual).max() <= 1e-9
