"""The one resolver of the files an OpenSim tool setup names, used by every tool.

OpenSim's ScaleTool and AnalyzeTool resolve a relative file name against the folder of the
setup file; arthron does so for every tool (OpenSim 4.6's InverseDynamicsTool uses the current
working directory instead and fails when run from elsewhere). Setups copied from another
machine often hold absolute paths that do not exist here: such a name is then looked up by its
file name in the setup's folder and in ``search_dirs`` (searched recursively), in that order.

Outputs go into the setup's ``results_directory`` (the setup's folder when empty), created
when missing, as OpenSim's tools do (``IO::makeDir``).
"""
from __future__ import annotations

import math
import warnings
from pathlib import Path

from ..errors import ArthronWarning, DataFileError, OptionError, UnsupportedFeature
from .options import check_result_name

__all__ = ["check_tool", "is_unassigned", "find_setup_file", "require_setup_file", "results_directory",
           "output_file", "setting_text", "setting_bool", "setting_list", "setting_float",
           "step_interval", "setup_result_name"]


#: the OpenSim tool of each setup arthron runs, and the command that runs it
TOOL_COMMANDS = {"InverseKinematicsTool": "ik", "InverseDynamicsTool": "id", "ScaleTool": "scale",
                 "AnalyzeTool": "analyze"}
#: OpenSim tools arthron does not implement (what they do, for the message)
UNSUPPORTED_TOOLS = {"CMCTool": "computed muscle control", "RRATool": "residual reduction",
                     "ForwardTool": "forward simulation",
                     "StaticOptimizationTool": "static optimization tool (use an AnalyzeTool)",
                     "MocoStudy": "Moco optimal control", "MocoTrack": "Moco tracking",
                     "MocoInverse": "Moco inverse"}


def check_tool(setup, expected: str, element=None) -> None:
    """Refuse a setup of another tool than ``expected`` in one line that says what to do.

    ``setup``: a ToolSetup (``tool``, ``path``); ``element``: lxml element for the line number.

    Raises
    ------
    UnsupportedFeature for the OpenSim tools arthron does not run (CMC, RRA, forward
    simulation, Moco), DataFileError for any other tool (naming the command that runs it).
    """
    tool = setup.tool
    if tool == expected:
        return
    where = (f"line {element.sourceline}",) if getattr(element, "sourceline", None) else ()
    runs = ", ".join(TOOL_COMMANDS)
    if tool in UNSUPPORTED_TOOLS:
        raise UnsupportedFeature(f"<{tool}> ({UNSUPPORTED_TOOLS[tool]}) is not supported by arthron "
                                 f"(it runs {runs} setups)", setup.path, *where)
    if tool in TOOL_COMMANDS:
        raise DataFileError(f"expected an {expected} setup, found <{tool}>: run it with "
                            f"'arthron {TOOL_COMMANDS[tool]} --setup'", setup.path, *where)
    raise DataFileError(f"expected an {expected} setup, found <{tool}>", setup.path, *where)


def setup_result_name(setup, name, where: str) -> str:
    """A name of a setup that prefixes result files (the tool's ``name``:
    ``<name>_ik_marker_errors.sto``, ``<name>_<analysis>_...sto``; an analysis' ``name``),
    checked as :func:`arthron.tools.options.check_result_name` checks ``--name``: a name, not a
    path, so that no result lands outside ``results_directory``. OpenSim 4.6 drops such a
    directory with a warning from most result files ("Directory ... was specified where only
    file name ... is expected") but writes StaticOptimization's controls ``.xml`` into it, outside
    the results directory. An empty name passes (OpenSim writes ``arm26__ReactionLoads.sto``).

    Returns ``name``. Raises DataFileError naming the setup file and ``where`` (the element)."""
    if name and str(name).strip():
        try:
            check_result_name(name, "name")
        except OptionError as e:
            raise DataFileError(e.message.replace("the output folder", "results_directory"),
                                setup.path, where) from None
    return name


def is_unassigned(name) -> bool:
    """True for a property OpenSim treats as not given: None, empty, or ``Unassigned``."""
    return name is None or not str(name).strip() or str(name).strip() == "Unassigned"


