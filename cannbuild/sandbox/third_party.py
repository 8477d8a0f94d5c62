"""The third-party archives the sandbox mirror serves, and the stand-ins' CMake for them.

The real builds download makeself, protobuf, abseil-cpp, eigen and nlohmann json from
`https://gitcode.com/cann-src-third-party/...` with CMake (from 9.1 json, abseil-cpp and
protobuf from `https://cann-3rd.obs.cn-north-4.myhuaweicloud.com/`).  The sandbox serves
archives of the same names and shapes (a single top folder per tarball, json's
`include.zip` with `include/` and `single_include/`), small and generated here, so
their bytes (and the hashes the stand-in CMake declares) never change.  Each is
packed without compression (a gzip of stored deflate blocks, written by hand): a
zlib build of another machine cannot change a byte, and so no commit id of the
stand-in repositories, which carry the hashes.
"""

from __future__ import annotations

import hashlib
import io
import struct
import tarfile
import zipfile
import zlib
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from msgspec import Struct

from ..bounded import DATA_FILE, read_bytes
from ..host.contents import WALL_MARKER
from ..resources import data_dir
from .releases import MAKESELF_URL, UPSTREAM
from .spec import GITEE_FOLDER, GITEE_UPSTREAM, OBS_FOLDER, OBS_UPSTREAM

# The archive's one top folder, named after its file (makeself-release-2.5.0-patch1.tar.gz).
MAKESELF_ARCHIVE = "makeself-release-2.5.0-patch1"
_RELEASES = UPSTREAM + "cann-src-third-party/"


class StandinArchive(Struct, frozen=True, kw_only=True):
    key: str
    url: str
    data: bytes

    @property
    def file(self) -> str:
        return self.url.rsplit("/", 1)[-1]

    @property
    def sha256(self) -> str:
        return hashlib.sha256(self.data).hexdigest()

    @property
    # opbase v8.5.0 / v9.0.0 declare makeself with URL_MD5, the others with SHA256: both given.
    def md5(self) -> str:
        return hashlib.md5(self.data).hexdigest()

    def context(self) -> Dict[str, str]:
        return {"url": self.url, "file": self.file, "sha256": self.sha256, "md5": self.md5}


def gzip_stored(data: bytes) -> bytes:
    """A gzip member holding `data` in stored deflate blocks: the same bytes on every zlib."""
    # RFC 1952 header: magic 1f 8b, method 8 (deflate), no flags, mtime 0, no extra flags, OS 255
    # (unknown): nothing here depends on the machine or the clock.
    out = bytearray(b"\x1f\x8b\x08\x00\x00\x00\x00\x00\x00\xff")  # no name, mtime 0, OS unknown
    blocks = [data[i : i + 0xFFFF] for i in range(0, len(data), 0xFFFF)] or [b""]
    for i, block in enumerate(blocks):
        # RFC 1951 stored block: a final-block bit (BTYPE 00 = stored), then LEN and its one's
        # complement NLEN, then the bytes; 65,535 is the most one block holds.
        out.append(1 if i == len(blocks) - 1 else 0)
        out += struct.pack("<HH", len(block), len(block) ^ 0xFFFF) + block
    # The trailer: CRC-32 and size mod 2**32 of the uncompressed data.
    out += struct.pack("<II", zlib.crc32(data) & 0xFFFFFFFF, len(data) & 0xFFFFFFFF)
    return bytes(out)


def tar_gz(entries: Sequence[Tuple[str, Optional[bytes], int]]) -> bytes:
    """A .tar.gz of (name, content or None for a folder, mode), in the given order, with
    zero times and owners."""
    raw = io.BytesIO()
    # GNU format, mtime 0 and the default owner ids: the tar bytes depend only on the entries.
    with tarfile.open(fileobj=raw, mode="w", format=tarfile.GNU_FORMAT) as tar:
        for name, content, mode in entries:
            info = tarfile.TarInfo(name)
            info.mtime = 0
            info.mode = mode
            if content is None:
                info.type = tarfile.DIRTYPE
                tar.addfile(info)
            else:
                info.size = len(content)
                tar.addfile(info, io.BytesIO(content))
    return gzip_stored(raw.getvalue())


