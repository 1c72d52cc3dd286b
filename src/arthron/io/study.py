"""Study files (``arthron batch STUDY.toml``): subjects, their trials and the pipeline steps.

A study file is TOML (``tomllib``, the standard library) or YAML (``.yaml``/``.yml``, needs
PyYAML: extra ``yaml``); both hold the same tree::

    [study]
    name = "gait2354"                  # optional, default: the file's stem
    output = "results"                 # folder, relative to the study file (default <stem>_results)
    steps = ["scale", "ik", "id", "so", "jr"]    # a prefix of this order

    [defaults]                         # trial options every trial inherits (a trial may override)
    lowpass_hz = 6

    [[subjects]]
    name = "s01"
    scale_setup = "subject01_Setup_Scale.xml"   # ScaleTool (marker-based); or:
    # model = "gait2354_simbody.osim"; mass = 60; height = 1.65; gender = "f"   (anthropometric)

      [[subjects.trials]]
      name = "walk1"
      markers = "subject01_walk1.trc"            # or a .c3d
      external_loads = "subject01_walk1_grf.xml"
      time_range = [0.5, 0.6]

:func:`read_study` checks the whole file before anything runs. Errors of the file's structure
(unknown keys, wrong types, bad steps, duplicate names, a subject with two scalings) stop it
with one :class:`arthron.errors.DataFileError` naming the study file and listing every key at
fault. A file a subject or trial names that does not exist is recorded on that subject or trial
(:attr:`SubjectSpec.problems`, :attr:`TrialSpec.problems`): the batch reports it in its summary
and goes on with the others.

Paths are resolved against the study file's folder. Names (subject, trial) become folder names:
letters, digits, ``.``, ``_`` and ``-`` only.
"""
from __future__ import annotations

import difflib
import math
import re
from dataclasses import dataclass, field
from pathlib import Path

from ..errors import DataFileError
from ..models.subject import SUBJECT_HEIGHT_M, SUBJECT_MASS_KG

__all__ = ["STEPS", "STEP_TITLES", "Study", "SubjectSpec", "TrialSpec", "read_study", "TRIAL_OPTIONS"]

#: the pipeline, in order; a study runs a prefix of it
STEPS = ("scale", "ik", "id", "so", "jr")
STEP_TITLES = {"scale": "scaling", "ik": "inverse kinematics", "id": "inverse dynamics",
               "so": "load sharing (static optimization)", "jr": "joint reactions"}

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9._-]*$")

# key -> kind; kinds: file, files, str, strs, num, pos, range, map, opt
#: trial options (in ``[defaults]`` or a trial): key -> (kind, meaning)
TRIAL_OPTIONS = {
    "ik_setup": ("file", "InverseKinematicsTool setup whose IKTaskSet weights the markers "
                         "(default: every model marker in the trial, weight 1)"),
    "time_range": ("range", "[t0, t1] s of the trial solved (default: all of it)"),
    "marker_map": ("map", "trial marker label -> model marker name (labels not mapped keep "
                          "their names)"),
    "external_loads": ("file", "ExternalLoads XML (template; its datafile is replaced by grf)"),
    "grf": ("file", "ground reaction .mot/.sto (the ExternalLoads' datafile)"),
    "rotate": ("str", "C3D trial: rotation into OpenSim's frame, e.g. 'x-90'"),
    "bodies": ("strs", "C3D trial: the body on each force platform, in platform order"),
    "force_location": ("str", "C3D trial: 'origin' or 'cop'"),
    "lowpass_hz": ("num", "low-pass cut-off of the coordinates for ID, SO and JR (Hz; <= 0: none)"),
    "forces_to_exclude": ("strs", "ID: forces left out (OpenSim's property; default Muscles)"),
    "reserves": ("pos", "SO: optimal force of reserve CoordinateActuators on every coordinate"),
    "activation_exponent": ("pos", "SO: exponent of the activations in the objective (default 2)"),
    "joints": ("strs", "JR: joints reported (default all)"),
}
_STUDY_KEYS = {"name": "str", "output": "path", "steps": "strs"}
_SUBJECT_KEYS = {"name": "str", "model": "file", "marker_set": "file", "scale_setup": "file",
                 "mass": "pos", "height": "pos", "gender": "str", "static": "file",
                 "trials": "list"}
