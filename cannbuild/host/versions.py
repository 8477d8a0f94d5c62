"""CANN and Ascend driver version grammar, with the release-history order.

`packaging.version` rejects `8.0.RC2.alpha003`, `8.1.RC1.alpha001` and every
driver version, and sorts `8.0.0.alpha001` before `8.0.RC1`; hence a custom key.

Order (reference cann-environment.md §2): `X.Y.RC1 < X.Y.RC2 < … < X.Y.0 <
X.Y.1`; `alphaNNN` builds come before the release they name.  Before 8.5 a
community `.betaN` is the same release as the commercial one, so it compares
equal; from 8.5 on `-beta.N` / `-rc.N` are pre-releases (`9.0.0-beta.2 <
9.0.0`).  Internal builds (`8.0.T63`, `8.2.RC1.B020`, `9.2.0.b2`) parse but
refuse to be ordered.
"""

from __future__ import annotations

import functools
import re
from typing import Optional, Tuple

from msgspec import Struct

# Released forms: `8.0.RC1`, `8.2.RC1` (ascend_toolkit_install.info `version=`), `8.0.0`,
# `8.0.RC2.alpha003`, `8.0.0.beta1`, `8.5.0-beta.1`, `9.0.0-beta.2`; image tags lower-case
# them (`8.1.rc1`), hence IGNORECASE.  This is the key reference cann-environment.md §2
# recommends after checking it against every version seen there.
_CANN_RE = re.compile(
    r"^(?P<major>\d+)\.(?P<minor>\d+)\.(?:RC(?P<rc>\d+)|(?P<patch>\d+))"
    r"(?:[.-](?P<pre>alpha|beta|rc)\.?(?P<pre_n>\d*))?$",
    re.IGNORECASE,
)
# Internal builds seen in the wild: `8.0.T63` (version.cfg `[7.6.T13.0.B094:8.0.T63]`),
# `8.2.RC1.B020`, `9.2.0.b2`.
_CANN_INTERNAL_RE = re.compile(
    r"^(?P<major>\d+)\.(?P<minor>\d+)\."
    r"(?:T(?P<t>\d+)|(?:RC(?P<rc>\d+)|(?P<patch>\d+))\.(?P<b>[Bb])(?P<b_n>\d+))$",
    re.IGNORECASE,
)
# Driver versions: `Version=` lines (`24.1.rc2.2`, `25.0.rc1.1`, `25.2.0`, `25.5.1`) and
# npu-smi banners (`24.1.rc3.7`, `25.3.rc1.b061`); the alphaN/betaN tails are forms
# torch_npu's DriverVersionToNum accepts.
_DRIVER_RE = re.compile(
    r"^(?P<major>\d+)\.(?P<minor>\d+)\.(?:rc(?P<rc>\d+)|(?P<patch>\d+))"
    r"(?:\.(?:(?P<pre>alpha|beta)(?P<pre_n>\d+)|b(?P<build>\d+)|(?P<sub>\d+)))?$",
    re.IGNORECASE,
)
# `M.m.Tn` is the internal driver form DriverVersionToNum knows; any dotted tail is kept.
_DRIVER_INTERNAL_RE = re.compile(r"^(?P<major>\d+)\.(?P<minor>\d+)\.T(?P<t>\d+)(?:\.\w+)*$", re.I)


class VersionNotComparable(TypeError):
    """Raised when an internal build version is ordered against another."""


@functools.total_ordering
class _Version(Struct, frozen=True, kw_only=True):
    """What CANN and driver versions share: the release and the order of `_key`."""

    text: str
    major: int
    minor: int
    rc: Optional[int] = None
    patch: Optional[int] = None
    internal: bool = False
    _key: Tuple[int, ...] = ()

    @property
    def release(self) -> str:
        """`8.0.RC1`, `8.5.0`, `25.3.RC1`: the version without pre-release or build suffixes;
        an internal `M.m.Tn` build belongs to no release and is itself."""
        if self.rc is None and self.patch is None:
            return self.text
        tail = f"RC{self.rc}" if self.rc is not None else str(self.patch)
        return f"{self.major}.{self.minor}.{tail}"

    def key(self) -> Tuple[int, ...]:
        if self.internal:
            raise VersionNotComparable(
                f"{self.text!r} is an internal build; it has no place in the release order "
                "and cannot be compared"
            )
        return self._key

    def __eq__(self, other: object) -> bool:
        if not isinstance(other, type(self)):
            return NotImplemented
        if self.internal or other.internal:
            return self.text == other.text
        return self._key == other._key

    def __hash__(self) -> int:
        return hash(self.text if self.internal else self._key)

    def __lt__(self, other: object) -> bool:
        if not isinstance(other, type(self)):
            return NotImplemented
        return self.key() < other.key()

    def __str__(self) -> str:
        return self.text


