"""Fuzzing of every reader with mutated real files (hypothesis), at a size that runs in seconds.

The long run (>= 10,000 cases per reader, crashes and hangs counted in child processes) is
``python benchmarks/fuzz_readers.py``. A case passes when the reader (and, for models, every
compile step) returns or raises a typed arthron error whose message prints plain numbers. The
cases here are derandomized (the same ones every run, so CI is reproducible); the long run
explores at random.
"""
from __future__ import annotations

import tempfile
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings, strategies as st

from conftest import needs_data
import fuzz_harness as fh

CASES = 40


@needs_data
@pytest.mark.parametrize("name", list(fh.TARGETS))
def test_reader_survives_mutations(name):
    target = fh.TARGETS[name]
    base = target.base_bytes()
    folder = Path(tempfile.mkdtemp(prefix=f"arthron-fuzz-{name}-"))
    kinds = fh.XML_KINDS if target.xml else fh.TEXT_KINDS

    @settings(max_examples=CASES, deadline=None, database=None, derandomize=True,
              suppress_health_check=list(HealthCheck))
    @given(st.builds(fh.Mutation, st.sampled_from(kinds), st.integers(0, 2 ** 31),
                     st.sampled_from(fh.BAD_VALUES), st.binary(min_size=1, max_size=8)))
    def case(m):
        finding = fh.run_case(target, base, m, folder)
        assert finding is None, f"{name} {m}: {finding}"

    case()
