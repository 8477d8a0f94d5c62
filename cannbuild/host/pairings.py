"""The published torch / torch_npu / CANN / Python pairings, one row per pairing and source.

No single source is complete: the official table (Ascend/pytorch COMPATIBILITY) stops at
torch_npu 2.12.0, Huawei's installer (ascend-deployer) ships pairings the table does not list
(torch_npu 2.10.0 and 2.6.0.post6 with CANN 9.0.0, torch 2.6 on Python 3.12), and torch_npu
2.14.0 names its CANN only in its own README.  Each source's rows stay apart so doctor can say
which one pairs a combination (host/compat.py judges from them).  Each row cites the file and
line it was read from; a source's header says which version of the file that is.
"""

from __future__ import annotations

from typing import Tuple

from msgspec import Struct


class Source(Struct, frozen=True, kw_only=True):
    name: str  # what doctor prints: "paired by <name>"
    where: str  # the exact file read: repo@commit:path, or registry package and file


class NpuPairing(Struct, frozen=True, kw_only=True):
    """A torch_npu release, the torch it is built for, and a CANN release a source pairs it with."""

    torch_npu: str
    torch: str
    cann: str
    source: Source
    cite: str  # path:line inside the source


class PythonPairing(Struct, frozen=True, kw_only=True):
    """The Python versions a source pairs with one torch release."""

    torch: str
    pythons: Tuple[Tuple[int, int], ...]
    source: Source
    cite: str


OFFICIAL = Source(
    name="Ascend/pytorch COMPATIBILITY.en.md",
    # the file's last change (2026-08-20); the same bytes at master 9e73e708 (2026-08-21), the
    # newest commit of the snapshot, whose branches stop at v2.12.0-26.1.0
    where="Ascend/pytorch@b48e6481:COMPATIBILITY.en.md",
)
INSTALLER = Source(
    name="ascend-deployer 26.0.0",
    # the wheel on PyPI (sha256 42805278741368296a68f81ef69968c60a951399da5a54620d89cf5fb4f69068,
    # files dated 2026-07-30); the installer warns "<CANN> need matching <component>" when a
    # download picks a torch_npu whose row names another CANN (downloader/software_mgr.py:263-284)
    where="PyPI ascend-deployer==26.0.0:ascend_deployer/downloader/",
)
TORCH_NPU_214 = Source(
    name="torch-npu 2.14.0 README",
    # the package description (its README): "#### Install CANN" / "Install CANN 9.1.0 ..." (its
    # install example is TorchNPU 2.12.0); Requires-Dist: torch==2.14.0.*.  Wheel
    # torch_npu-2.14.0-cp311-cp311-manylinux_2_28_x86_64.whl, sha256 7736f7d8...189e
    where="PyPI torch-npu==2.14.0:METADATA (description)",
)
TORCH_214 = Source(
    name="torch 2.14.0 metadata",
    # COMPATIBILITY.en.md has no PyTorch 2.14 row yet; torch's own wheel says which Python it is
    # for (Requires-Python: >=3.10; classifiers Python 3.10-3.14).  Wheel
    # torch-2.14.0-cp311-cp311-manylinux_2_28_x86_64.whl, sha256 8d9e232b...f999
    where="PyPI torch==2.14.0:METADATA",
)

_TABLE = "COMPATIBILITY.en.md"


def _official(line: int, cann: str, torch_npu: str) -> NpuPairing:
    # the table's PyTorch column is torch_npu's major.minor.patch in every row read here
    torch = torch_npu.split(".post")[0]
    return NpuPairing(
        torch_npu=torch_npu, torch=torch, cann=cann, source=OFFICIAL, cite=f"{_TABLE}:{line}"
    )


def _installer(line: int, torch_npu: str, cann: str) -> NpuPairing:
    # "Torch-npu_<version>": "CANN_<release>"; the torch wheels it ships for that torch_npu
    # (downloader/software/Torch-npu_<version>.json) are torch <major.minor.patch>
    torch = torch_npu.split(".post")[0]
    return NpuPairing(
        torch_npu=torch_npu,
        torch=torch,
        cann=cann,
        source=INSTALLER,
        cite=f"downloader/version_match.json:{line}",
    )


