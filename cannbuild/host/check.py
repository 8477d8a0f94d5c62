"""One doctor row: the unit every host reading reports in."""

from __future__ import annotations

from typing import Optional

from msgspec import Struct

from ..states import CheckLevel

PASS, WARN, FAIL, SKIP = CheckLevel.PASS, CheckLevel.WARN, CheckLevel.FAIL, CheckLevel.SKIP

STATUSES = (PASS, WARN, FAIL, SKIP)


class Check(Struct, frozen=True, kw_only=True):
    """A pass/warn/fail/skip row; every row that is not pass carries a hint.

    `blocking` marks failures that make a build impossible: `setup` stops there.
    """

    id: str
    status: str
    detail: str
    hint: Optional[str] = None
    blocking: bool = False

    def __post_init__(self) -> None:
        if self.status not in STATUSES:
            raise ValueError(f"unknown check status {self.status!r}")
        if self.status != PASS and not self.hint:
            raise ValueError(f"check {self.id!r} is {self.status} but has no hint")
