"""Which CANN package ships a toolkit header or a find_package module's files: data
(`recipes/toolkit/*.toml`, each row citing its source), so a new package is a row, not
code.  An include no row matches is not a toolkit header cannbuild can vouch for (the
C++ library, a third-party header, a generated one): it is counted, not checked.
"""

from __future__ import annotations

from typing import Dict, Optional, Sequence, Tuple

from msgspec import Struct, field

from .. import facts

# The package a recipe's own opbase steps provide (built and installed into the workspace
# overlay before ops-transformer configures, recipes/8.5.toml).
OPBASE_PACKAGE = "opbase"


class Shipper(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    prefix: str  # "register/" (a folder) or "securec.h" (a header at the top)
    package: str  # the CANN package (share/info/<package>) or project that ships it
    source: str  # where that is read


class PackagesFile(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    header: Tuple[Shipper, ...] = ()
    module: Dict[str, str] = field(default_factory=dict)  # find_package module -> package


def shippers() -> Tuple[Shipper, ...]:
    """Every header row, the shipped files' first: the first row that matches wins."""
    return tuple(row for _, f in facts.read("toolkit", PackagesFile) for row in f.header)


def shipper_of(header: str, rows: Optional[Sequence[Shipper]] = None) -> Optional[Shipper]:
    """The row whose prefix `header` starts with (a folder) or is (a top-level header)."""
    for row in shippers() if rows is None else rows:  # "base/alog_pub.h" before "base/"
        if header == row.prefix or (row.prefix.endswith("/") and header.startswith(row.prefix)):
            return row
    return None


def module_package(module: str) -> str:
    known = {k: v for _, f in facts.read("toolkit", PackagesFile) for k, v in f.module.items()}
    return known.get(module, f"the package that ships {module} (not in cannbuild's table)")