NPU_PAIRINGS: Tuple[NpuPairing, ...] = (
    # the official table: "TorchNPU version mapping table" (active releases, lines 20-45) and
    # the expanded historical table (lines 52-61); CANN 7.x and older rows are left out
    _official(20, "9.1.0", "2.12.0"),
    _official(21, "9.1.0", "2.11.0"),
    _official(22, "9.1.0", "2.10.0.post4"),
    _official(23, "9.1.0", "2.9.0.post6"),
    _official(24, "9.1.0", "2.7.1.post8"),
    _official(25, "9.0.0", "2.9.0.post2"),
    _official(26, "9.0.0", "2.8.0.post4"),
    _official(27, "9.0.0", "2.7.1.post4"),
    _official(28, "8.5.0", "2.9.0"),
    _official(29, "8.5.0", "2.8.0.post2"),
    _official(30, "8.5.0", "2.7.1.post2"),
    _official(31, "8.5.0", "2.6.0.post5"),
    _official(32, "8.3.RC1", "2.8.0"),
    _official(33, "8.3.RC1", "2.7.1"),
    _official(34, "8.3.RC1", "2.6.0.post3"),
    _official(35, "8.3.RC1", "2.1.0.post17"),
    _official(36, "8.2.RC1", "2.6.0"),
    _official(37, "8.2.RC1", "2.5.1.post1"),
    _official(38, "8.2.RC1", "2.1.0.post13"),
    _official(39, "8.1.RC1", "2.5.1"),
    _official(40, "8.1.RC1", "2.4.0.post4"),
    _official(41, "8.1.RC1", "2.3.1.post6"),
    _official(42, "8.1.RC1", "2.1.0.post12"),
    _official(43, "8.0.0", "2.4.0.post2"),
    _official(44, "8.0.0", "2.3.1.post4"),
    _official(45, "8.0.0", "2.1.0.post10"),
    _official(52, "8.0.RC3", "2.4.0"),
    _official(53, "8.0.RC3", "2.3.1.post2"),
    _official(54, "8.0.RC3", "2.1.0.post8"),
    _official(55, "8.0.RC2", "2.3.1"),
    _official(56, "8.0.RC2", "2.2.0.post2"),
    _official(57, "8.0.RC2", "2.1.0.post6"),
    _official(58, "8.0.RC2", "1.11.0.post14"),
    _official(59, "8.0.RC1", "2.2.0"),
    _official(60, "8.0.RC1", "2.1.0.post4"),
    _official(61, "8.0.RC1", "1.11.0.post11"),
    # the installer's match file: one CANN per torch_npu, in its own order
    _installer(8, "2.3.1.post6", "8.1.RC1"),
    _installer(9, "2.2.0.post2", "8.0.RC2"),
    _installer(10, "1.11.0.post14", "8.0.RC2"),
    _installer(11, "2.1.0.post12", "8.1.RC1"),
    _installer(12, "2.1.0.post11", "8.2.RC1"),
    _installer(13, "2.1.0.post13", "8.2.RC1"),
    _installer(14, "2.1.0.post17", "8.3.RC1"),
    _installer(15, "2.3.1.post5", "8.2.RC1"),
    _installer(16, "2.4.0.post4", "8.1.RC1"),
    _installer(17, "2.4.0.post3", "8.2.RC1"),
    _installer(18, "2.5.1", "8.1.RC1"),
    _installer(19, "2.5.1.post1", "8.2.RC1"),
    _installer(20, "2.6.0", "8.2.RC1"),
    _installer(21, "2.6.0.post3", "8.3.RC1"),
    _installer(22, "2.6.0.post5", "8.5.0"),
    _installer(23, "2.6.0.post6", "9.0.0"),
    _installer(24, "2.7.1", "8.3.RC1"),
    _installer(25, "2.7.1.post2", "8.5.0"),
    _installer(26, "2.7.1.post4", "9.0.0"),
    _installer(27, "2.8.0", "8.3.RC1"),
    _installer(28, "2.8.0.post2", "8.5.0"),
    _installer(29, "2.8.0.post4", "9.0.0"),
    _installer(30, "2.9.0", "8.5.0"),
    _installer(31, "2.9.0.post2", "9.0.0"),
    _installer(32, "2.10.0", "9.0.0"),
    # torch_npu 2.14.0's own README, the only source naming a CANN for it; no source names one
    # for torch_npu 2.13.0 (its README's table stops at 2.12.0rc1 for CANN 8.5.0)
    NpuPairing(
        torch_npu="2.14.0",
        torch="2.14.0",
        cann="9.1.0",
        source=TORCH_NPU_214,
        cite="README.md:78",
    ),
)


