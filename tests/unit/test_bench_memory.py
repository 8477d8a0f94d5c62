"""bench: the CPU routes' peak memory is the resident-set growth of one call."""

from __future__ import annotations

import sys

import pytest

from cannbuild.bench.memory import rss_growth

MIB = 1 << 20
pytestmark = pytest.mark.skipif(not sys.platform.startswith("linux"), reason="reads /proc")


def test_a_call_that_touches_8_mib_grows_by_about_8_mib_each_time_even_when_pages_are_reused():
    """glibc keeps a freed 8 MiB block resident for the next one; uncounted, the second
    call would look free."""
    sizes = [rss_growth(lambda: len(bytearray(8 * MIB)))[1] for _ in range(4)]
    assert all(s is not None and 7 * MIB < s < 10 * MIB for s in sizes), sizes


def test_a_call_that_allocates_nothing_grows_by_almost_nothing():
    result, grown = rss_growth(lambda: sum(range(1000)))
    assert result == 499500 and grown is not None and grown < MIB
