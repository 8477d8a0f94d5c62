"""The words a step or a run can be in: enums whose values are the words shown and stored
(they compare equal to those strings, so reports and stamps keep their JSON)."""

from __future__ import annotations

from enum import Enum


class Word(str, Enum):
    """A str enum that prints and formats as its value."""

    def __str__(self) -> str:
        return str(self.value)

    def __format__(self, spec: str) -> str:
        return format(str(self.value), spec)


class StepStatus(Word):
    """What the plan says of a step."""

    UP_TO_DATE = "up to date"
    NEEDS_RUN = "needs run"
    NOT_SELECTED = "optional"  # an optional step nobody asked for: planned, shown, never run


class Outcome(Word):
    """What running a step came to."""

    RAN = "ran"
    SKIPPED = "skipped"
    FAILED = "failed"
    INTERRUPTED = "interrupted"


class Verdict(Word):
    """What a validation check, a case or a whole validation came to."""

    PASS = "PASS"
    FAIL = "FAIL"
    SKIPPED = "SKIPPED"


class CheckLevel(Word):
    """A doctor row's status."""

    PASS = "pass"
    WARN = "warn"
    FAIL = "fail"
    SKIP = "skip"
