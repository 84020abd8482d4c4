"""Session.compare_ahead: a pair whose models are cached but whose comparison is not stored gets it
computed and stored by a forked child while the caller (the explorer) starts; what is stored then is
the comparison the caller would compute itself."""

from __future__ import annotations

import pytest

from kerneldiff.core import comparison_cache as cc
from kerneldiff.core.ingest import cache as model_cache
from kerneldiff.core.session import Session

from test_comparison_cache import cache_home, entries, pair, same  # noqa: F401 - a fixture among them


def session(paths, **kw):
    s = Session(paths, keep_comparisons=True, **kw)
    s.probe(strict=False)
    return s


def test_cached_models_get_their_comparison_stored_by_the_child(cache_home):  # noqa: F811
    paths = pair(cache_home)
    first = session(paths)
    first.load_all()                                  # both models now in the model cache
    for f in entries():
        f.unlink()                                    # ... and no comparison stored
    ahead = session(paths).compare_ahead("all")
    assert ahead is not None and ahead() is True
    assert len(entries()) == 1
    s = session(paths)
    stored = s.stored_comparison("all")
    assert stored is not None and s.models == [None, None]
    assert same(stored, first.compare("all", keep=False))   # what the explorer would have computed
    # stored now: nothing left to do ahead
    assert session(paths).compare_ahead("all") is None


def test_a_trace_outside_the_model_cache_is_left_to_the_callers_loads(cache_home):  # noqa: F811
    paths = pair(cache_home)
    s = session(paths)
    s.load(0)                                          # only A cached
    ahead = session(paths).compare_ahead("all")
    assert ahead is not None and ahead() is False
    assert entries() == []
    assert not model_cache.has(paths[1], s.classifier)  # the child read nothing from B's JSON


@pytest.mark.parametrize("how", ["one trace", "no cache", "not kept"])
def test_nothing_ahead_where_it_does_not_apply(cache_home, how):  # noqa: F811
    paths = pair(cache_home)
    s = {"one trace": lambda: session(paths[:1]),
         "no cache": lambda: session(paths, use_cache=False),
         "not kept": lambda: Session(paths)}[how]()
    assert s.compare_ahead("all") is None


def test_a_failing_child_leaves_the_comparison_to_the_caller(cache_home, tmp_path):  # noqa: F811
    paths = pair(cache_home)
    session(paths).load_all()
    for f in entries():
        f.unlink()
    s = session(paths)
    ahead = s.compare_ahead("no such phase")          # the child's compare raises ValueError
    assert ahead is not None and ahead() is False
    assert entries() == []
