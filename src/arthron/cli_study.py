"""The ``arthron study`` and ``arthron demo`` commands (part of the command line, :mod:`arthron.cli`):
scapular-plane abduction on the built-in shoulder–elbow model or a model given with
``--model``, after Sarshari et al. (2021), and the former demo on the embedded arm (``demo
--arm``). Their parsers (:func:`_add_study_parsers`) and handlers; the work is done by
:mod:`arthron.tools.shoulder_study_tool` and :mod:`arthron.tools.demo_tool`.
"""
from __future__ import annotations

from pathlib import Path


def cmd_demo(a):
    out = Path(a.output) if a.output else Path.cwd() / "arthron-demo"
    from .io.files import check_output_dir
    check_output_dir(out)        # a file as -o: one line naming it, before anything is printed or solved
    if a.arm:
        given = [k for k in ("gender", "height", "mass", "shoulder_width", "inclination", "version",
                             "humeral_rotation", "elbow_flexion", "step") if getattr(a, k) is not None]
        given += ["rc_pcsa_factor"] if a.rc_pcsa_factor != 1.0 else []
        if given:           # the arm demo has no subject: they would be ignored
            from .errors import OptionError
            opts = ", ".join("--" + k.replace("_", "-") for k in given)
            raise OptionError(f"{opts}: subject options of the shoulder abduction, not of demo --arm")
        from .tools.demo_tool import run_demo
        s = run_demo(out)
        print(f"arthron demo: model {s['model']}, {s['frames']} frames of elbow flexion")
        print(f"  peak elbow flexion moment {s['peak_elbow_moment']:.3f} N·m")
        lo, hi = s["elbow_reaction_range"]
        print(f"  elbow reaction on the forearm (along it): {lo:.2f} .. {hi:.2f} N")
        print(f"outputs written to {out}")
        for p in s["files"]:
            print(f"  {p.name}")
        return 0
    return cmd_study(a, demo=True)


def cmd_study(a, demo: bool = False):
    """``arthron study`` / ``arthron demo``: scapular-plane abduction on the built-in
    shoulder–elbow model (tools.shoulder_study_tool)."""
    import time
    from .solvers.shoulder_study import Subject
    from .tools.shoulder_study_tool import arm_pose_spec, format_table, run_demo, run_study
    t0 = time.perf_counter()
    out = Path(a.output) if a.output else Path.cwd() / ("arthron-demo" if demo else "arthron-study")
    from .io.files import check_output_dir
    check_output_dir(out)
    model = spec = None
    if not demo and a.model:
        from .tools.shoulder_study_tool import study_spec_of_model
        model, spec = study_spec_of_model(a.model, cone=a.cone, landmarks=a.landmarks,
                                          coordinates=a.coordinates, rotator_cuff=a.rotator_cuff,
                                          specific_tension=a.specific_tension,
                                          model_subject=a.model_subject)
    elif not demo and any(v is not None for v in (a.cone, a.landmarks, a.coordinates, a.rotator_cuff,
                                                  a.specific_tension, a.model_subject)):
        from .errors import OptionError
        raise OptionError("--cone, --landmarks, --coordinates, --rotator-cuff, --specific-tension and "
                          "--model-subject describe a model given with --model")
    other_model = model is not None
    model, spec = arm_pose_spec(model, spec, humeral_rotation=getattr(a, "humeral_rotation", None),
                                elbow_flexion=getattr(a, "elbow_flexion", None))
    g = spec.generic if spec is not None else Subject()
    pick = (lambda v, d: d if v is None else v)
    subj = Subject(gender=pick(a.gender, g.gender), height=pick(a.height, g.height), mass=pick(a.mass, g.mass),
                   shoulder_width=a.shoulder_width, inclination_deg=a.inclination, version_deg=a.version,
                   rc_pcsa_factor=a.rc_pcsa_factor).check()
    el = None
    if a.step is not None:
        if not (0.1 <= a.step <= 30.0):
            from .errors import OptionError
            raise OptionError(f"--step must lie in [0.1, 30] degrees, got {a.step!r}")
        import numpy as np
        el = np.arange(20.0, 150.0 + 1e-9, a.step)
    say = (lambda m: print(f"  {m} ...", flush=True))
    print(f"arthron {'demo' if demo else 'study'}: scapular-plane abduction (de Groot & Brand 2001 rhythm), "
          "load sharing with the glenohumeral stability cone (Sarshari et al. 2021)", flush=True)
    if demo:
        r = run_demo(out, subj, progress=say, elevation_deg=el, model=model, spec=spec)
    else:
        r = run_study(out, subj, parameter_study=a.parameter_study, progress=say, elevation_deg=el,
                      model=model, spec=spec, picture=other_model)
    header, rows = r["table"]
    if a.parameter_study if not demo else False:
        print(format_table(header, rows))
    else:
        key, (_, res) = next(iter(r["results"].items()))
        s = res.summary
        f = res.forces
        bw = "" if s["percent_bw_90"] != s["percent_bw_90"] else f" ({s['percent_bw_90']:.0f} % body weight)"
        print(f"  glenohumeral reaction ({key}): {s[20.0]:.0f} N at 20°, {s[60.0]:.0f} N at 60°, "
              f"{s[90.0]:.0f} N at 90°{bw}, peak {s['peak']:.0f} N "
              f"at {s['peak_deg']:.0f}°; cone active on {int(f.cone_active.sum())} of {len(f.time)} frames")
        if spec is None or spec.builtin:
            print("  Sarshari et al. 2021 (generic male): 276 N at 20°, 422 N at 60°, peak 585 N at 122° "
                  "(69.8 % body weight)")
    for p in r["files"]:
        print(f"  wrote {p}")
    for n in r.get("notes", ()):
        print(f"  note: {n}")
    print(f"outputs written to {out} ({time.perf_counter() - t0:.1f} s)")
    return 0