#: a subject's mass and height beyond any human's are refused (grams, millimetres): the bounds of
_SUBJECT_BOUNDS = {"mass": (*SUBJECT_MASS_KG, "kg"), "height": (*SUBJECT_HEIGHT_M, "m")}
_TRIAL_KEYS = {"name": "str", "markers": "file", **{k: v[0] for k, v in TRIAL_OPTIONS.items()}}


@dataclass
class TrialSpec:
    """One trial of a subject: ``markers`` (``.trc``/``.c3d``) and the options of
    :data:`TRIAL_OPTIONS` (inherited from ``[defaults]``), paths absolute.
    ``problems``: errors found before running (missing files), each a message naming the study
    file and key."""

    subject: str
    name: str
    markers: Path | None
    options: dict = field(default_factory=dict)
    key: str = ""
    problems: list = field(default_factory=list)


@dataclass
class SubjectSpec:
    """A subject: how its model is made (``scale_setup`` ScaleTool; or ``model`` with
    ``mass``/``height``/``gender`` anthropometric scaling; or ``model`` alone, used as it is),
    and its trials."""

    name: str
    model: Path | None = None
    marker_set: Path | None = None
    scale_setup: Path | None = None
    mass: float | None = None
    height: float | None = None
    gender: str = "m"
    static: Path | None = None
    trials: list = field(default_factory=list)
    key: str = ""
    problems: list = field(default_factory=list)

    @property
    def scaling(self) -> str:
        """``"scaletool"``, ``"anthropometric"`` or ``"none"``."""
        if self.scale_setup is not None:
            return "scaletool"
        return "anthropometric" if self.height is not None else "none"


@dataclass
class Study:
    """A study file, read and checked (:func:`read_study`)."""

    path: Path
    name: str
    output: Path
    steps: tuple
    subjects: list

    def trials(self):
        """Every (SubjectSpec, TrialSpec), in file order."""
        return [(s, t) for s in self.subjects for t in s.trials]


def _load(path: Path) -> dict:
    suffix = path.suffix.lower()
    try:
        raw = path.read_bytes()
    except OSError as e:
        raise DataFileError(f"cannot read the study file: {e.strerror or e}", path) from None
    if suffix in (".yaml", ".yml"):
        try:
            import yaml
        except ImportError:
            raise DataFileError("a YAML study file needs PyYAML (pip install 'arthron[yaml]'); "
                                "or write it as TOML", path) from None
        try:
            data = yaml.safe_load(raw.decode("utf-8"))
        except (yaml.YAMLError, UnicodeDecodeError) as e:
            mark = getattr(e, "problem_mark", None)
            where = f"line {mark.line + 1}" if mark is not None else None
            raise DataFileError(f"not valid YAML: {getattr(e, 'problem', None) or e}", path, where) from None
    else:
        try:
            import tomllib
        except ImportError:             # Python 3.10
            import tomli as tomllib
        try:
            data = tomllib.loads(raw.decode("utf-8"))
        except (tomllib.TOMLDecodeError, UnicodeDecodeError) as e:
            msg = str(e)
            m = re.search(r"\(at line (\d+), column (\d+)\)", msg)
            where = f"line {m.group(1)}" if m else None
            raise DataFileError(f"not valid TOML: {re.sub(r' [(]at line.*', '', msg)}", path, where) from None
    if data is None:
        data = {}
    if not isinstance(data, dict):
        raise DataFileError("the study file must hold a table (study, defaults, subjects)", path)
    return data


