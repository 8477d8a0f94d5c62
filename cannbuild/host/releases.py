"""Which operator release upstream publishes for which toolkit: the release pairing table.

From CANN 9.0 the operator packages are released apart from the toolkit: a release
note of hicann/release-management lists, per ops release, the toolkits it is published
for ("CANN组合包版本配套关系" / "CANN ops与Toolkit配套关系") and, per operator
sub-package, its source tag and the CANN releases it goes with ("独立升级子包版本配套关系").
`--ops-release` builds the operator sources of another release than the toolkit's only
where a row here publishes that pairing.  Each row cites the note it was read from
(`RM@<commit>:<path>` and its section; the 9.0.0 note from the local snapshot with its
lines, the later ones from the search index at the commit given).
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from msgspec import Struct

from ..errors import UsageError
from .versions import CannVersion, parse_cann_version

RM = "hicann/release-management"
TABLE = "cannbuild/host/releases.py"
# the ops bundle and the ops-transformer sub-package: the rows that speak for the sources
# cannbuild builds.  cann-opbase's rows pair an opbase *package* (the optional opbase-build
# step); from 9.0 ops-transformer compiles the opbase commit it pins
# (OT@v9.0.1:cmake/third_party/opbase.cmake:10 = 929902e5), not the opbase tag.
BUILT_PACKAGES = ("ascend-cann-ops", "cann-ops-transformer")
# `9.0.x` in a note (9.1.1's tables): any 9.0 release
_ANY_PATCH = re.compile(r"(\d+)\.(\d+)\.x", re.IGNORECASE)


class OpsPairing(Struct, frozen=True, kw_only=True):
    """One row of a release note: a package at one ops release and the toolkits (CANN
    releases) it is published for."""

    package: str  # ascend-cann-ops (the ops bundle), cann-ops-transformer, cann-opbase
    ops: str  # the ops release: 9.0.1
    toolkits: Tuple[str, ...]  # 9.0.0, 8.5.2; 9.0.x = any 9.0 release
    source: str  # the note and its section
    tag: Optional[str] = None  # the source tag the note gives (版本源码标签), none for the bundle


_N900 = f"{RM}@68ef36b:9.0.0/release-notes.md"
_N901 = f"{RM}@cc6f9c23:9.0.1/release-notes.md"  # the same tables at @20e00cd8
_N910 = f"{RM}@9bf36e97:9.1.0/release-notes.md"  # the same tables at @03fc5851; "（开发中）"
_N911 = f"{RM}@0436983c:9.1.1/release-notes.md"
_N920B1 = f"{RM}@17483ebf:9.2.0-beta.1/release-notes.md"
_N920B2 = f"{RM}@0159f9de:9.2.0-beta.2/release-notes.md"
_BUNDLE_90 = "§2 CANN组合包版本配套关系"
_BUNDLE_91 = "§CANN ops与Toolkit配套关系"
_OPS_TK_85_90 = ("9.0.0", "8.5.2")
_OPS_TK_91 = ("9.1.0", "9.0.0", "8.5.2")
_OPS_TK_911 = ("9.1.x", "9.0.x", "8.5.2")


def _row(package: str, ops: str, toolkits: Tuple[str, ...], source: str) -> OpsPairing:
    tag = None if package == "ascend-cann-ops" else f"v{ops}"
    return OpsPairing(package=package, ops=ops, toolkits=toolkits, source=source, tag=tag)


PAIRINGS: Tuple[OpsPairing, ...] = (
    # CANN 9.0.0 (the first note with the tables; 8.5.0's has none, 8.5.2 has no note)
    _row("ascend-cann-ops", "9.0.0", _OPS_TK_85_90, f"{_N900}:21 {_BUNDLE_90}"),
    _row("ascend-cann-ops", "8.5.2", _OPS_TK_85_90, f"{_N900}:22 {_BUNDLE_90}"),
    _row("cann-ops-transformer", "9.0.0", _OPS_TK_85_90, f"{_N900}:31 §3 独立升级子包"),
    _row("cann-opbase", "9.0.0", ("9.0.0",), f"{_N900}:39 §4 开源子包"),
    # CANN 9.0.1 (not in the local snapshot, no manifest tag; OT/OB tags v9.0.1 exist)
    _row("ascend-cann-ops", "9.0.1", ("9.0.1", "9.0.0", "8.5.2"), f"{_N901} {_BUNDLE_90}"),
    _row("ascend-cann-ops", "9.0.0", _OPS_TK_85_90, f"{_N901} {_BUNDLE_90}"),
    _row("ascend-cann-ops", "8.5.2", _OPS_TK_85_90, f"{_N901} {_BUNDLE_90}"),
    _row("cann-ops-transformer", "9.0.1", ("9.0.1", "9.0.0", "8.5.2"), f"{_N901} §3 独立升级子包"),
    _row("cann-opbase", "9.0.1", ("9.0.1",), f"{_N901} §4 开源子包"),
    # CANN 9.1.0: "CANN ops包已与Toolkit解耦，支持独立升级"; cann-opbase v9.1.0 is listed in
    # the Toolkit and the ops bundle, with no pairing row
    _row("ascend-cann-ops", "9.1.0", _OPS_TK_91, f"{_N910} {_BUNDLE_91}"),
    _row("ascend-cann-ops", "9.0.0", _OPS_TK_91, f"{_N910} {_BUNDLE_91}"),
    _row("ascend-cann-ops", "8.5.2", _OPS_TK_91, f"{_N910} {_BUNDLE_91}"),
    _row("cann-ops-transformer", "9.1.0", _OPS_TK_91, f"{_N910} §CANN ops子包内可独立升级子包"),
    # CANN 9.1.1
    _row("ascend-cann-ops", "9.1.1", _OPS_TK_911, f"{_N911} {_BUNDLE_91}"),
    _row("ascend-cann-ops", "9.0.0", _OPS_TK_911, f"{_N911} {_BUNDLE_91}"),
    _row("ascend-cann-ops", "8.5.2", _OPS_TK_911, f"{_N911} {_BUNDLE_91}"),
    _row("cann-ops-transformer", "9.1.1", _OPS_TK_911, f"{_N911} §CANN ops组合包内可独立升级子包"),
    # CANN 9.2.0 betas: each with its own toolkit only
    _row("ascend-cann-ops", "9.2.0-beta.1", ("9.2.0-beta.1",), f"{_N920B1} {_BUNDLE_91}"),
    _row(
        "cann-ops-transformer",
        "9.2.0-beta.1",
        ("9.2.0-beta.1",),
        f"{_N920B1} §CANN ops组合包内可独立升级子包",
    ),
    _row("ascend-cann-ops", "9.2.0-beta.2", ("9.2.0-beta.2",), f"{_N920B2} {_BUNDLE_91}"),
    _row(
        "cann-ops-transformer",
        "9.2.0-beta.2",
        ("9.2.0-beta.2",),
        f"{_N920B2} §CANN ops组合包内可独立升级子包",
    ),
)


def _parse(text: str) -> Optional[CannVersion]:
    try:
        return parse_cann_version(text)
    except ValueError:
        return None


def toolkit_matches(entry: str, toolkit: CannVersion) -> bool:
    """Whether a note's toolkit entry (`9.0.0`, `9.0.x`) names this toolkit release."""
    wide = _ANY_PATCH.fullmatch(entry)
    if wide:  # a released 9.0 toolkit, not a 9.0.0-beta
        train = f"{wide.group(1)}.{wide.group(2)}"
        return toolkit.train == train and not toolkit.internal and not toolkit.is_prerelease
    listed = _parse(entry)
    return listed is not None and listed == toolkit


