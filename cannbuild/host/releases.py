"""Which operator release upstream publishes for which toolkit: the release pairing table.

From CANN 9.0 the operator packages are released apart from the toolkit: a release
note of hicann/release-management lists, per ops release, the toolkits it is published
for ("CANN组合包版本配套关系" / "CANN ops与Toolkit配套关系") and, per operator
sub-package, its source tag and the CANN releases it goes with ("独立升级子包版本配套关系").
`--ops-release` builds the operator sources of another release than the toolkit's only
where a row publishes that pairing: the rows are data, each release's note's in
recipes/facts/<train>.toml, citing the note (`RM@<commit>:<path>` and its section).
"""

from __future__ import annotations

import re
from typing import List, Optional, Tuple

from msgspec import Struct

from ..errors import UsageError
from .published import releases
from .versions import CannVersion, parse_cann_version

RM = "hicann/release-management"
TABLE = "the ops_pairings of recipes/facts/*.toml"
# the ops bundle and the ops-transformer sub-package: the rows that speak for the sources
# cannbuild builds (recipes/facts/9.0.toml says why).
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


def pairings() -> Tuple[OpsPairing, ...]:
    """Every note's rows, in the order of the facts files (oldest note first)."""
    return tuple(
        OpsPairing(
            package=row.package,
            ops=row.ops,
            toolkits=row.toolkits,
            source=f"{rel.note}{'' if row.line is None else f':{row.line}'} {row.section}",
            # the notes give a source tag for each sub-package, none for the ops bundle
            tag=None if row.package == "ascend-cann-ops" else f"v{row.ops}",
        )
        for rel in releases().values()
        for row in rel.ops_pairings
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


def rows_for(ops: CannVersion) -> List[OpsPairing]:
    """Every row, of the packages cannbuild builds, about this ops release."""
    return [p for p in pairings() if p.package in BUILT_PACKAGES and _parse(p.ops) == ops]


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
    names = {row.ops for row in pairings() if row.package in BUILT_PACKAGES}
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
        if _unreleased(toolkit):
            raise UsageError(
                f"CANN {toolkit.text} is an internal build (M.m.Tn): it belongs to no release, "
                "so no operator release or repository tag goes with it.",
                f"Pass a release of its train to build, e.g. --ops-release {toolkit.train}.0 "
                "(no release note pairs one with an internal build: the choice is yours), or "
                "--cann-path to a released toolkit.",
            )
        return OpsChoice(release=toolkit.own_ops_release, train=toolkit.train, given=False)
    ops = _parse(given)
    if ops is None:
        raise UsageError(
            f"--ops-release {given!r} is not a CANN release.",
            "Give an ops release such as 9.0.1 (the releases the pairing table knows: "
            f"{', '.join(known_ops())}).",
        )
    if _unreleased(toolkit) and ops.train == toolkit.train and not ops.internal:
        return OpsChoice(release=ops.text, train=ops.train, given=True)
    if ops.text.lower() == toolkit.release.lower() or (ops == toolkit and not ops.internal):
        # the toolkit's own release: the default, said aloud
        return OpsChoice(release=ops.text, train=ops.train, given=True)
    row = published(ops, toolkit)
    if row is None:
        raise UsageError(unpublished(ops, toolkit), _refusal_hint(ops, toolkit))
    return OpsChoice(release=ops.text, train=ops.train, given=True, source=row.source)


def _unreleased(toolkit: CannVersion) -> bool:
    """An internal `M.m.Tn` build: no release note names it, so only its train pairs it."""
    return toolkit.internal and toolkit.release == toolkit.text


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