class _Checker:
    """Collects every structural error of a study file, then raises them together."""

    def __init__(self, path: Path):
        self.path = path
        self.folder = path.parent
        self.errors: list[str] = []

    def err(self, key: str, msg: str):
        self.errors.append(f"{key}: {msg}")

    def keys(self, d, allowed, key):
        if not isinstance(d, dict):
            self.err(key, f"must be a table, got {type(d).__name__}")
            return {}
        for k in d:
            if k not in allowed:
                near = difflib.get_close_matches(str(k), list(allowed), n=2, cutoff=0.6)
                hint = f" (did you mean {', '.join(near)}?)" if near else ""
                self.err(f"{key}.{k}" if key else str(k), f"unknown key; allowed: {', '.join(sorted(allowed))}{hint}")
        return d

    def value(self, kind, v, key, problems):
        """The value of kind ``kind`` (paths resolved; missing files go to ``problems``)."""
        if kind in ("file", "path"):
            if not isinstance(v, str) or not v.strip():
                self.err(key, "must be a file name (a string)")
                return None
            p = Path(v.strip()).expanduser()
            p = p if p.is_absolute() else self.folder / p
            if kind == "file" and not p.is_file():
                what = "is a folder, not a file" if p.is_dir() else "does not exist"
                problems.append(f"{self.path}: {key}: file '{v}' {what}")
            return p
        if kind == "str":
            if not isinstance(v, str):
                self.err(key, f"must be a string, got {v!r}")
                return None
            return v
        if kind == "strs":
            if isinstance(v, str):
                v = [v]
            if not isinstance(v, list) or not all(isinstance(x, str) for x in v):
                self.err(key, f"must be a list of strings, got {v!r}")
                return None
            return list(v)
        if kind in ("num", "pos"):
            if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v):
                self.err(key, f"must be a number, got {v!r}")
                return None
            if kind == "pos" and not v > 0:
                self.err(key, f"must be positive, got {v!r}")
                return None
            lo, hi, unit = _SUBJECT_BOUNDS.get(key.rsplit(".", 1)[-1], (-math.inf, math.inf, ""))
            if ".trials" not in key and key.startswith("subjects") and not lo <= v <= hi:
                self.err(key, f"must lie in [{lo:g}, {hi:g}] {unit} (a human subject's), got {v!r}")
            return float(v)
        if kind == "range":
            if (not isinstance(v, list) or len(v) != 2 or any(isinstance(x, bool) or not isinstance(x, (int, float))
                                                              or not math.isfinite(x) for x in v)):
                self.err(key, f"must be two numbers [t0, t1], got {v!r}")
                return None
            if not v[0] < v[1]:
                self.err(key, f"must be increasing, got {v!r}")
                return None
            return (float(v[0]), float(v[1]))
        if kind == "map":
            if not isinstance(v, dict) or not all(isinstance(a, str) and isinstance(b, str) for a, b in v.items()):
                self.err(key, f"must be a table of marker names (label = \"model marker\"), got {v!r}")
                return None
            return dict(v)
        raise AssertionError(kind)

    def options(self, d, allowed, key, problems):
        return {k: self.value(allowed[k], v, f"{key}.{k}", problems) for k, v in d.items()
                if k in allowed and k not in ("name", "trials", "markers")}



def _entry_name(c, entry: dict, key: str, seen: set, kind: str, index: int, scope: str) -> str:
    """The ``name`` of a subject or trial entry, checked (letters, digits, '.', '_', '-'; unique
    among ``seen``, to which it is added); a bad name is reported and replaced by kind+index."""
    name = entry.get("name")
    if not isinstance(name, str) or not _NAME.match(name):
        c.err(f"{key}.name", f"each {kind} needs a name of letters, digits, '.', '_' or '-', got {name!r}")
        name = f"{kind}{index}"
    elif name in seen:
        c.err(f"{key}.name", f"{kind} '{name}' is named twice{scope}")
    seen.add(name)
    return name

