"""The package's architecture, checked on its source with ``ast`` (no import is executed).

Layers (README, "Layout"); a module may import its own layer or lower ones only:

    L0  arthron.errors, arthron.geometry.*, arthron.tables, arthron.runtime, arthron.progress
    L1  arthron.models.*          the model as typed data
    L2  arthron.multibody.*       compiled tree, kinematics, dynamics, constraints, paths, forces
    L3  arthron.solvers.*         algorithms on objects and arrays
        arthron.io.*              file formats (never solvers, multibody or tools)
    L4  arthron.tools.*           OpenSim's setup-driven tools (io + solvers)
        arthron.plots             the only matplotlib user
        arthron.render            pictures of models (pyvista off-screen)
    L5  arthron.cli, cli_study    the command line

and: nothing under models/, multibody/ or solvers/ imports io, tools, cli, plots, render, lxml,
matplotlib, pyvista/vtk or rich, not even lazily inside a function; no import cycles between
modules; no file over 800 lines under multibody/ and solvers/; no model, multibody or solver code touches ``.raw``
(the XML element kept for lossless writing).

Imports are collected at any depth (inside functions and ``if`` blocks too). The package's
``__init__`` (the curated public API) is exempt from the layer rule.

Every module is a test case of its own, so a failure names the module and the rule.
"""
from __future__ import annotations

import ast
from pathlib import Path

import pytest

SRC = Path(__file__).resolve().parents[1] / "src"
PKG = SRC / "arthron"


# ------------------------------------------------------------------------------ the import graph
def _module_name(path: Path) -> str:
    rel = path.relative_to(SRC).with_suffix("")
    parts = list(rel.parts)
    if parts[-1] == "__init__":
        parts = parts[:-1]
    return ".".join(parts)


MODULES = {_module_name(p): p for p in sorted(PKG.rglob("*.py"))}
TREES = {m: ast.parse(p.read_text(encoding="utf-8"), filename=str(p)) for m, p in MODULES.items()}


def _is_package(mod: str) -> bool:
    return MODULES[mod].name == "__init__.py"


def _resolve(mod: str, node: ast.ImportFrom) -> str:
    if not node.level:
        return node.module or ""
    base = mod.split(".") if _is_package(mod) else mod.split(".")[:-1]
    base = base[:len(base) - (node.level - 1)]
    return ".".join(base + ([node.module] if node.module else []))


