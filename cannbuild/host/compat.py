"""Published compatibility tables and the checks made from them.

torch_npu's own import check only knows CANN 6.x, so a torch_npu built for
another CANN goes unnoticed until `undefined symbol` errors; this module
catches that from package metadata alone (reference cann-environment.md §4).
"""

from __future__ import annotations

import re
from types import MappingProxyType
from typing import Mapping, Optional, Tuple

from msgspec import Struct

from .versions import CannVersion, DriverVersion, parse_driver_version

# Ascend/pytorch:COMPATIBILITY.en.md (CANN release -> tested torch_npu versions)
TORCH_NPU_FOR_CANN: Mapping[str, Tuple[str, ...]] = MappingProxyType(
    {
        "8.0.RC1": ("2.2.0", "2.1.0.post4", "1.11.0.post11"),
        "8.0.RC2": ("2.3.1", "2.2.0.post2", "2.1.0.post6", "1.11.0.post14"),
        "8.0.RC3": ("2.4.0", "2.3.1.post2", "2.1.0.post8"),
        "8.0.0": ("2.4.0.post2", "2.3.1.post4", "2.1.0.post10"),
        "8.1.RC1": ("2.5.1", "2.4.0.post4", "2.3.1.post6", "2.1.0.post12"),
        "8.2.RC1": ("2.6.0", "2.5.1.post1", "2.1.0.post13"),
        "8.3.RC1": ("2.8.0", "2.7.1", "2.6.0.post3", "2.1.0.post17"),
        "8.5.0": ("2.9.0", "2.8.0.post2", "2.7.1.post2", "2.6.0.post5"),
        "9.0.0": ("2.9.0.post2", "2.8.0.post4", "2.7.1.post4"),
        "9.1.0": ("2.12.0", "2.11.0", "2.10.0.post4", "2.9.0.post6", "2.7.1.post8"),
    }
)

# Python versions each torch line supports (same source).
PYTHON_FOR_TORCH: Mapping[str, Tuple[Tuple[int, int], Tuple[int, int]]] = MappingProxyType(
    # torch 2.11 and later (Python 3.10-3.14 in the same file) have no row yet, so python_verdict
    # answers "no published range" for them.
    {
        "2.1": ((3, 8), (3, 11)),
        "2.2": ((3, 8), (3, 10)),
        "2.3": ((3, 8), (3, 11)),
        "2.4": ((3, 8), (3, 11)),
        "2.5": ((3, 9), (3, 11)),
        "2.6": ((3, 9), (3, 11)),
        "2.7": ((3, 9), (3, 13)),
        "2.8": ((3, 9), (3, 13)),
        "2.9": ((3, 10), (3, 13)),
        "2.10": ((3, 10), (3, 13)),
    }
)