def read_study(path) -> Study:
    """Read and check a study file (TOML, or YAML by its suffix).

    Returns
    -------
    Study (paths absolute; each trial's options merged from ``[defaults]``)

    Raises
    ------
    DataFileError naming the study file and listing every structural error (unknown keys with
    the allowed ones, wrong types, steps that are not a prefix of scale, ik, id, so, jr, bad or
    duplicate names, a subject with both a ScaleTool setup and a height, a subject without a
    model, a trial without markers). Missing input files are not raised: they are recorded in
    the ``problems`` of the subject or trial concerned.
    """
    path = Path(path).absolute()
    data = _load(path)
    c = _Checker(path)
    c.keys(data, {"study", "defaults", "subjects"}, "")
    st = c.keys(data.get("study", {}), _STUDY_KEYS, "study")
    name = st.get("name", path.stem)
    if not isinstance(name, str):
        c.err("study.name", "must be a string")
    out = c.value("path", st["output"], "study.output", []) if "output" in st else \
        path.parent / f"{path.stem}_results"
    steps = c.value("strs", st.get("steps", list(STEPS)), "study.steps", []) or []
    if any(s not in STEPS for s in steps):
        c.err("study.steps", f"unknown step(s) {[s for s in steps if s not in STEPS]}; the steps are "
                             f"{', '.join(STEPS)}")
    elif tuple(steps) != STEPS[:len(steps)] or not steps:
        c.err("study.steps", f"must be a prefix of {list(STEPS)} (each step needs the ones "
                             f"before it), got {steps}")
    trial_allowed = {k: v[0] for k, v in TRIAL_OPTIONS.items()}
    defaults_d = c.keys(data.get("defaults", {}), trial_allowed, "defaults")
    defaults = c.options(defaults_d, trial_allowed, "defaults", default_problems := [])
    subjects = []
    subs = data.get("subjects", [])
    if not isinstance(subs, list) or not subs:
        c.err("subjects", "must be a non-empty list of subjects ([[subjects]])")
        subs = []
    seen = set()
    for i, sd in enumerate(subs):
        key = f"subjects[{i}]"
        sd = c.keys(sd, _SUBJECT_KEYS, key)
        if not sd:
            continue
        nm = _entry_name(c, sd, key, seen, "subject", i, "")
        key = f"subjects[{i}] ('{nm}')"
        s = SubjectSpec(name=nm, key=key)
        for k, v in sd.items():
            if k in ("name", "trials") or k not in _SUBJECT_KEYS:
                continue
            setattr(s, k, c.value(_SUBJECT_KEYS[k], v, f"{key}.{k}", s.problems))
        if s.gender is None:
            s.gender = "m"
        if str(s.gender).strip().lower() not in ("m", "f", "male", "female"):
            c.err(f"{key}.gender", f"must be f or m (female or male), got {s.gender!r}")
        if s.scale_setup is not None and s.height is not None:
            c.err(key, "give either scale_setup (ScaleTool) or mass/height (anthropometric), not both")
        if s.scale_setup is None and (s.height is None) != (s.mass is None):
            c.err(key, "anthropometric scaling needs both mass (kg) and height (m)")
        if s.scale_setup is None and "model" not in sd:
            c.err(key, "needs a model (or a scale_setup naming one)")
        for k in ("static", "marker_set"):
            if k in sd and s.scale_setup is not None:
                c.err(f"{key}.{k}", f"a ScaleTool subject's {k.replace('_', ' ')} is named in its scale_setup")
        trials = sd.get("trials", [])
        if not isinstance(trials, list) or not trials:
            c.err(f"{key}.trials", "must be a non-empty list of trials ([[subjects.trials]])")
            trials = []
        tseen = set()
        for j, td in enumerate(trials):
            tkey = f"{key}.trials[{j}]"
            td = c.keys(td, _TRIAL_KEYS, tkey)
            if not td:
                continue
            tn = _entry_name(c, td, tkey, tseen, "trial", j, f" in subject '{nm}'")
            tkey = f"{key}.trials[{j}] ('{tn}')"
            t = TrialSpec(subject=nm, name=tn, markers=None, key=tkey, problems=list(default_problems))
            if "markers" not in td:
                c.err(tkey, "needs markers (a .trc or .c3d file)")
            else:
                t.markers = c.value("file", td["markers"], f"{tkey}.markers", t.problems)
                if t.markers is not None and t.markers.suffix.lower() not in (".trc", ".c3d"):
                    c.err(f"{tkey}.markers", f"must be a .trc or .c3d file, got '{td['markers']}'")
            opts = dict(defaults)
            opts.update(c.options(td, trial_allowed, tkey, t.problems))
            t.options = opts
            fl = opts.get("force_location")
            if fl is not None and fl not in ("origin", "cop"):
                c.err(f"{tkey}.force_location", f"must be origin or cop, got {fl!r}")
            s.trials.append(t)
        subjects.append(s)
    if c.errors:
        n = len(c.errors)
        raise DataFileError(f"{n} error{'s' if n > 1 else ''} in the study file:\n  " + "\n  ".join(c.errors), path)
    return Study(path=path, name=name, output=out, steps=tuple(steps), subjects=subjects)
