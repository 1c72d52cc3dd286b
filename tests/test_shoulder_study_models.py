"""The abduction study on a model that is not the built-in one: OpenSim's Thoracoscapular
shoulder model (scapula on a ribcage ellipsoid through its ScapulothoracicJoint, clavicle tied to
the acromion by a PointConstraint, 33 Millard muscles), named through ``--model``, ``--cone``
and ``--landmarks`` (issue: "the same study runs on any model that names its glenohumeral joint
and cone").

What is checked: the motion follows the de Groot & Brand (2001) humerus targets with the AC
constraint held; the load sharing meets the equations of motion with the constraint's
multipliers free in sign (a bilateral joint, unlike the ribcage contacts of the built-in model);
the reaction stays in the cone; the parameter study's directions once the model's own subject is
given; and the one-line errors."""
from __future__ import annotations

import numpy as np
import pytest

from conftest import TSM, needs_data
from arthron.cli import main
from arthron.multibody.constraints import compile_constraints
from arthron.multibody.kinematics import compile_model
from arthron.solvers.shoulder_study import StudySpec, Subject, run_abduction

LANDMARKS = "SC=sc,AC=ac,TS=ts,AI=ai,AA=aa,GH=gu,EL=EpL,EM=EpM"
RC = ("Infraspinatus_I,Infraspinatus_S,TeresMinor,Subscapularis_S,Subscapularis_M,Subscapularis_I,"
      "Supraspinatus_P,Supraspinatus_A")
# the cone's axis: the mean direction of the unconstrained reaction in the scapula frame (the model
# has no glenoid-centre landmark); half-angles of the Delft glenoid rim (38.55° x 44.37°)
CONE = "GlenoHumeral:scapula:0.145,-0.553,0.759:38.55:44.37"
NARROW = "GlenoHumeral:scapula:0.145,-0.553,0.759:15:15"
EL = np.array([20.0, 45.0, 70.0, 90.0, 110.0, 130.0])

pytestmark = needs_data


def _spec(cone=CONE, subject=None):
    from arthron.tools.shoulder_study_tool import study_spec_of_model
    return study_spec_of_model(TSM, cone=cone, landmarks=LANDMARKS, rotator_cuff=RC, model_subject=subject)


def test_study_on_the_thoracoscapular_model():
    model, spec = _spec(NARROW)
    assert spec.scale is False and spec.builtin is False
    # the thorax (joint to ground) is not solved; its 3 rotations and 3 locked translations stay
    assert spec.coordinates == ("clav_prot", "clav_elev", "scapula_abduction", "scapula_elevation",
                                "scapula_upward_rot", "scapula_winging", "plane_elv", "shoulder_elv",
                                "axial_rot")
    res = run_abduction(model, spec, elevation_deg=EL[:-1])      # (at 130° a 15° cone cannot be met)
    k, f = res.kinematics, res.forces
    tree = compile_model(res.model)
    assert np.abs(compile_constraints(res.model, tree).residuals(k.q)).max() < 1e-9
    assert k.target_error_deg[:, 2].max() < 1e-3          # the humerus where the rhythm puts it
    assert f.feasible.all() and f.residual.max() < 1e-6      # equations of motion met
    assert len(f.multiplier_names) == 3 and all(n.endswith(("_x", "_y", "_z")) for n in f.multiplier_names)
    assert (f.multipliers < -1e-6).any()                     # bilateral: multipliers of both signs
    assert f.cone_ratio.max() <= 1 + 1e-6 and f.cone_active.any()     # the narrow cone binds
    assert np.all(f.cone_angle_deg <= 15.0 + 1e-4)
    assert np.isnan(res.summary["percent_bw_90"])              # no body mass given: no % body weight
    # the reaction is the force on the humerus: Newton on the arm with the muscles' pulls is the
    # solver's own check (test_shoulder_study.py); here its size is plausible for a ~3.6 kg arm
    assert 100 < res.summary[90.0] < 1500


def test_cli_study_on_a_model_and_its_parameter_study(tmp_path, capsys):
    out = tmp_path / "tsm"
    argv = ["study", "--model", str(TSM), "--cone", CONE, "--landmarks", LANDMARKS, "--rotator-cuff", RC,
            "--step", "22"]
    assert main(argv + ["-o", str(out)]) == 0
    text = capsys.readouterr().out
    assert "Sarshari et al. 2021 (generic male)" not in text and "body weight" not in text
    name = "ThoracoscapularShoulderModel"
    files = {p.name for p in out.iterdir()}
    assert {f"{name}.osim", f"{name}_abduction.mot", f"{name}_abduction_JointReaction_ReactionLoads.sto",
            f"{name}_abduction_StaticOptimization_force.sto", f"{name}_gh_reaction.png"} <= files
    # the parameter study needs the subject the model stands for
    assert main(argv + ["--parameter-study", "-o", str(tmp_path / "no")]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "--model-subject" in err[0] and not (tmp_path / "no").exists()
    ps = tmp_path / "ps"
    assert main(argv + ["--model-subject", "m,1.80,75", "--parameter-study", "-o", str(ps)]) == 0
    import csv
    rows = {r[0]: r for r in list(csv.reader((ps / "parameter_study.csv").read_text().splitlines()))[1:]}
    peak = {k: float(v[6]) for k, v in rows.items()}
    bw = {k: float(v[8]) for k, v in rows.items()}
    assert peak["female"] < peak["generic"] < peak["mass_100"] and peak["mass_60"] < peak["generic"]
    # masses scale the arm and the muscles together: the same % body weight for the three masses
    assert max(bw["mass_60"], bw["mass_100"], bw["generic"]) - min(bw["mass_60"], bw["mass_100"], bw["generic"]) < 1.0
    assert rows["generic"][-1] == "" and rows["generic"][-5] == ""     # no paper figures beside


def test_model_study_one_line_errors(tmp_path, capsys):
    cases = [
        (["--model", str(TSM), "--landmarks", LANDMARKS], "--cone"),
        (["--model", str(TSM), "--cone", CONE], "lacks the landmark marker(s)"),
        (["--model", str(TSM), "--cone", "Nope:scapula:1,0,0:20:30", "--landmarks", LANDMARKS], "'Nope'"),
        (["--model", str(TSM), "--cone", CONE, "--landmarks", "GH"], "ROLE=MARKER"),
        (["--model", str(TSM), "--cone", CONE, "--landmarks", LANDMARKS, "--rotator-cuff", "Foo"], "Foo"),
        (["--model", str(TSM), "--cone", CONE, "--landmarks", LANDMARKS, "--model-subject", "m,1.8"],
         "--model-subject"),
        (["--cone", CONE], "--model"),
    ]
    for extra, word in cases:
        assert main(["study", *extra, "-o", str(tmp_path / "bad")]) == 2, extra
        err = capsys.readouterr().err.strip().splitlines()
        assert len(err) == 1 and err[0].startswith("arthron: error:") and word in err[0], (extra, err)
        assert not (tmp_path / "bad").exists()


def test_scaling_a_model_used_as_it_is_is_refused():
    model, spec = _spec()
    with pytest.raises(Exception, match="give the subject"):
        run_abduction(model, spec, Subject(mass=60.0), elevation_deg=EL)
    assert isinstance(spec, StudySpec)