# hiascend release notes / hicann/release-management: CANN release -> HDK drivers.
# `X` matches any patch of that HDK line.
DRIVERS_FOR_CANN: Mapping[str, Tuple[str, ...]] = MappingProxyType(
    {
        "8.1.RC1": ("25.0.RC1",),
        # MindIE 2.1.RC1's list for 8.2.RC1 (reference cann-environment.md §4.2).
        "8.2.RC1": ("25.2.0", "25.0.RC1", "24.1.0", "24.1.RC3", "24.1.RC2"),
        "8.3.RC1": ("25.3.RC1",),
        # The 8.5.0 release note says `25.5.X, 25.3.X, 25.2.X, 25.0.X`.
        "8.5.0": ("25.5.X", "25.3.X", "25.2.X", "25.0.X"),
        "8.5.2": ("26.0.RC1", "25.5.2", "25.5.1"),
        "9.0.0": ("26.0.RC1", "25.5.2", "25.5.1"),
        # Each row below is what the release's own note publishes for it (the same notes as the
        # ops pairing table, host/releases.py). Later notes widen older rows (9.1.1's says 9.0.X
        # and 8.5.2 go with 25.0.X-26.1.1 too); those are not folded in here.
        # hicann/release-management@cc6f9c23:9.0.1/release-notes.md §1 CANN与Ascend HDK版本配套关系
        "9.0.1": ("26.0.RC3", "25.5.5", "26.0.RC1", "25.5.2", "25.5.1"),
        # hicann/release-management@9bf36e97:9.1.0/release-notes.md 版本配套说明 (9.1.0: 26.1.0)
        # and 版本兼容性说明 (9.1.X: Y for 25.5.X, 26.0.RC1/25.7.RC1, 26.1.0)
        "9.1.0": ("26.1.0", "26.0.RC1", "25.7.RC1", "25.5.X"),
        # hicann/release-management@0436983c:9.1.1/release-notes.md 版本配套说明 (9.1.1: 26.1.1)
        # and 版本兼容性说明 (9.1.X: N for 25.0.X; Y for 25.2.X, 25.3.X, 25.5.X,
        # 26.0.RC1/25.7.RC1, 26.1.1)
        "9.1.1": ("26.1.1", "26.0.RC1", "25.7.RC1", "25.5.X", "25.3.X", "25.2.X"),
    }
)
# Only a floor is published for 8.0.RC1: A2 inference needs HDK >= 24.1.RC1.
MIN_DRIVER_FOR_CANN: Mapping[str, str] = MappingProxyType({"8.0.RC1": "24.1.RC1"})

# OSes of the official CANN container images (Ascend/cann-container-image).
IMAGE_OSES: Tuple[Tuple[str, str], ...] = (
    ("ubuntu", "22.04"),
    ("ubuntu", "24.04"),
    ("openeuler", "22.03"),
    ("openeuler", "24.03"),
)

# A release train inside an `innerversion` / `Innerversion` value: `V100R001C23SPC002B212` ->
# `V100R001C23` (driver 25.3.rc1, CANN 8.3.RC2 both carry C23).
_TRAIN_RE = re.compile(r"V\d+R\d+C\d+", re.IGNORECASE)


class Verdict(Struct, frozen=True, kw_only=True):
    ok: Optional[bool]  # None: nothing published to judge by
    detail: str


def _match_driver(entry: str, driver: DriverVersion) -> bool:
    if entry.endswith(".X"):
        return driver.series == entry[:-2]
    # `release` drops build tails, so driver `25.3.rc1.b061` matches the listed `25.3.RC1`.
    return driver.release.upper() == entry.upper()


def driver_verdict(
    cann: CannVersion,
    driver: DriverVersion,
    toolkit_compatible: Tuple[str, ...] = (),
    toolkit_inner: Optional[str] = None,
    driver_compatible: Tuple[str, ...] = (),
    driver_inner: Optional[str] = None,
) -> Verdict:
    release = cann.release
    if release in DRIVERS_FOR_CANN:
        listed = DRIVERS_FOR_CANN[release]
        if any(_match_driver(e, driver) for e in listed):
            return Verdict(ok=True, detail=f"driver {driver} is listed for CANN {release}")
        return Verdict(
            ok=False,
            detail=f"driver {driver} is not among the HDK versions published for CANN {release} "
            f"({', '.join(listed)})",
        )
    if release in MIN_DRIVER_FOR_CANN:
        minimum = parse_driver_version(MIN_DRIVER_FOR_CANN[release].lower())
        ok = not driver.internal and driver >= minimum
        return Verdict(ok=ok, detail=f"CANN {release} needs HDK >= {MIN_DRIVER_FOR_CANN[release]}")
    # No published row: fall back to the release-train ids both packages carry.
    # A heuristic: every official pairing checked passes one of the two tests below, not
    # always both; CANN 8.5.0 (C25) with driver 25.3.rc1 (C23) passes only the second, as
    # the toolkit's compatible_version lists C23 (reference cann-environment.md §4.2).
    tk_train = _train(toolkit_inner)
    drv_train = _train(driver_inner)
    if tk_train and drv_train:
        ok = tk_train in _trains(driver_compatible) or drv_train in _trains(toolkit_compatible)
        how = "accept" if ok else "do not accept"
        return Verdict(
            ok=ok,
            detail=f"no published pairing for CANN {release}; the packages' release trains "
            f"({tk_train} toolkit, {drv_train} driver) {how} each other",
        )
    return Verdict(ok=None, detail=f"no published driver pairing for CANN {release}")


