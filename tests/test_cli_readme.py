"""Every ``arthron ...`` command the README's "Command line" section shows parses with the
command's own argument parser: the command exists, each option it names is an option of that
command, each value it lists for an option with fixed choices (``--on child|parent``) is one of
them, and the command as a whole (optional parts taken, the first of alternatives, placeholders
of numeric options given a number) is accepted by ``arthron``'s parser; so do the two commands
of "Shoulder abduction study". The README is read as a new user reads it: the indented code
lines of the section, their continuation lines and the ``# or: arthron ...`` alternatives in
their comments."""
from __future__ import annotations

import re
import shlex
from pathlib import Path

import pytest

from arthron.cli import build_parser

README = Path(__file__).resolve().parents[1] / "README.md"


def _section_commands(title: str = "Command line") -> list:
    """The ``arthron`` command lines of the README section ``## <title>`` (continuations joined)."""
    text = README.read_text(encoding="utf-8")
    section = text.split(f"\n## {title}\n", 1)[1].split("\n## ", 1)[0]
    commands, current = [], None
    for line in section.splitlines():
        if not line.startswith("    "):
            if current:
                commands.append(current)
            current = None
            continue
        body = line[4:]
        code, _, comment = body.partition(" #")
        if body.lstrip().startswith("#"):
            code, comment = "", body.lstrip()[1:]
        if code.lstrip().startswith("arthron "):
            if current:
                commands.append(current)
            current = code.strip()
        elif current is not None and (code.lstrip().startswith(("[", "-")) or current.endswith("\\")):
            current += " " + code.strip()       # a continuation line of the synopsis
        elif current is not None:
            commands.append(current)             # anything else (Python in the same block) ends it
            current = None
        m = re.search(r"\bor: (arthron .*)$", comment)
        if m:
            if current:
                commands.append(current)
            commands.append(m.group(1).strip())
            current = None
    if current:
        commands.append(current)
    return commands


def _unwrap(synopsis: str) -> str:
    """A synopsis as one command: the first of ``A | B`` alternatives inside brackets, bracketed
    prose (``[subject options as study]``) and ``...`` dropped, other brackets removed."""
    s = synopsis.replace("\\ ", " ")
    s = re.sub(r"\s\|\s[^\[\]]*", "", s)            # [-j N | --scheduler ADDR] -> [-j N]
    while True:
        t = re.sub(r"\[([^\[\]]*)\]", lambda m: m.group(1) if re.search(r"(^|\s)-", m.group(1)) else "", s)
        if t == s:
            break
        s = t
    return " ".join(w for w in s.split() if w not in ("...", "\\"))


def _subparser(command: str):
    parser = build_parser()
    return parser, parser._subparsers._group_actions[0].choices.get(command)


COMMANDS = _section_commands()
#: the concrete commands of the study section (`arthron study --parameter-study`, the Thoracoscapular model)
STUDY_COMMANDS = _section_commands("Shoulder abduction study")


def test_the_section_has_commands():
    assert len(COMMANDS) >= 25 and all(c.startswith("arthron ") for c in COMMANDS)
    names = {shlex.split(c)[1] for c in COMMANDS}
    every = set(build_parser()._subparsers._group_actions[0].choices)
    assert every <= names, f"commands the section does not show: {sorted(every - names)}"
    assert any(" or: " not in c and c.startswith("arthron ik --setup") for c in COMMANDS)  # from a comment
    assert len(STUDY_COMMANDS) == 2 and "--model-subject m,1.80,75" in STUDY_COMMANDS[1]


@pytest.mark.parametrize("synopsis", COMMANDS + STUDY_COMMANDS)
def test_readme_command_parses(synopsis, capsys):
    words = shlex.split(_unwrap(synopsis))
    parser, sub = _subparser(words[1])
    assert sub is not None, f"{synopsis}: no command '{words[1]}'"
    by_option = {o: a for a in sub._actions for o in a.option_strings}
    argv = words[1:]
    for i, w in enumerate(argv):
        if not w.startswith("-") or re.fullmatch(r"-[\d.,:]+", w):
            continue
        opt = w.split("=", 1)[0]
        assert opt in by_option, f"{synopsis}: 'arthron {words[1]}' has no option {opt}"
        action = by_option[opt]
        if action.nargs == 0 or i + 1 >= len(argv):
            continue
        value = argv[i + 1]
        if action.choices is not None:       # each listed alternative is an accepted value
            for alt in value.split("|"):
                assert (action.type(alt) if action.type else alt) in action.choices, \
                    f"{synopsis}: {opt} {alt} is not one of {list(action.choices)}"
        if action.type in (int, float):      # a placeholder (KG, DEG, N, T0 T1) stands for a number
            for j in range(i + 1, min(i + 1 + (action.nargs if isinstance(action.nargs, int) else 1), len(argv))):
                try:
                    action.type(argv[j])
                except ValueError:
                    argv[j] = "1"
    argv = [w.split("|")[0] if "|" in w else w for w in argv]
    try:
        parser.parse_args(argv)
    except SystemExit:
        pytest.fail(f"{synopsis}: refused by the parser: {capsys.readouterr().err.strip()}")


def test_unwrap_keeps_options_and_drops_prose():
    assert _unwrap("arthron demo [-o DIR] [subject options as study]") == "arthron demo -o DIR"
    assert _unwrap("arthron batch S.toml [-j N | --scheduler tcp://H:8786] [--check]") == \
        "arthron batch S.toml -j N --check"
    assert _unwrap("arthron id M Q [--body-forces a,b|All [--body-forces-output F]]") == \
        "arthron id M Q --body-forces a,b|All --body-forces-output F"


def test_a_wrong_option_in_a_synopsis_is_caught(capsys):
    """The check fails on an option the command lacks and on a value outside the choices."""
    with pytest.raises(AssertionError, match="has no option --bodys"):
        test_readme_command_parses("arthron c3d T.c3d -o DIR [--bodys a,b]", capsys)
    with pytest.raises(AssertionError, match="not one of"):
        test_readme_command_parses("arthron jr M Q [--on child|distal] -o OUT.sto", capsys)
    with pytest.raises(pytest.fail.Exception, match="refused by the parser"):
        test_readme_command_parses("arthron info", capsys)
    test_readme_command_parses("arthron id M.osim Q.mot [--time-range T0 T1] [--lowpass HZ] -o OUT.sto", capsys)