def _imports(mod: str) -> set:
    """Every module name ``mod`` imports, at any depth: internal names resolved to the most
    specific module of the package (``from .x import y`` gives ``pkg.x.y`` when y is a module),
    external ones as written (``lxml.etree``)."""
    out = set()
    for node in ast.walk(TREES[mod]):
        if isinstance(node, ast.Import):
            out.update(a.name for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            base = _resolve(mod, node)
            for a in node.names:
                full = f"{base}.{a.name}"
                out.add(full if full in MODULES else base)
    return out


IMPORTS = {m: _imports(m) for m in MODULES}


def _internal(name: str) -> str | None:
    """The package module a name refers to (its longest prefix that is a module), or None."""
    parts = name.split(".")
    while parts:
        cand = ".".join(parts)
        if cand in MODULES:
            return cand
        parts.pop()
    return None


EDGES = {m: {t for t in (_internal(n) for n in IMPORTS[m] if n.split(".")[0] == "arthron")
             if t is not None and t != m} for m in MODULES}


def _under(mod: str, *pkgs: str) -> bool:
    return any(mod == f"arthron.{p}" or mod.startswith(f"arthron.{p}.") for p in pkgs)


def layer(mod: str) -> int | None:
    if mod == "arthron":
        return None                      # the curated API re-exports every layer
    if _under(mod, "errors", "geometry", "tables", "runtime", "progress"):
        return 0
    if _under(mod, "models"):
        return 1
    if _under(mod, "multibody"):
        return 2
    if _under(mod, "solvers", "io"):
        return 3
    if _under(mod, "tools", "plots", "render"):
        return 4
    if _under(mod, "cli", "cli_study", "__main__"):
        return 5
    raise AssertionError(f"module {mod} is in no layer: add it to tests/test_architecture.py and the README")


CORE = [m for m in MODULES if _under(m, "models", "multibody", "solvers")]
FORBIDDEN_IN_CORE = ("arthron.io", "arthron.tools", "arthron.cli", "arthron.plots", "arthron.render", "lxml",
                     "matplotlib", "pyvista", "vtk", "vtkmodules", "rich")


def _forbidden(mod: str) -> list:
    return sorted(n for n in IMPORTS[mod]
                  if any(n == f or n.startswith(f + ".") for f in FORBIDDEN_IN_CORE))


def _upward(mod: str) -> list:
    """Imports of ``mod`` that break the layer order (or io ⇄ solvers/multibody/tools)."""
    me = layer(mod)
    if me is None:
        return []
    bad = []
    for t in sorted(EDGES[mod]):
        lt = layer(t)
        if lt is None:
            bad.append(t)                # importing the package __init__ pulls in every layer
        elif lt > me:
            bad.append(t)
        elif _under(mod, "io") and _under(t, "solvers", "multibody", "tools"):
            bad.append(t)
        elif _under(mod, "solvers") and _under(t, "io"):
            bad.append(t)
    return bad


def _touches_raw(n) -> bool:
    if isinstance(n, ast.Attribute):
        return n.attr == "raw"                                  # x.raw
    return (isinstance(n, ast.Call) and isinstance(n.func, ast.Name)   # getattr(x, "raw") ...
            and n.func.id in ("getattr", "setattr", "hasattr") and len(n.args) >= 2
            and isinstance(n.args[1], ast.Constant) and n.args[1].value == "raw")


def _raw_uses(mod: str) -> list:
    lines = {n.lineno for n in ast.walk(TREES[mod]) if _touches_raw(n)}
    return [f"line {k}" for k in sorted(lines)]


def _lines(mod: str) -> int:
    return len(MODULES[mod].read_text(encoding="utf-8").splitlines())


def _sccs(graph: dict) -> list:
    """Strongly connected components with more than one module (Tarjan, iterative)."""
    index, low, on, stack, out = {}, {}, set(), [], []
    counter = [0]
    for root in graph:
        if root in index:
            continue
        work = [(root, iter(sorted(graph[root])))]
        index[root] = low[root] = counter[0]
        counter[0] += 1
        stack.append(root)
        on.add(root)
        while work:
            v, it = work[-1]
            advanced = False
            for w in it:
                if w not in index:
                    index[w] = low[w] = counter[0]
                    counter[0] += 1
                    stack.append(w)
                    on.add(w)
                    work.append((w, iter(sorted(graph[w]))))
                    advanced = True
                    break
                if w in on:
                    low[v] = min(low[v], index[w])
            if advanced:
                continue
            work.pop()
            if work:
                low[work[-1][0]] = min(low[work[-1][0]], low[v])
            if low[v] == index[v]:
                comp = []
                while True:
                    w = stack.pop()
                    on.discard(w)
                    comp.append(w)
                    if w == v:
                        break
                if len(comp) > 1:
                    out.append(sorted(comp))
    return sorted(out)


def _params(mods):
    return [pytest.param(m, id=m) for m in mods]


# ------------------------------------------------------------------------------------- tests
def test_every_module_has_a_layer():
    for m in MODULES:
        layer(m)


@pytest.mark.parametrize("mod", _params(CORE))
def test_core_does_not_import_io_tools_lxml_or_matplotlib(mod):
    assert _forbidden(mod) == [], f"{mod} imports {_forbidden(mod)}"


@pytest.mark.parametrize("mod", _params([m for m in MODULES if m != "arthron"]))
def test_no_import_from_a_higher_layer(mod):
    assert _upward(mod) == [], f"{mod} (layer {layer(mod)}) imports {_upward(mod)}"


@pytest.mark.parametrize("mod", _params(CORE))
def test_core_does_not_touch_raw_xml(mod):
    assert _raw_uses(mod) == [], f"{mod} uses .raw at {', '.join(_raw_uses(mod))}"


@pytest.mark.parametrize("mod", _params([m for m in MODULES if _under(m, "multibody", "solvers")]))
def test_multibody_and_solver_files_are_short(mod):
    assert _lines(mod) <= 800, f"{MODULES[mod]} has {_lines(mod)} lines"


def test_no_import_cycles():
    assert _sccs(EDGES) == []


# ------------------------------------------------------------- the checks check what they say
def test_the_import_walker_sees_lazy_imports_and_resolves_relative_names():
    tree = ast.parse("def f():\n    from ..io.sto import write_sto\n    import lxml.etree\n"
                     "    from . import ligament\n")
    mod = "arthron.solvers.muscle_analysis"
    names = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.ImportFrom):
            names.add(_resolve(mod, node) + ("." + node.names[0].name if not node.module else ""))
        elif isinstance(node, ast.Import):
            names.update(a.name for a in node.names)
    assert names == {"arthron.io.sto", "lxml.etree", "arthron.solvers.ligament"}


def test_the_cycle_finder_finds_cycles():
    assert _sccs({"a": {"b"}, "b": {"c"}, "c": {"a"}, "d": {"a"}}) == [["a", "b", "c"]]
    assert _sccs({"a": {"b"}, "b": set()}) == []


def test_only_plots_imports_matplotlib():
    users = [m for m in MODULES if any(n.split(".")[0] == "matplotlib" for n in IMPORTS[m])]
    assert users in ([], ["arthron.plots"]), users
