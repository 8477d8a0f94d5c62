"""Published compatibility tables and the checks made from them.

torch_npu's own import check only knows CANN 6.x, so a torch_npu built for
another CANN goes unnoticed until `undefined symbol` errors; this module
catches that from package metadata alone (reference cann-environment.md §4).
The HDK drivers of each release and the torch / torch_npu / CANN / Python rows, each
source's apart, are data: recipes/facts/*.toml (host/published.py).
"""

from __future__ import annotations

import re
from typing import Dict, Iterable, List, Optional, Tuple

from msgspec import Struct

from .published import (  # torch_release: what compat's callers name
    NpuPairing,
    ReleaseFacts,
    Source,
    npu_pairings,
    python_pairings,
    read,
    releases,
    torch_release,
)
from .versions import CannVersion, DriverVersion, parse_cann_version, parse_driver_version

# A release train inside an `innerversion` / `Innerversion` value: `V100R001C23SPC002B212` ->
# `V100R001C23` (driver 25.3.rc1, CANN 8.3.RC2 both carry C23).
_TRAIN_RE = re.compile(r"V\d+R\d+C\d+", re.IGNORECASE)


class Verdict(Struct, frozen=True, kw_only=True):
    ok: Optional[bool]  # None: nothing published to judge by
    detail: str
    # the sources that pair it (ok) or that pair it otherwise (not ok): their names
    sources: Tuple[str, ...] = ()


def image_oses() -> Tuple[Tuple[str, str], ...]:
    """(os id, version) of the official CANN container images."""
    return tuple((o.id, o.version) for f in read() for o in f.image_os)


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
    release, published = _published_release(cann)
    listed = published.drivers if published else ()
    if listed:
        if any(_match_driver(e, driver) for e in listed):
            return Verdict(ok=True, detail=f"driver {driver} is listed for CANN {release}")
        return Verdict(
            ok=False,
            detail=f"driver {driver} is not among the HDK versions published for CANN {release} "
            f"({', '.join(listed)})",
        )
    if published and published.min_driver:
        minimum = parse_driver_version(published.min_driver.lower())
        ok = not driver.internal and not driver < minimum  # Struct leaves >= unordered
        return Verdict(ok=ok, detail=f"CANN {release} needs HDK >= {published.min_driver}")
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


def _published_release(cann: CannVersion) -> Tuple[str, Optional[ReleaseFacts]]:
    """The release row that speaks for this toolkit, and the name it goes by.

    A row whose version equals the toolkit's (`8.0.0` for a community `8.0.0.beta1`, the same
    release); a pre-release has its own note or none, never its final release's: 8.5.0.alpha001
    pairs 25.2.X only, where 8.5.0 lists four HDK lines (reference cann-environment.md §4.2)."""
    for name, facts in releases().items():
        try:
            if parse_cann_version(name) == cann:
                return name, facts
        except ValueError:
            continue
    return cann.text if cann.is_prerelease else cann.release, None


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


def _line(version: str) -> str:
    """`2.7.1.post2` -> `2.7`: the torch line Python pairings are judged by."""
    return ".".join(base_version(version).split(".")[:2])


def version_key(version: str) -> Tuple[int, ...]:
    """`2.10.0.post2` -> (2, 10, 0, 2): orders the releases the sources list."""
    return tuple(int(p) for p in re.findall(r"\d+", version))


_key = version_key


def _names(sources: Iterable[Source]) -> Tuple[str, ...]:
    return tuple(dict.fromkeys(source.name for source in sources))


def paired_torch_npu(release: str) -> Tuple[Tuple[str, Tuple[str, ...]], ...]:
    """Per source (its name), the torch_npu releases it pairs with CANN `release`, newest first."""
    by_source: Dict[str, List[str]] = {}
    for row in npu_pairings():
        if row.cann == release:
            by_source.setdefault(row.source.name, []).append(row.torch_npu)
    return tuple(
        (name, tuple(sorted(versions, key=_key, reverse=True)))
        for name, versions in by_source.items()
    )


def _newest_rows() -> str:
    """Each source's newest torch_npu and its CANN: what "no source lists it" is measured by."""
    newest: Dict[str, NpuPairing] = {}
    for row in npu_pairings():
        held = newest.get(row.source.name)
        if held is None or _key(row.torch_npu) > _key(held.torch_npu):
            newest[row.source.name] = row
    return ", ".join(
        f"{row.torch_npu} for CANN {row.cann} by {name}" for name, row in newest.items()
    )


def _elsewhere(rows: Iterable[NpuPairing]) -> str:
    canns: Dict[str, List[str]] = {}
    for row in rows:
        canns.setdefault(row.source.name, []).append(row.cann)
    return "; ".join(f"{name} pairs it with CANN {', '.join(c)}" for name, c in canns.items())


def torch_npu_verdict(cann: CannVersion, torch_npu: str) -> Verdict:
    """Paired (some source lists this torch_npu with this CANN), not paired (the sources list
    it with other CANN releases only) or no published pairing (no source speaks to it)."""
    release = cann.release
    # A dev wheel is judged as itself where a source lists it (vllm-ascend: 2.7.1.dev20250724)
    # and as the release it is a build of.
    names = {torch_npu.split("+", 1)[0], base_version(torch_npu)}
    rows = [row for row in npu_pairings() if row.torch_npu in names]
    pairing = _names(row.source for row in rows if row.cann == release)
    if pairing:
        return Verdict(
            ok=True,
            detail=f"torch_npu {torch_npu} with CANN {release}: paired by {' and '.join(pairing)}",
            sources=pairing,
        )
    if not rows:
        return Verdict(
            ok=None,
            detail=f"no published pairing for torch_npu {torch_npu}: no source lists it "
            f"(the newest each lists: {_newest_rows()})",
        )
    if not any(row.cann == release for row in npu_pairings()):
        return Verdict(
            ok=None,
            detail=f"no published pairing for CANN {release}: no source lists a torch_npu for it "
            f"(torch_npu {torch_npu}: {_elsewhere(rows)})",
        )
    return Verdict(
        ok=False,
        detail=f"torch_npu {torch_npu} is not paired with CANN {release} by any source: "
        f"{_elsewhere(rows)}",
        sources=_names(row.source for row in rows),
    )