class CannVersion(_Version, frozen=True, kw_only=True):
    """A parsed CANN version; order follows the release history."""

    pre: Optional[str] = None
    pre_n: int = 0

    @property
    def train(self) -> str:
        """`8.3`, `8.5`, `9.0`: what recipes and compat tables key on."""
        return f"{self.major}.{self.minor}"

    @property
    def comparable(self) -> bool:
        return not self.internal

    @property
    def is_prerelease(self) -> bool:
        return bool(self._key) and self._key[4] < 0

    @property
    def own_ops_release(self) -> str:
        """The operator release a toolkit of this version builds by default: its release,
        but a `M.m.p-beta.N` or `-rc.N` pre-release (in the tags' form), since every ops repo tags
        those (opbase, ops-transformer, ops-math, ops-nn, ops-cv: v9.0.0-beta.2,
        v9.0.0-rc.1) and its headers are the pre-release's, not the final release's."""
        if (
            self.is_prerelease
            and self.pre in ("beta", "rc")
            and self.patch is not None
            and self.pre_n
        ):
            return f"{self.release}-{self.pre}.{self.pre_n}"  # 9.0.0.beta.1 too: the tag's form
        return self.release


def parse_cann_version(text: str) -> CannVersion:
    """Parse any CANN version form; raise ValueError naming the text otherwise."""
    raw = (text or "").strip()
    m = _CANN_RE.match(raw)
    if m:
        major, minor = int(m["major"]), int(m["minor"])
        rc = int(m["rc"]) if m["rc"] is not None else None
        patch = int(m["patch"]) if m["patch"] is not None else None
        pre = m["pre"].lower() if m["pre"] else None
        pre_n = int(m["pre_n"]) if m["pre_n"] else 0
        # Phase 0 for RCn, 1 for a patch number: every RC of a train sorts before its X.Y.0.
        phase, number = (0, rc) if rc is not None else (1, patch)
        pre_rank = _cann_pre_rank(major, minor, pre)
        # Only a pre-release's own number orders it (alpha001 < alpha002); a release ignores it.
        # This is the release history, not torch_npu's VersionToNum, which puts 8.0.RC2.alpha003
        # after 8.0.RC2.
        key = (major, minor, phase, int(number or 0), pre_rank, pre_n if pre_rank < 0 else 0)
        return CannVersion(
            text=raw,
            major=major,
            minor=minor,
            rc=rc,
            patch=patch,
            pre=pre,
            pre_n=pre_n,
            internal=False,
            _key=key,
        )
    m = _CANN_INTERNAL_RE.match(raw)
    if m:
        rc = int(m["rc"]) if m["rc"] is not None else None
        patch = int(m["patch"]) if m["patch"] is not None else None
        return CannVersion(
            text=raw,
            major=int(m["major"]),
            minor=int(m["minor"]),
            rc=rc,
            patch=patch,
            internal=True,
        )
    raise ValueError(
        f"{raw!r} is not a CANN version. Expected forms like 8.0.RC1, 8.0.RC2.alpha003, "
        "8.0.0.beta1, 8.5.0, 8.5.0-beta.1 or 9.0.0 (internal builds like 8.0.T63 are read "
        "but not ordered)."
    )


def _cann_pre_rank(major: int, minor: int, pre: Optional[str]) -> int:
    if pre is None:
        return 0
    # From 8.5 the scheme is SemVer-like (hicann/release-management directory names), and
    # torch_npu's VersionV2ToNum weighs alpha < beta < rc < release the same way.
    if (major, minor) >= (8, 5):
        return {"alpha": -3, "beta": -2, "rc": -1}[pre]
    # Before 8.5 a community betaN / rcN is the commercial release itself.
    return -1 if pre == "alpha" else 0


class DriverVersion(_Version, frozen=True, kw_only=True):
    """An Ascend HDK driver version (`24.1.rc3.7`, `25.3.rc1.b061`, `25.5.1`)."""

    @property
    def series(self) -> str:
        """`25.5`: the HDK line compat tables talk about as `25.5.X`."""
        return f"{self.major}.{self.minor}"


def parse_driver_version(text: str) -> DriverVersion:
    raw = (text or "").strip()
    m = _DRIVER_RE.match(raw)
    if m:
        major, minor = int(m["major"]), int(m["minor"])
        rc = int(m["rc"]) if m["rc"] is not None else None
        patch = int(m["patch"]) if m["patch"] is not None else None
        phase, number = (0, rc) if rc is not None else (1, patch)
        # A `.alphaN` / `.betaN` tail ranks below its release; a `.7`, `.1` or `.b061` tail
        # numbers a build of it and ranks above the bare `24.1.rc3`.
        pre = (m["pre"] or "").lower()
        pre_rank = {"alpha": -2, "beta": -1}.get(pre, 0)
        sub = int(m["pre_n"] or m["build"] or m["sub"] or 0)
        key = (major, minor, phase, int(number or 0), pre_rank, sub)
        return DriverVersion(
            text=raw, major=major, minor=minor, rc=rc, patch=patch, internal=False, _key=key
        )
    m = _DRIVER_INTERNAL_RE.match(raw)
    if m:
        return DriverVersion(text=raw, major=int(m["major"]), minor=int(m["minor"]), internal=True)
    raise ValueError(
        f"{raw!r} is not an Ascend driver version. Expected forms like 24.1.rc3, 24.1.rc3.7, "
        "25.3.rc1.b061, 25.2.0 or 25.5.1."
    )