def _py(*minors: int) -> Tuple[Tuple[int, int], ...]:
    return tuple((3, m) for m in minors)


def _official_py(line: int, torch: str, pythons: Tuple[Tuple[int, int], ...]) -> PythonPairing:
    return PythonPairing(torch=torch, pythons=pythons, source=OFFICIAL, cite=f"{_TABLE}:{line}")


def _installer_py(torch: str, pythons: Tuple[Tuple[int, int], ...], files: str) -> PythonPairing:
    # the `python` (cp3NN) of each torch wheel the installer ships for a torch_npu
    return PythonPairing(
        torch=torch, pythons=pythons, source=INSTALLER, cite=f"downloader/software/{files}"
    )


PYTHON_PAIRINGS: Tuple[PythonPairing, ...] = (
    # the official table: "PyTorch and Python versions"
    _official_py(95, "2.13.0", _py(10, 11, 12, 13, 14)),
    _official_py(96, "2.12.0", _py(10, 11, 12, 13, 14)),
    _official_py(97, "2.11.0", _py(10, 11, 12, 13, 14)),
    _official_py(98, "2.10.0", _py(10, 11, 12, 13)),
    _official_py(99, "2.9.0", _py(10, 11, 12, 13)),
    _official_py(100, "2.8.0", _py(9, 10, 11, 12, 13)),
    _official_py(101, "2.7.1", _py(9, 10, 11, 12, 13)),
    _official_py(102, "2.6.0", _py(9, 10, 11)),
    _official_py(103, "2.5.1", _py(9, 10, 11)),
    _official_py(104, "2.4.0", _py(8, 9, 10, 11)),
    _official_py(105, "2.3.1", _py(8, 9, 10, 11)),
    _official_py(106, "2.2.0", _py(8, 9, 10)),
    _official_py(107, "2.1.0", _py(8, 9, 10, 11)),
    # the installer: the union over the torch_npu files of each torch release
    _installer_py("2.10.0", _py(10, 11, 12), "Torch-npu_2.10.0.json"),
    _installer_py("2.9.0", _py(10, 11, 12), "Torch-npu_2.9.0.json, Torch-npu_2.9.0.post2.json"),
    _installer_py("2.8.0", _py(9, 10, 11, 12), "Torch-npu_2.8.0.post2.json, .post4.json"),
    _installer_py("2.7.1", _py(9, 10, 11, 12), "Torch-npu_2.7.1.post2.json, .post4.json"),
    _installer_py("2.6.0", _py(9, 10, 11, 12), "Torch-npu_2.6.0.post5.json, .post6.json"),
    _installer_py("2.5.1", _py(9, 10, 11), "Torch-npu_2.5.1.json, Torch-npu_2.5.1.post1.json"),
    _installer_py("2.4.0", _py(8, 9, 10, 11), "Torch-npu_2.4.0.post3.json, .post4.json"),
    _installer_py("2.3.1", _py(8, 9, 10, 11), "Torch-npu_2.3.1.post5.json, .post6.json"),
    _installer_py("2.1.0", _py(8, 9, 10, 11), "Torch-npu_2.1.0.post11.json ... .post17.json"),
    PythonPairing(
        torch="2.14.0", pythons=_py(10, 11, 12, 13, 14), source=TORCH_214, cite="classifiers"
    ),
)
