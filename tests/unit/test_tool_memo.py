"""doctor (and setup and build, which run its checks) asks a build tool for its version
once per binary: the answer is kept in the user's cache under what identifies the file
(real path, inode, size, mtime), so an unchanged tool starts no process on the next run
and a replaced or removed one is asked again.  The tool here is a real ELF program on
PATH, compiled for the test, that logs every time it runs."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
from pathlib import Path
from typing import List, Optional

import pytest

from cannbuild.host.published import ToolSpec
from cannbuild.host.toolchain import binary_key

from clirun import cannbuild, clean_env
from hosttree import HostTree

STAND_IN = r"""
#include <stdio.h>
int main(int argc, char **argv) {
    FILE *log = fopen(LOG, "a");
    if (log) { fprintf(log, "%s\n", argv[argc - 1]); fclose(log); }
    printf("cmake version %s\n", VERSION);
    return 0;
}
"""


def _cmake(bin_dir: Path, version: str, log: Path) -> None:
    """A `cmake` that answers `version` and logs each run, put in place as an upgrade
    would: a new file renamed over the old."""
    compiler = shutil.which("gcc") or pytest.skip("no gcc to build the stand-in")
    source = bin_dir.parent / "cmake.c"
    source.write_text(STAND_IN)
    new = bin_dir / ".cmake.new"
    defines = [f'-DLOG="{log}"', f'-DVERSION="{version}"']
    subprocess.run([compiler, *defines, "-o", str(new), str(source)], check=True)
    os.replace(new, bin_dir / "cmake")


def _copied_over_keeping_its_times(doctor: Doctor, version: str) -> None:
    """Another build written into the same file, its size and mtime as before: only the
    ctime (which nothing can set back) tells."""
    cmake = doctor.bin / "cmake"
    before = cmake.stat()
    other = doctor.tmp / "other"
    other.mkdir()
    _cmake(other, version, doctor.log)
    data = (other / "cmake").read_bytes()
    assert len(data) == before.st_size
    with open(cmake, "r+b") as fh:
        fh.write(data)
    os.utime(cmake, ns=(before.st_atime_ns, before.st_mtime_ns))
    after = cmake.stat()
    assert (after.st_ino, after.st_size, after.st_mtime_ns) == (
        before.st_ino,
        before.st_size,
        before.st_mtime_ns,
    )


class Doctor:
    def __init__(self, tmp: Path) -> None:
        self.tmp = tmp
        self.bin = tmp / "bin"
        self.bin.mkdir()
        self.log = tmp / "cmake-ran.log"
        self.log.touch()
        self.memo = tmp / "cache" / "cannbuild" / "tools.json"
        tree = HostTree(tmp / "host")
        tree.root.mkdir()
        tree.toolkit_cann("8.5.0")
        self.host = tree.root

    def run(self) -> subprocess.CompletedProcess:
        env = clean_env(
            PATH=f"{self.bin}{os.pathsep}{os.environ['PATH']}",
            XDG_CACHE_HOME=str(self.tmp / "cache"),
        )
        done = cannbuild("doctor", "--json", "--sysroot", str(self.host), cwd=self.tmp, env=env)
        assert done.returncode in (0, 1), done.stderr
        return done

    def cmake(self) -> Optional[str]:
        return json.loads(self.run().stdout)["host"]["tools"].get("cmake")

    def runs(self) -> List[str]:
        return self.log.read_text().splitlines()


def test_a_second_doctor_starts_no_process_for_an_unchanged_tool(tmp_path):
    doctor = Doctor(tmp_path)
    _cmake(doctor.bin, "3.20.0", doctor.log)
    assert doctor.cmake() == "3.20.0" and doctor.runs() == ["--version"]
    assert list(json.loads(doctor.memo.read_text()).values()).count("3.20.0") == 1
    assert doctor.cmake() == "3.20.0" and doctor.runs() == ["--version"]  # not run again


def test_a_replaced_or_removed_tool_is_asked_again(tmp_path):
    doctor = Doctor(tmp_path)
    _cmake(doctor.bin, "3.20.0", doctor.log)
    assert doctor.cmake() == "3.20.0"
    _cmake(doctor.bin, "3.28.1", doctor.log)
    assert doctor.cmake() == "3.28.1" and len(doctor.runs()) == 2
    assert doctor.cmake() == "3.28.1" and len(doctor.runs()) == 2
    _copied_over_keeping_its_times(doctor, "3.28.2")  # `cp -p` onto it: same inode and size
    assert doctor.cmake() == "3.28.2" and len(doctor.runs()) == 3
    (doctor.bin / "cmake").unlink()  # the next cmake on PATH (or none) answers for itself
    assert doctor.cmake() not in ("3.20.0", "3.28.1", "3.28.2") and len(doctor.runs()) == 3


@pytest.mark.parametrize("hostile", ["garbage", "fifo"])
def test_a_memo_that_cannot_be_read_is_one_warning_and_read_as_absent(tmp_path, hostile):
    doctor = Doctor(tmp_path)
    _cmake(doctor.bin, "3.20.0", doctor.log)
    doctor.memo.parent.mkdir(parents=True)
    if hostile == "fifo":
        os.mkfifo(doctor.memo)
    else:
        doctor.memo.write_text("{not json")
    done = doctor.run()
    warned = [line for line in done.stderr.splitlines() if "tools.json" in line]
    assert len(warned) == 1 and warned[0].startswith("cannbuild: warning:"), done.stderr
    assert json.loads(done.stdout)["host"]["tools"]["cmake"] == "3.20.0"
    assert doctor.runs() == ["--version"] and doctor.memo.is_file()  # written anew
    assert doctor.cmake() == "3.20.0" and doctor.runs() == ["--version"]


def test_ccache_standing_in_for_a_compiler_is_asked_every_time(tmp_path):
    """ccache named `gcc` runs the next gcc on PATH: its answer is not its own file's."""
    ccache = tmp_path / "ccache"
    shutil.copy2(shutil.which("make") or "/usr/bin/make", ccache)  # any ELF file
    (tmp_path / "gcc").symlink_to(ccache)
    args = ("-dumpfullversion",)
    assert binary_key(ToolSpec(name="gcc", version_args=args), str(tmp_path / "gcc")) is None
    assert binary_key(ToolSpec(name="ccache", version_args=args), str(ccache)) is not None
