"""doctor: the host read once (reading.py) and judged (judge.py) into one row per check.

The result (`HostReport`) is plain data: the facts later steps build on (the toolkit,
the SoC, the environment `set_env.sh` gives) and one `Check` per question a CANN
engineer would ask.  Bad input becomes a row, never a crash.
"""

from __future__ import annotations

from typing import Any, Dict, List, Mapping, Optional, Tuple

from msgspec import Struct

from ..decoded import to_plain
from ..options import Options
from .check import FAIL, Check
from .hardware import Hardware
from .judge import judge
from .reading import facts_of, read_readings
from .socs import Family
from .toolchain import ToolResult
from .toolkit import Toolkit


class HostReport(Struct, frozen=True, kw_only=True):
    facts: Dict[str, Any]
    checks: Tuple[Check, ...]
    toolkit: Optional[Toolkit]
    hardware: Hardware
    soc: Optional[Family]
    build_env: Optional[Dict[str, str]] = None
    tools: Tuple[ToolResult, ...] = ()

    @property
    def failed(self) -> bool:
        return any(c.status == FAIL for c in self.checks)

    @property
    def blocking(self) -> List[Check]:
        return [c for c in self.checks if c.status == FAIL and c.blocking]

    def to_json(self) -> Dict[str, Any]:
        return {"host": self.facts, "checks": to_plain(self.checks)}


def read_host(options: Options, env: Mapping[str, str]) -> HostReport:
    """The host read and judged: facts, one row per check, the build environment."""
    readings = read_readings(options, env)
    r = readings
    return HostReport(
        facts=facts_of(r, options),
        checks=tuple(judge(readings, options)),
        toolkit=r.toolkit,
        hardware=r.hardware,
        soc=r.soc,
        build_env=r.captured.env if r.captured else None,
        tools=tuple(r.tools),
    )