def rows_for(ops: CannVersion, packages: Tuple[str, ...] = BUILT_PACKAGES) -> List[OpsPairing]:
    """Every row, of the given packages, about this ops release."""
    return [p for p in PAIRINGS if p.package in packages and _parse(p.ops) == ops]


def published(ops: CannVersion, toolkit: CannVersion) -> Optional[OpsPairing]:
    """The first row that publishes ops `ops` with this toolkit, None when none does."""
    for row in rows_for(ops):
        if any(toolkit_matches(entry, toolkit) for entry in row.toolkits):
            return row
    return None


def toolkits_for(ops: CannVersion) -> Tuple[str, ...]:
    """The toolkits the notes publish this ops release for (each once, as the notes spell
    them, in the order read)."""
    seen: List[str] = []
    for row in rows_for(ops):
        seen += [t for t in row.toolkits if t not in seen]
    return tuple(seen)


def ops_for(toolkit: CannVersion) -> Tuple[str, ...]:
    """The ops releases the notes publish for this toolkit."""
    return tuple(o for o in known_ops() if published(parse_cann_version(o), toolkit))


def known_ops() -> Tuple[str, ...]:
    """The ops releases the table has rows for, oldest first."""
    names = {row.ops for row in PAIRINGS if row.package in BUILT_PACKAGES}
    return tuple(sorted(names, key=parse_cann_version))