def same_torch_line(torch: str, torch_npu: str) -> bool:
    """torch_npu's major.minor.patch always equals torch's."""
    return torch_release(torch) == torch_release(torch_npu)


def _span(pythons: Tuple[Tuple[int, int], ...]) -> str:
    """`3.9-3.13` for a run of minors, else each one."""
    minors = sorted(p[1] for p in pythons)
    if minors == list(range(minors[0], minors[-1] + 1)) and len(minors) > 1:
        return f"3.{minors[0]}-3.{minors[-1]}"
    return ", ".join(f"3.{m}" for m in minors)


def python_verdict(torch: str, python: Tuple[int, int]) -> Verdict:
    """Whether a source pairs this torch line with this Python (rows matched by major.minor)."""
    line = _line(torch)
    py = f"{python[0]}.{python[1]}"
    rows = [row for row in python_pairings() if _line(row.torch) == line]
    if not rows:
        return Verdict(
            ok=None,
            detail=f"no published pairing for torch {line} with Python {py}: no source lists "
            f"Python versions for torch {line}",
        )
    pairing = _names(row.source for row in rows if python in row.pythons)
    if pairing:
        return Verdict(
            ok=True,
            detail=f"torch {line} with Python {py}: paired by {' and '.join(pairing)}",
            sources=pairing,
        )
    listed = "; ".join(
        f"{row.source.name} pairs it with Python {_span(row.pythons)}" for row in rows
    )
    return Verdict(
        ok=False,
        detail=f"torch {line} is not paired with Python {py} by any source: {listed}",
        sources=_names(row.source for row in rows),
    )


# torch_npu is built against the CPU build of torch; Ascend/pytorch's README installs it from
# PyTorch's CPU index (Ascend/pytorch@9e73e708:README.md:85 `pip install torch==2.10.0
# --index-url https://download.pytorch.org/whl/cpu`).  Plain PyPI serves a CUDA build on
# x86_64 (2.74 GB of wheels for torch 2.13.0), and beside torch-npu 2.13.0 `import torch_npu`
# aborts with it (issue 30).  The command pins `+cpu`, which PyPI's untagged wheel never
# meets (so pip replaces a CUDA torch instead of saying "Requirement already satisfied"),
# and adds the CPU index to PyPI rather than replacing it (torch's dependencies come from
# PyPI, and where the CPU index is unreachable a wheel folder in PIP_FIND_LINKS serves;
# issue 42).
CPU_INDEX = "https://download.pytorch.org/whl/cpu"
# The torch the README installs and CI tests with (README "Set up", .ci/run): the version a
# hint names where nothing installed or published decides one.
TESTED_TORCH = "2.13.0"
# What a CUDA torch pulled in that the CPU build does not use (GBs of nvidia-* and triton).
CUDA_LEFTOVERS = (
    "pip list --format=freeze | grep -Eo '^(nvidia-[^=]+|triton)' | xargs -r pip uninstall -y"
)


def torch_to_install(torch_npu: Optional[str], cann: Optional[CannVersion] = None) -> str:
    """The torch release a hint names: the one the installed torch_npu needs, else the one
    the newest torch_npu some source pairs with this CANN needs, else the tested one."""
    if torch_npu:
        return torch_release(torch_npu)
    if cann is not None and cann.comparable:
        newest = [versions[0] for _, versions in paired_torch_npu(cann.release)]
        if newest:
            return torch_release(max(newest, key=_key))
    return TESTED_TORCH


def cpu_torch_command(version: str) -> str:
    return f"pip install torch=={version}+cpu --extra-index-url {CPU_INDEX}"


def cpu_torch_fix(version: str, device: Optional[str] = None) -> str:
    """The command that installs (or, over a `device` build, replaces it with) the CPU build
    of torch `version`, and what to do where PyTorch's index cannot be reached: one paragraph.
    Every command is in backticks; tests/integration/test_torch_fixes.py runs them."""
    replaces = (
        f" It replaces the {device} build (PyPI's wheel carries no `+cpu`, so pip reinstalls); "
        f"then `{CUDA_LEFTOVERS}` removes the nvidia-* and triton wheels that build left behind "
        "(unused by the CPU build)."
        if device
        else ""
    )
    return (
        f"`{cpu_torch_command(version)}`: the CPU build, all cannbuild and torch_npu need (plain "
        "PyPI's is a CUDA build of several GB beside which torch_npu cannot be imported)."
        f"{replaces} Where download.pytorch.org is unreachable: on a machine with the same "
        "Python and architecture that reaches it, "
        f"`pip download torch=={version}+cpu --no-deps --index-url {CPU_INDEX} -d wheels/`, "
        f"copy wheels/ here and `pip install wheels/torch-{version}+cpu-*.whl` (its "
        "dependencies come from PyPI), or `export PIP_FIND_LINKS=/path/to/wheels` and rerun "
        "the first command."
    )