def tree_entries(src: Path, top: str) -> List[Tuple[str, Optional[bytes], int]]:
    """A folder's files as tar entries under `top/`; modes fixed by kind (scripts 0755),
    since a copy of cannbuild installed elsewhere may have lost the executable bits."""
    entries: List[Tuple[str, Optional[bytes], int]] = [(top, None, 0o755)]
    for path in sorted(src.rglob("*")):
        name = f"{top}/{path.relative_to(src).as_posix()}"
        if path.is_dir():
            entries.append((name, None, 0o755))
        else:
            mode = 0o755 if path.suffix == ".sh" else 0o644
            entries.append((name, read_bytes(path, DATA_FILE), mode))
    return entries


def source_tree(top: str, files: Mapping[str, str]) -> bytes:
    entries: List[Tuple[str, Optional[bytes], int]] = [(top, None, 0o755)]
    folders = set()
    for name in sorted(files):
        parts = name.split("/")[:-1]
        for i in range(1, len(parts) + 1):
            folder = "/".join(parts[:i])
            if folder not in folders:
                folders.add(folder)
                entries.append((f"{top}/{folder}", None, 0o755))
        entries.append((f"{top}/{name}", files[name].encode(), 0o644))
    return tar_gz(entries)


def _zip(files: Mapping[str, str]) -> bytes:
    raw = io.BytesIO()
    with zipfile.ZipFile(raw, "w", compression=zipfile.ZIP_STORED) as zf:
        for name in sorted(files):
            # 1980-01-01, the earliest time a zip entry can record; unix attributes 0644.
            info = zipfile.ZipInfo(name, date_time=(1980, 1, 1, 0, 0, 0))
            info.create_system = 3
            info.external_attr = 0o644 << 16
            zf.writestr(info, files[name])
    return raw.getvalue()


def _stub(what: str) -> str:
    # A build of the real repositories that compiles against a stand-in (taken with
    # --accept-stand-in) stops at the first include, naming it as a sandbox wall
    # (host/contents.py WALL_MARKER), not deep in some other header.
    name = what.split(" ")[0].lower()
    return (
        f"// cannbuild sandbox stand-in for {what}: names and layout only, no code.\n"
        "#ifndef CANNBUILD_SANDBOX_STANDIN  // the stand-in repositories' own check of it\n"
        f"#error \"{WALL_MARKER} {name} ({what}): the sandbox's stand-in archive holds no "
        'code; serve the real archive through a mirror rule or an offline bundle"\n'
        "#endif\n"
    )