class OpsChoice(Struct, frozen=True, kw_only=True):
    """The operator release a session builds: the toolkit's own, or --ops-release."""

    release: str  # what the recipes' refs render from (`v{{ ops_release }}`)
    train: str  # picks the recipe
    given: bool  # --ops-release (or its env/config) chose it
    source: Optional[str] = None  # the row publishing it with this toolkit, when given


def choose_ops(given: Optional[str], toolkit: CannVersion) -> OpsChoice:
    """The toolkit's own release when nothing is given; else the given ops release, refused
    (exit 2, naming the table) where no release note publishes it with this toolkit."""
    if not given:
        return OpsChoice(release=toolkit.release, train=toolkit.train, given=False)
    ops = _parse(given)
    if ops is None:
        raise UsageError(
            f"--ops-release {given!r} is not a CANN release.",
            "Give an ops release such as 9.0.1 (the releases the pairing table knows: "
            f"{', '.join(known_ops())}).",
        )
    if ops.text.lower() == toolkit.release.lower() or (ops == toolkit and not ops.internal):
        # the toolkit's own release: the default, said aloud
        return OpsChoice(release=ops.text, train=ops.train, given=True)
    row = published(ops, toolkit)
    if row is None:
        raise UsageError(unpublished(ops, toolkit), _refusal_hint(ops, toolkit))
    return OpsChoice(release=ops.text, train=ops.train, given=True, source=row.source)


def unpublished(ops: CannVersion, toolkit: CannVersion) -> str:
    where = (
        f"the release pairing table ({TABLE}, read from the {RM} release notes: the ops "
        "bundle and cann-ops-transformer rows)"
    )
    toolkits = toolkits_for(ops)
    if not toolkits:
        return (
            f"--ops-release {ops.text}: {where} has no row for ops {ops.text}, so no toolkit is "
            f"published for it; this toolkit is CANN {toolkit.text}. The table knows ops "
            f"releases {', '.join(known_ops())}."
        )
    cited = "; ".join(sorted({r.source for r in rows_for(ops)}))
    return (
        f"--ops-release {ops.text} is not published for toolkit CANN {toolkit.text}: {where} "
        f"publishes ops {ops.text} only with toolkit{'s' if len(toolkits) > 1 else ''} "
        f"{', '.join(toolkits)} ({cited})."
    )


def _refusal_hint(ops: CannVersion, toolkit: CannVersion) -> str:
    others = ops_for(toolkit)
    instead = (
        f", or pass one the table publishes for CANN {toolkit.text} ({', '.join(others)})"
        if others
        else f" (the table publishes no other ops release for CANN {toolkit.text})"
    )
    return (
        f"Drop --ops-release to build the toolkit's own release {toolkit.release}{instead}, "
        f"or build on a toolkit the table lists for ops {ops.text}."
    )
