"""A signal held while a child is started and handed over, then delivered as it would have
been (cannbuild/signals.py: deferred)."""

from __future__ import annotations

import pytest
from warmcli import python_c

# SIGTERM arrives while the block runs: the block finishes (its child is in the hands of
# whoever stops it), then the run ends as SIGTERM ends it
_HELD = """
import os, signal, sys
from cannbuild.errors import SignalInterrupt
from cannbuild.signals import deferred, on_termination
on_termination()
try:
    with deferred():
        os.kill(os.getpid(), getattr(signal, sys.argv[1]))
        print("block finished", flush=True)
    print("not reached", flush=True)
except (SignalInterrupt, KeyboardInterrupt) as exc:
    print("then", type(exc).__name__, flush=True)
print("handler", signal.getsignal(signal.SIGTERM) is not signal.SIG_DFL, flush=True)
"""


@pytest.mark.parametrize("sig", ["SIGTERM", "SIGINT", "SIGHUP"])
def test_a_signal_during_a_deferred_block_is_delivered_when_it_ends(sig):
    proc = python_c(_HELD, sig, timeout=60)
    expected = "KeyboardInterrupt" if sig == "SIGINT" else "SignalInterrupt"
    assert proc.stdout.split("\n")[:3] == ["block finished", f"then {expected}", "handler True"]
    assert "not reached" not in proc.stdout
