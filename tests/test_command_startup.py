"""What the ``arthron`` command does to start and end faster (issue 15) changes nothing it
computes, writes or says: the parser of the one command given, glibc keeping freed memory,
the end without the interpreter's final collections, and the spline, function and motion
shortcuts on the inverse-dynamics path."""
from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import numpy as np
import pytest

from arthron import cli, runtime
from arthron.cli import build_parser, main
from conftest import GAIT_PIPE, GAIT_REF_MODEL, needs_data

SRC = Path(__file__).resolve().parents[1] / "src"


def _sub(parser, name):
    return parser._subparsers._group_actions[0].choices[name]


def test_one_command_parser_is_the_whole_parsers_subparser():
    """build_parser(only=CMD) holds CMD's subparser as the whole parser builds it (help text,
    arguments, defaults, handler) and no other command."""
    whole = build_parser()
    names = list(whole._subparsers._group_actions[0].choices)
    assert len(names) >= 15 and "id" in names
    for name in names:
        one = build_parser(only=name)
        assert list(one._subparsers._group_actions[0].choices) == [name]
        a, b = _sub(one, name), _sub(whole, name)
        assert a.format_help() == b.format_help(), name
        assert [(x.dest, x.option_strings, x.default, x.nargs, x.choices, x.required)
                for x in a._actions] == [(x.dest, x.option_strings, x.default, x.nargs, x.choices,
                                          x.required) for x in b._actions], name
        assert a._defaults == b._defaults, name


def test_parser_errors_are_the_whole_parsers(capsys, monkeypatch):
    """An option the command does not know is refused by the whole parser (its usage line lists
    every command), an unknown command too; a bad value by the command's own parser."""
    monkeypatch.setattr(cli, "_PARSER", None)
    with pytest.raises(SystemExit) as e:
        main(["id", "--no-such-option"])
    err = capsys.readouterr().err
    assert e.value.code == 2 and "unrecognized arguments: --no-such-option" in err
    assert "{info,convert," in err.replace("\n", "").replace(" ", "")
    with pytest.raises(SystemExit):
        main(["no-such-command"])
    assert "invalid choice: 'no-such-command'" in capsys.readouterr().err
    with pytest.raises(SystemExit):
        main(["id", "m.osim", "q.mot", "--lowpass", "x"])
    err = capsys.readouterr().err
    assert err.startswith("usage: arthron id ") and "invalid float value: 'x'" in err


def test_cached_parser_follows_the_command(monkeypatch):
    """The parser built for one command is not reused for another."""
    monkeypatch.setattr(cli, "_PARSER", None)
    p = cli._parser("id")
    assert cli._parser("id") is p and cli._parser() is p
    q = cli._parser("so")
    assert q is not p and "so" in q._subparsers._group_actions[0].choices


@pytest.mark.skipif(not sys.platform.startswith("linux"), reason="glibc's mallopt")
def test_keep_freed_memory_is_taken_by_glibc():
    """On Linux with glibc the three allocator settings are accepted (the program calls this
    before its job; a library session, or main(argv), never does)."""
    import ctypes
    try:
        ctypes.CDLL(None).mallopt
    except AttributeError:                                  # pragma: no cover - musl
        pytest.skip("no mallopt")
    code = "from arthron import runtime; print(runtime.keep_freed_memory())"   # not this process
    r = subprocess.run([sys.executable, "-c", code], env=dict(os.environ, PYTHONPATH=str(SRC)),
                       capture_output=True, text=True)
    assert r.stdout.strip() == "True", r.stderr


@needs_data
def test_main_with_arguments_does_not_freeze(tmp_path, monkeypatch):
    """main(argv) (a library or test call) leaves the garbage collector as it was; only the
    program itself (argv None) freezes at its end."""
    monkeypatch.setattr(cli, "_PARSER", None)
    before = gc.get_freeze_count()
    assert main(["info", str(GAIT_REF_MODEL)]) == 0
    assert gc.get_freeze_count() == before