def _add_study_parsers(sub):
    """``study`` and ``demo``: the subject options shared by both."""
    cite = ("Sarshari, Boulanaache, Terrier, Farron, Mullhaupt & Pioletti (2021), 'A Matlab toolbox for "
            "scaled-generic modeling of shoulder and elbow', Sci Rep 11:20806")

    def subject_options(s, demo=False):
        other = "" if demo else ", or --model-subject's"      # demo has no --model
        s.add_argument("--gender", default=None, help=f"m or f (default m{other})")
        s.add_argument("--height", type=float, default=None,
                       help=f"m (default 1.86, the generic subject{other})")
        s.add_argument("--mass", "--weight", dest="mass", type=float, default=None,
                       help=f"body mass, kg (default 85.5{other})")
        s.add_argument("--shoulder-width", type=float, default=None,
                       help="AA to AA, m (default: scaled with height)")
        s.add_argument("--inclination", type=float, default=None,
                       help="glenoid inclination, degrees (generic 7; moves the stability cone, Eqs. 15-16)")
        s.add_argument("--version", type=float, default=None,
                       help="glenoid version, degrees (generic 0; + tilts the stability cone posteriorly, Eq. 16)")
        s.add_argument("--rc-pcsa-factor", type=float, default=1.0,
                       help="factor on the rotator cuff's PCSAs (0.5: the -50 %% of the parameter study)")
        s.add_argument("--humeral-rotation", type=float, default=None,
                       help="external rotation of the humerus about its long axis during the abduction, "
                            "degrees (default 0: Codman's no axial rotation; the papers give none)")
        s.add_argument("--elbow-flexion", type=float, default=None,
                       help="elbow flexion held during the abduction, degrees (default 0: extended; the "
                            "paper does not say)")
        s.add_argument("--step", type=float, default=None,
                       help="elevation step, degrees (default 1: 131 frames from 20 to 150)")
        s.add_argument("-o", "--output", help="output folder")
    s = sub.add_parser("study", help="glenohumeral joint reaction during scapular-plane abduction on the built-in "
                                     "shoulder-elbow model; --parameter-study: Fig. 5 of Sarshari et al. 2021",
                       description="Scapular-plane abduction generated from the shoulder rhythm of de Groot & "
                                   "Brand (2001), Clin Biomech 16:735-743, on the built-in shoulder-elbow model "
                                   "(structure of " + cite + "; data from DAS4, Chadwick et al. 2014), scaled "
                                   "to the subject; load sharing min sum (f/PCSA)^2 with the ribcage constraints' "
                                   "multipliers and the glenohumeral stability cone; the glenohumeral reaction "
                                   "(force rows of the E-matrix reaction, by Newton on the arm).")
    subject_options(s)
    s.add_argument("--model", help="run the study on this .osim instead of the built-in model; needs --cone "
                                   "and the landmarks of the shoulder rhythm as markers (--landmarks)")
    s.add_argument("--cone", help="with --model: stability cone JOINT:BODY:AX,AY,AZ:AP_DEG:SI_DEG (axis in BODY's "
                                  "frame, from the glenoid into the joint; half-angles anterior-posterior and "
                                  "superior-inferior)")
    s.add_argument("--landmarks", help="with --model: ROLE=MARKER,... for the roles SC AC TS AI AA GH EL EM the "
                                       "model names otherwise (e.g. GH=gu,EL=EpL,EM=EpM)")
    s.add_argument("--coordinates", help="with --model: the solved coordinates, comma-separated (default every "
                                         "unlocked coordinate of the joints not attached to ground)")
    s.add_argument("--rotator-cuff", help="with --model: the rotator-cuff muscles, comma-separated (for "
                                          "--rc-pcsa-factor and the parameter study)")
    s.add_argument("--specific-tension", type=float, default=None,
                   help="with --model: N/m^2, PCSA = max isometric force / specific tension (default 0.6e6)")
    s.add_argument("--model-subject", help="with --model: GENDER,HEIGHT_M,MASS_KG of the subject the model stands "
                                           "for; without it the model is used as it is (no scaling, no parameter "
                                           "study, no %% body weight)")
    s.add_argument("--parameter-study", action="store_true",
                   help="also run the variants of Sarshari et al. 2021 Fig. 5 (female; 60 and 100 kg; 1.60 and "
                        "1.95 m; glenoid inclination -7 and 15 degrees; rotator-cuff PCSA -50 %%): "
                        "parameter_study.csv and .png")
    s.set_defaults(func=cmd_study)
    s = sub.add_parser("demo", help="the main job on the built-in shoulder-elbow model: scapular-plane abduction, "
                                    "muscle forces and the glenohumeral reaction (Sarshari et al. 2021)",
                       description="Runs `arthron study` for one subject (default the generic male of " + cite
                                   + ") and draws the model; --arm: the former demo on the embedded arm.")
    subject_options(s, demo=True)
    s.add_argument("--arm", action="store_true", help="the former demo: elbow flexion of the embedded two-segment arm")
    s.set_defaults(func=cmd_demo, parameter_study=False)
