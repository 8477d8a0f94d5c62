"""What validation needs from a session for one repository, as plain data (the checks do
not see the build session)."""

from __future__ import annotations

from pathlib import Path
from typing import Dict, Mapping, Optional, Sequence

from msgspec import Struct, field

# the numerical check a recipe's [repos.X.validate] names when it names none (an old
# top-level [validate], whose package was judged by the FlashAttention cases)
FA_CHECK = "ops-transformer.flash_attention"


class ValidationInputs(Struct, frozen=True, kw_only=True):
    vendor_dir: Path
    library: Path
    symbols: Sequence[str]
    env: Mapping[str, str]
    workdir: Path
    target: Optional[str]  # "sandbox", "npu" or None (no device)
    no_device_reason: str
    example_argv: Optional[Sequence[str]] = None
    example_command: str = ""
    example_cwd: Optional[Path] = None
    case_names: Sequence[str] = ()
    example_lookup: str = "custom-opp"
    vendor_name: str = "custom"
    repo: str = ""  # the repository whose package this judges
    check: str = FA_CHECK  # the numerical check (registry.py)
    why: str = ""  # why the recipe picked that operator
    op: str = ""  # that operator (the recipe's example_op)
    built_ops: Sequence[str] = ()  # the operators the package was built with (--ops)
    # This run's scratch: what one route computed that a later one reuses (FlashAttention's
    # float64 references: its C API and torch_npu routes judge the same seeded inputs).
    memo: Dict[str, object] = field(default_factory=dict)