def standin_archives() -> Dict[str, StandinArchive]:
    """Every archive the stand-ins download, keyed for the CMake templates."""
    makeself = tar_gz(
        tree_entries(data_dir("templates") / "sandbox" / "makeself", MAKESELF_ARCHIVE)
    )

    def protobuf(version: str, number: str) -> bytes:
        return source_tree(
            f"protobuf-{version}",
            {
                "CMakeLists.txt": f"# cannbuild sandbox stand-in for protobuf {version}\n",
                "cmake/CMakeLists.txt": f"# cannbuild sandbox stand-in for protobuf {version}\n",
                "src/google/protobuf/stubs/common.h": _stub(f"protobuf {version}")
                + f"#define GOOGLE_PROTOBUF_VERSION {number}\n",
                "third_party/abseil-cpp/.keep": "",
            },
        )

    def eigen(version: str) -> bytes:
        world, major, minor = version.split(".")
        return source_tree(
            f"eigen-{version}",
            {
                "Eigen/Eigen": _stub(f"Eigen {version}"),
                "Eigen/src/Core/util/Macros.h": _stub(f"Eigen {version}")
                + f"#define EIGEN_WORLD_VERSION {world}\n#define EIGEN_MAJOR_VERSION {major}\n"
                f"#define EIGEN_MINOR_VERSION {minor}\n",
            },
        )

    json_header = _stub("nlohmann json 3.11.3") + "#define NLOHMANN_JSON_VERSION_MAJOR 3\n"
    json = {
        "LICENSE.MIT": "cannbuild sandbox stand-in for nlohmann json 3.11.3\n",
        "include/nlohmann/json.hpp": json_header,
        "include/nlohmann/json_fwd.hpp": _stub("nlohmann json 3.11.3"),
        "single_include/nlohmann/json.hpp": json_header,
    }
    abseil = source_tree(
        "abseil-cpp-20230802.1",
        {
            "CMakeLists.txt": "# cannbuild sandbox stand-in for abseil-cpp 20230802.1\n",
            "absl/base/config.h": _stub("abseil-cpp 20230802.1")
            + "#define ABSL_LTS_RELEASE_VERSION 20230802\n",
            "absl/log/absl_log.h": _stub("abseil-cpp 20230802.1"),
        },
    )
    archives = [
        StandinArchive(key="makeself", url=MAKESELF_URL, data=makeself),
        StandinArchive(
            key="protobuf",
            # The upstream URLs the real cmake/third_party files name: protobuf 25.1 (3.13.0 at
            # 8.3), abseil-cpp 20230802.1, eigen 3.4.0 / 5.0.0, json 3.11.3's include.zip
            # (reference real-host-findings.md §2).
            url=_RELEASES + "protobuf/releases/download/v25.1/protobuf-25.1.tar.gz",
            # protobuf's GOOGLE_PROTOBUF_VERSION is major*1000000 + minor*1000 + patch of its C++
            # runtime, 4.25.1 for release 25.1.
            data=protobuf("25.1", "4025001"),
        ),
        StandinArchive(
            key="protobuf313",
            url=_RELEASES + "protobuf/releases/download/v3.13.0/protobuf-3.13.0.tar.gz",
            data=protobuf("3.13.0", "3013000"),
        ),
        StandinArchive(
            key="abseil",
            url=_RELEASES + "abseil-cpp/releases/download/20230802.1/abseil-cpp-20230802.1.tar.gz",
            data=abseil,
        ),
        StandinArchive(
            key="eigen34",
            url=_RELEASES + "eigen/releases/download/3.4.0/eigen-3.4.0.tar.gz",
            data=eigen("3.4.0"),
        ),
        StandinArchive(
            key="eigen50",
            url=_RELEASES + "eigen/releases/download/5.0.0-h0.trunk/eigen-5.0.0.tar.gz",
            data=eigen("5.0.0"),
        ),
        StandinArchive(
            key="json",
            url=_RELEASES + "json/releases/download/v3.11.3/include.zip",
            data=_zip(json),
        ),
        # From 9.1 cann/cmake's third_party/*.cmake take json, abseil-cpp and protobuf from the
        # OBS host (CC@master-026 json.cmake:53, abseil-cpp.cmake:45, protobuf.cmake:148): json
        # as the 3.11.3 source tarball (no more include.zip), the other two the same archives.
        StandinArchive(
            key="json_obs",
            url=OBS_UPSTREAM + "json/json-3.11.3.tar.gz",
            data=source_tree(
                "json-3.11.3",
                {
                    **json,
                    "CMakeLists.txt": "# cannbuild sandbox stand-in for nlohmann json 3.11.3\n",
                },
            ),
        ),
        StandinArchive(
            key="abseil_obs",
            url=OBS_UPSTREAM + "abseil-cpp/abseil-cpp-20230802.1.tar.gz",
            data=abseil,
        ),
        StandinArchive(
            key="protobuf_obs",
            url=OBS_UPSTREAM + "protobuf/protobuf-25.1.tar.gz",
            data=protobuf("25.1", "4025001"),
        ),
    ]
    return {a.key: a for a in archives}


def write_mirror(mirror: Path, archives: Mapping[str, StandinArchive]) -> List[Path]:
    """Each archive at the path its upstream URL names under the mirror."""
    written = []
    for archive in archives.values():
        target = mirror_path(mirror, archive.url)
        target.parent.mkdir(parents=True, exist_ok=True)
        target.write_bytes(archive.data)
        written.append(target)
    return written


def mirror_path(mirror: Path, url: str) -> Path:
    """Where the mirror serves an upstream URL (spec.SandboxInfo.mirrors, the other way)."""
    # `https://gitcode.com/cann-src-third-party/...` -> `<mirror>/cann-src-third-party/...`;
    # `https://cann-3rd.obs.../json/...` -> `<mirror>/cann-3rd.obs.../json/...`.
    if url.startswith(OBS_UPSTREAM):
        return mirror / OBS_FOLDER / url[len(OBS_UPSTREAM) :]
    if url.startswith(GITEE_UPSTREAM):
        return mirror / GITEE_FOLDER / url[len(GITEE_UPSTREAM) :]
    if url.startswith(UPSTREAM):
        return mirror / url[len(UPSTREAM) :]
    raise ValueError(f"the sandbox mirror serves no host of {url}")
