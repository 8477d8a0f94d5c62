"""Validation's work that does not depend on the package, done on a thread while the build
runs: torch's import and each case's seeded inputs and float64 reference (about 4 s of a
cold `setup --sandbox`, issue 42).  A build's compiles leave a core idle most of the time;
the validation after it takes the memo instead of working it out again."""

from __future__ import annotations

import contextlib
import threading
import warnings
from typing import TYPE_CHECKING, Dict, Mapping, Optional, Sequence

from ..host.pystack import read_python_stack
from . import validation_target
from .inputs import FA_CHECK
from .registry import CHECKS, NumericCheck

if TYPE_CHECKING:
    from ..build.session import Session


class Ahead:
    """The thread and what it has worked out, per check; `close` (the run ended first) stops
    it between cases and waits for it."""

    def __init__(self, checks: Mapping[str, NumericCheck], case_names: Sequence[str]) -> None:
        self.memos: Dict[str, Dict[str, object]] = {name: {} for name in checks}
        self._stop = threading.Event()
        # torch warns on its import where numpy is absent; warnings' filters are the
        # process's, so they are set here on the caller's thread, not on the worker's
        self._quiet: Optional[contextlib.ExitStack] = contextlib.ExitStack()
        self._quiet.enter_context(warnings.catch_warnings())
        warnings.filterwarnings("ignore", "Failed to initialize NumPy", UserWarning)
        self._thread = threading.Thread(
            target=self._work, args=(checks, case_names), name="validate-ahead", daemon=True
        )
        self._thread.start()

    def _work(self, checks: Mapping[str, NumericCheck], case_names: Sequence[str]) -> None:
        # whatever fails here fails again in the validation, which says so
        with contextlib.suppress(Exception):
            # a plain import: without torch_npu nothing auto-loads (start() checks), so the
            # environment the build reads is left alone
            import torch

            # one intra-op thread: the build's compiles have the other core, and torch's
            # OpenMP threads spin at each barrier while a compiler holds the core they wait for
            threads = torch.get_num_threads()
            torch.set_num_threads(1)
            try:
                for name, check in checks.items():
                    check.prepare(case_names, self.memos[name], self._stop)
            finally:
                torch.set_num_threads(threads)

    def memo(self, check: str) -> Dict[str, object]:
        """What was worked out for `check`, once the thread is done."""
        self._end()
        return self.memos.get(check, {})

    def close(self) -> None:
        self._stop.set()
        self._end()

    def _end(self) -> None:
        self._thread.join()
        if self._quiet is not None:
            self._quiet.close()
            self._quiet = None


def start(session: Session, case_names: Sequence[str]) -> Optional[Ahead]:
    """The work ahead of `session`'s validation, where it will run its checks here (a
    target, the CPU torch installed) and torch's import touches nothing the build reads (no
    torch_npu to auto-load, which the validation turns off through the environment)."""
    stack = read_python_stack()
    # the CPU build only: an accelerator's build that crashes on import (missing driver
    # libraries) would take the build with it, not just the validation
    if stack.torch is None or stack.torch_npu is not None or stack.torch_device is not None:
        return None
    if validation_target(session)[0] is None:
        return None
    checks: Dict[str, NumericCheck] = {}
    for spec in session.recipe.validated:
        assert spec.validate is not None
        name = spec.validate.check or FA_CHECK  # as inputs_for names it
        check = CHECKS.get(name)
        if check is not None:
            checks[name] = check
    return Ahead(checks, case_names) if checks else None