@needs_data
def test_program_writes_what_main_writes(tmp_path):
    """``python -m arthron.cli id`` (the program: one-command parser, kept memory, quick end)
    writes the same bytes as main() in this process, on the Gait2354 walk with its loads."""
    env = dict(os.environ, PYTHONPATH=str(SRC), OPENBLAS_NUM_THREADS="1")
    args = ["id", str(GAIT_REF_MODEL), str(GAIT_PIPE / "OutputReference" / "subject01_walk1_ik.mot"),
            "--external-loads", str(GAIT_PIPE / "subject01_walk1_grf.xml"), "--lowpass", "6"]
    r = subprocess.run([sys.executable, "-m", "arthron.cli", *args, "-o", str(tmp_path / "a.sto")],
                       env=env, cwd=tmp_path, capture_output=True, text=True)
    assert r.returncode == 0, r.stderr
    assert main([*args, "-o", str(tmp_path / "b.sto")]) == 0
    assert (tmp_path / "a.sto").read_bytes() == (tmp_path / "b.sto").read_bytes()


def test_program_end_keeps_output_status_and_atexit(tmp_path):
    """The program's quick end (runtime.end_process) flushes what it printed to a pipe, runs
    the atexit functions and keeps the exit status (0, and 2 for an arthron error); main(argv)
    and a library session keep the collector's thresholds, the program raises generation 0's."""
    code = ("import atexit, gc, sys\n"
            "atexit.register(lambda: print('atexit ran', gc.get_threshold()[0]))\n"
            "from arthron.cli import main\n"
            "sys.argv = ['arthron', *sys.argv[1:]]\n"
            "sys.exit(main())\n")
    env = dict(os.environ, PYTHONPATH=str(SRC))
    r = subprocess.run([sys.executable, "-c", code, "info", str(tmp_path / "none.osim")], env=env,
                       capture_output=True, text=True, cwd=tmp_path)
    assert r.returncode == 2 and "does not exist" in r.stderr
    assert r.stdout.strip() == f"atexit ran {runtime.COMMAND_GC_THRESHOLD}"
    if GAIT_REF_MODEL.exists():
        r = subprocess.run([sys.executable, "-c", code, "info", str(GAIT_REF_MODEL)], env=env,
                           capture_output=True, text=True, cwd=tmp_path)
        assert r.returncode == 0, r.stderr
        assert r.stdout.startswith("model ") and r.stdout.rstrip().endswith(
            f"atexit ran {runtime.COMMAND_GC_THRESHOLD}")
    assert gc.get_threshold()[0] != runtime.COMMAND_GC_THRESHOLD     # not in this process


@pytest.mark.parametrize("m", [2, 3])
def test_natural_spline_at_a_run_of_knots_equals_its_evaluation(m, monkeypatch):
    """Evaluated at a run of consecutive knots (all of them, or the tool's time range), the
    numpy natural splines return the knot data: bit for bit what their evaluation gives at the
    same points when they are not a run (Horner inside, the Taylor end at the last knot)."""
    import arthron.models.natural_splines as ns
    rng = np.random.default_rng(7 + m)
    x = np.cumsum(rng.uniform(0.5, 1.5, 500)) * 0.01
    y = np.cumsum(rng.standard_normal((500, 5)), axis=0)
    monkeypatch.setattr(runtime, "light_imports", True)
    sp = ns._NaturalSpline(x, y, m)
    assert sp.spline is None
    for run in (x, x[17:311], x[-40:], x[:1]):
        for order in range(m):
            fast = sp(run, order)
            slow = sp(np.concatenate([run, [x[0] + 1e-9]]), order)[:-1]
            assert np.array_equal(fast, slow), (order, run.size)
            assert not np.shares_memory(fast, sp._quintic.y)        # a copy, not the spline's data


def test_simm_spline_values_and_derivatives_in_one_pass():
    """SimmSpline/MultiplierFunction.value_and_derivatives equal value() and derivative(x, 1/2)
    bit for bit, inside, on the knots, at the ends and beyond them."""
    from arthron.models.functions import MultiplierFunction, SimmSpline
    rng = np.random.default_rng(3)
    xk = np.cumsum(rng.uniform(0.1, 0.5, 12)) - 2.0
    f = SimmSpline(xk, np.sin(xk) + 0.1 * rng.standard_normal(12))
    x = np.concatenate([xk, rng.uniform(xk[0] - 1, xk[-1] + 1, 400), [xk[0] + 1e-14, xk[-1] - 1e-14]])
    for g in (f, MultiplierFunction(f, -1.7)):
        v, d1, d2 = g.value_and_derivatives(x)
        assert np.array_equal(v, g.value(x)) and np.array_equal(d1, g.derivative(x, 1))
        assert np.array_equal(d2, g.derivative(x, 2))
        v1, e1, none = g.value_and_derivatives(x, 1)
        assert none is None and np.array_equal(v1, v) and np.array_equal(e1, d1)
