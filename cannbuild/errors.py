"""Error classes, one exit code each, caught once at the task boundary.

A user mistake must end as one paragraph (what is wrong, what was expected,
how to fix it) and a non-zero exit code, never as a traceback.
"""

from __future__ import annotations

from typing import Optional


class CannbuildError(Exception):
    """A failure cannbuild understands; `hint` says what to do next."""

    exit_code = 1

    def __init__(self, message: str, hint: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def paragraph(self) -> str:
        text = self.message.rstrip()
        if self.hint:
            text = f"{text} {self.hint.rstrip()}"
        return text


class UsageError(CannbuildError):
    """A flag, config key or value is wrong."""

    exit_code = 2


class ToolkitError(CannbuildError):
    """No usable CANN toolkit where the user or the host says it is."""

    exit_code = 3


class StepFailed(CannbuildError):
    """A build, install or fetch step exited non-zero."""

    exit_code = 4


class ValidationFailed(CannbuildError):
    exit_code = 5


class LockDrift(CannbuildError):
    """`--locked` and the inputs differ from `cannbuild.lock`."""

    exit_code = 6


class WorkspaceBusy(CannbuildError):
    exit_code = 7


class OfflineViolation(CannbuildError):
    """Something tried to reach the network in `--offline` mode."""

    exit_code = 8


class NoContainerEngine(CannbuildError):
    """Distinct from a failed build: there was nothing to build with."""

    exit_code = 9


class SandboxError(CannbuildError):
    exit_code = 10


class Interrupted(CannbuildError):
    exit_code = 130