def find_setup_file(setup, name, search_dirs=None, key: str | None = None) -> Path | None:
    """Absolute path of an input file named in a setup.

    Parameters
    ----------
    setup : arthron.io.setup.ToolSetup (``path``, ``folder``, ``resolve``)
    name : the text of the property (absolute, or relative to the setup's folder; Windows
        separators accepted)
    search_dirs : folders searched for the file name when ``name`` does not exist as given
        (first directly, then recursively, in order)
    key : the property's name, for the error message

    Returns
    -------
    Path, or None when the property is empty or ``Unassigned``.

    Raises
    ------
    DataFileError naming the setup when the file is found nowhere.
    """
    if is_unassigned(name):
        return None
    what = f"<{key}> " if key else ""

    def exists(p: Path) -> bool:
        try:
            return p.exists()
        except OSError as e:       # ENAMETOOLONG and the like: a typed error, not OSError
            raise DataFileError(f"file {what}name cannot be used: {e.strerror or e} "
                                f"({len(str(name).strip())} characters)", setup.path) from None
    p = setup.resolve(name)
    if p is not None and exists(p):
        return p
    base = Path(str(name).strip().replace("\\", "/")).name
    dirs = [Path(d) for d in (search_dirs or [])]
    for d in [Path(setup.folder), *dirs]:
        cand = d / base
        if exists(cand):
            return cand
    for d in dirs:
        hits = sorted(d.rglob(base))
        if hits:
            return hits[0]
    where = ("not beside the setup nor under the search folders" if dirs else
             "not beside the setup; --search-dir DIR (search_dirs) looks for it under another folder")
    raise DataFileError(f"file {what}'{str(name).strip()}' named in the setup does not exist ({where})",
                        setup.path)


def require_setup_file(setup, key: str, search_dirs=None, value=None) -> Path:
    """:func:`find_setup_file` for a property that must be given (``key`` names it in the error).

    ``value`` is the property's text (default ``setup.get(key)``)."""
    p = find_setup_file(setup, setup.get(key) if value is None else value, search_dirs, key)
    if p is None:
        raise DataFileError(f"the {setup.tool} setup needs <{key}>", setup.path)
    return p


def results_directory(setup, override=None, *, create: bool = True) -> Path:
    """The folder a tool writes into: ``override`` if given, else the setup's
    ``results_directory`` (relative to the setup's folder; the setup's folder when empty).
    Created with its parents when missing (``create``), as OpenSim does."""
    if override is not None:
        d = Path(override).absolute()
    else:
        d = setup.resolve(setup.get("results_directory")) or Path(setup.folder)
    if create:
        try:
            d.mkdir(parents=True, exist_ok=True)
        except OSError as e:
            raise DataFileError(f"cannot create the results directory: {e.strerror or e}", d) from None
    return d


def output_file(setup, name, folder: Path | None = None) -> Path | None:
    """Absolute path of an output file named in a setup: under ``folder`` (default the setup's
    results directory) when relative; None when empty or ``Unassigned``."""
    if is_unassigned(name):
        return None
    p = Path(str(name).strip().replace("\\", "/")).expanduser()
    if p.is_absolute():
        return p
    return (folder if folder is not None else results_directory(setup)) / p


# ----------------------------------------------------------- properties of setup elements


def setting_text(el, tag, default=None):
    """The stripped text of ``el``'s child ``tag`` (``default`` when absent or empty)."""
    c = el.find(tag) if el is not None else None
    if c is None or c.text is None or not c.text.strip():
        return default
    return c.text.strip()


def setting_bool(el, tag, default: bool) -> bool:
    """An OpenSim boolean property of ``el`` (true/1/yes), ``default`` when absent."""
    t = setting_text(el, tag)
    if t is None:
        return default
    return t.lower() in ("true", "1", "yes")


def setting_list(text):
    """A whitespace-separated list property as a list of strings."""
    return (text or "").split()


def setting_float(text, default, path, what):
    """A number property (``inf``/``-inf`` accepted); ``default`` when empty.

    Raises DataFileError naming ``what`` and ``path`` for text that is not a number or NaN."""
    if text is None or not str(text).strip():
        return default
    t = str(text).strip().lower()
    if t in ("inf", "infinity", "+inf", "+infinity"):
        return math.inf
    if t in ("-inf", "-infinity"):
        return -math.inf
    try:
        x = float(t)
    except ValueError:
        raise DataFileError(f"{what}: {text!r} is not a number", path) from None
    if x != x:
        raise DataFileError(f"{what}: {text!r} is not a usable number", path)
    return x


def step_interval(el, path) -> int:
    """An analysis' ``step_interval`` (≥ 1; below 1 it is 1 with a warning, as OpenSim 4.6's
    ``Analysis::setStepInterval`` clamps it).

    Raises DataFileError naming the element and ``path`` (not an integer)."""
    t = setting_text(el, "step_interval", "1")
    try:
        n = int(float(t))
    except ValueError:
        raise DataFileError(f"<{el.tag}> step_interval {t!r} is not an integer", path) from None
    if n < 1:           # OpenSim 4.6's Analysis::setStepInterval clamps it to 1
        warnings.warn(f"{path}: <{el.tag}> step_interval {t} is below 1; every step is recorded, "
                      "as OpenSim does (step_interval 1)", ArthronWarning, stacklevel=2)
        n = 1
    return n