def _train(inner: Optional[str]) -> Optional[str]:
    if not inner:
        return None
    match = _TRAIN_RE.match(inner)
    return match.group(0).upper() if match else None


def _trains(items: Tuple[str, ...]) -> Tuple[str, ...]:
    return tuple(t for t in (_train(i) for i in items) if t)


def base_version(version: str) -> str:
    """`2.7.1.post2.dev20250724+cpu` -> `2.7.1.post2` (what the table lists)."""
    # Wheels in the wild: `2.7.1.dev20250724`, `2.5.1.post1.dev20250619`, `2.7.1+cpu`.
    text = version.split("+", 1)[0]
    text = re.sub(r"\.dev\d*$", "", text)
    return text


def torch_release(version: str) -> str:
    """`2.7.1.post2` / `2.7.1+cpu` -> `2.7.1`: the torch release of a torch or torch_npu line."""
    return base_version(version).split(".post")[0]


def in_table(torch_npu: str) -> bool:
    """Whether any CANN row of the published table lists this torch_npu."""
    base = base_version(torch_npu)
    return any(base in row for row in TORCH_NPU_FOR_CANN.values())


def _newest_row() -> Tuple[str, str]:
    """(torch_npu, CANN) of the newest torch_npu the table lists."""

    def key(version: str) -> Tuple[int, ...]:
        return tuple(int(p) for p in re.findall(r"\d+", version))

    return max(
        ((npu, cann) for cann, row in TORCH_NPU_FOR_CANN.items() for npu in row),
        key=lambda pair: key(pair[0]),
    )


def torch_npu_verdict(cann: CannVersion, torch_npu: str) -> Verdict:
    release = cann.release
    if not in_table(torch_npu):
        newest, newest_cann = _newest_row()
        return Verdict(
            ok=None,
            detail=f"torch_npu {torch_npu} is not in the table (Ascend/pytorch COMPATIBILITY lists "
            f"torch_npu up to {newest}, for CANN {newest_cann}): no tested pairing with CANN "
            f"{release} is published",
        )
    listed = TORCH_NPU_FOR_CANN.get(release)
    if listed is None:
        return Verdict(ok=None, detail=f"no published torch_npu list for CANN {release}")
    base = base_version(torch_npu)
    if base in listed:
        return Verdict(ok=True, detail=f"torch_npu {torch_npu} is tested with CANN {release}")
    return Verdict(
        ok=False,
        detail=f"torch_npu {torch_npu} is not in the tested list for CANN {release} ({', '.join(listed)})",
    )


def same_torch_line(torch: str, torch_npu: str) -> bool:
    """torch_npu's major.minor.patch always equals torch's."""

    def mmp(v: str) -> Tuple[str, ...]:
        return tuple(base_version(v).split(".")[:3])

    return mmp(torch) == mmp(torch_npu)


def python_verdict(torch: str, python: Tuple[int, int]) -> Verdict:
    line = ".".join(base_version(torch).split(".")[:2])
    bounds = PYTHON_FOR_TORCH.get(line)
    if bounds is None:
        return Verdict(ok=None, detail=f"no published Python range for torch {line}")
    lo, hi = bounds
    ok = lo <= python <= hi
    return Verdict(
        ok=ok,
        detail=f"torch {line} supports Python {lo[0]}.{lo[1]}-{hi[0]}.{hi[1]}; "
        f"this is Python {python[0]}.{python[1]}",
    )
