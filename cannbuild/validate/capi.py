"""Compile and run kernels/flash_attention/fa_check.cpp against the installed package.

The compile line is the one ops-transformer's build.sh uses for a custom
package example (include the vendor's op_api/include and the toolkit's
include; link -lopapi_math -lcust_opapi -lascendcl -lnnopbase -lc_sec with an
rpath to the vendor lib), so the same source builds on a real install.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from msgspec import Struct

from ..bounded import BINARY, RUN_FILE, digest, read_state
from ..errors import FREE_SPACE, StorageError, UsageError, says_disk_full
from ..host.toolkit import host_arch
from ..proc import run
from ..resources import data_dir
from ..workspace import write_atomic

RUN_TIMEOUT_S = 600
COMPILE_TIMEOUT_S = 600
# fa_check.cpp prints one line per case: `CASE <name> OK <ms>` or `CASE <name> ERROR <api> <code>
# <aclGetRecentErrMsg()>`.
_CASE_LINE = re.compile(r"^CASE (\S+) (OK|ERROR)(?: (.*))?$")


class Compiled(Struct, frozen=True, kw_only=True):
    ok: bool
    binary: Optional[Path]
    command: str
    output: str

    @property
    def first_error(self) -> str:
        """The linker's `undefined reference to ...` (it names the missing symbol), else the
        first error line, else the output's end."""
        lines = self.output.splitlines()
        return next(
            (line for line in lines if "undefined reference" in line),
            next((line for line in lines if "error" in line), self.output[-300:]),
        )


class CaseRun(Struct, frozen=True, kw_only=True):
    name: str
    ok: bool
    kernel_ms: Optional[float]
    error: Optional[str]


def fa_check_source() -> Path:
    return data_dir("kernels") / "flash_attention" / "fa_check.cpp"


# fa_check's libraries, as ops-transformer's build.sh links a custom-package example
FA_LIBS = ("opapi_math", "cust_opapi", "ascendcl", "nnopbase")


def compile_command(
    vendor: Path,
    ascend_home: str,
    out: Path,
    cxx: str,
    source: Optional[Path] = None,
    extra_includes: Sequence[Path] = (),
    libs: Sequence[str] = FA_LIBS,
) -> List[str]:
    """The compile line of a check program (fa_check by default; the sibling repositories'
    checks name theirs, with the libraries their own build.sh links an example with)."""
    lib = vendor / "op_api" / "lib"
    # build.sh's g++ line for a custom-package example (reference cann-build-systems.md §3.3):
    #   -I <vendor>/op_api/include -I $ASCEND_HOME_PATH/include -L <vendor>/op_api/lib
    #   -L $ASCEND_HOME_PATH/lib64 -lopapi_math -lcust_opapi -lascendcl -lnnopbase
    #   -I .../aclnnop -lc_sec -Wl,-rpath=<vendor>/op_api/lib
    # libopapi_math.so comes from the SoC's ops package, not the custom .run: the L0 APIs the
    # operator calls live there.
    includes = [word for folder in extra_includes for word in ("-I", str(folder))]
    return [
        cxx,
        "-std=c++17",
        # it reads files and calls the package: its own speed is not what it measures, and
        # -O2 took 1.6 s of a cold validation to -O0's 0.9 s
        "-O0",
        str(source or fa_check_source()),
        *includes,
        "-I",
        str(vendor / "op_api" / "include"),
        "-I",
        f"{ascend_home}/include",
        "-L",
        str(lib),
        "-L",
        f"{ascend_home}/lib64",
        *(f"-l{name}" for name in libs),
        "-I",
        f"{ascend_home}/{host_arch()}-linux/include/aclnnop",
        "-lc_sec",
        f"-Wl,-rpath={lib}",
        "-o",
        str(out),
    ]


def compile_check(
    vendor: Path,
    env: Mapping[str, str],
    workdir: Path,
    source: Optional[Path] = None,
    extra_includes: Sequence[Path] = (),
    libs: Sequence[str] = FA_LIBS,
) -> Compiled:
    """Compile a check program (fa_check unless `source` names another) in `workdir`,
    reusing the binary there when the line, the source and the vendor library are the same."""
    program = source or fa_check_source()
    cxx = (
        shutil.which("g++", path=env.get("PATH"))
        or shutil.which("c++", path=env.get("PATH"))
        or "g++"
    )
    home = env.get("ASCEND_HOME_PATH", "")
    binary = workdir / program.stem
    argv = compile_command(vendor, home, binary, cxx, program, extra_includes, libs)
    shown = " ".join(argv)
    # Same compile line, same sources and same libcust_opapi.so: reuse the binary.
    key = hashlib.sha256(shown.encode())
    headers = sorted(p for d in extra_includes for p in Path(d).glob("*.h"))
    for path in (program, *headers, vendor / "op_api" / "lib" / "libcust_opapi.so"):
        with contextlib.suppress(UsageError):
            key.update(digest(path, BINARY).encode())
    stamp = workdir / f"{program.stem}.key"
    if binary.is_file() and read_state(stamp, RUN_FILE, bytes) == key.hexdigest().encode():
        return Compiled(ok=True, binary=binary, command=shown, output="(cached)")
    workdir.mkdir(parents=True, exist_ok=True)
    proc = run(argv, env=env, timeout=COMPILE_TIMEOUT_S)
    output = (proc.stdout + proc.stderr).decode("utf-8", "replace").strip()
    if proc.returncode != 0:
        if says_disk_full(output.splitlines()):  # the disk's failure, not the package's
            raise StorageError(
                f"{program.name} could not be compiled in {workdir}: the compiler says the disk "
                f"is full ({_disk_line(output)}).",
                f"{FREE_SPACE}, or pass --workspace on a larger one, then validate again.",
            )
        return Compiled(ok=False, binary=None, command=shown, output=output)
    write_atomic(stamp, key.hexdigest().encode())
    return Compiled(ok=True, binary=binary, command=shown, output=output)


def _disk_line(output: str) -> str:
    """The compiler's line that says the disk is full."""
    return next(line for line in output.splitlines() if says_disk_full([line])).strip()


def run_cases(
    binary: Path, manifest: Path, env: Mapping[str, str], names: Sequence[str]
) -> Tuple[Dict[str, CaseRun], str, int]:
    proc = run([str(binary), str(manifest)], env=env, timeout=RUN_TIMEOUT_S)
    stdout = proc.stdout.decode("utf-8", "replace")
    runs: Dict[str, CaseRun] = {}
    for line in stdout.splitlines():
        match = _CASE_LINE.match(line.strip())
        if not match:
            continue
        name, status, rest = match.group(1), match.group(2), match.group(3) or ""
        if status == "OK":
            try:
                ms: Optional[float] = float(rest)
            except ValueError:
                ms = None
            runs[name] = CaseRun(name=name, ok=True, kernel_ms=ms, error=None)
        else:
            runs[name] = CaseRun(name=name, ok=False, kernel_ms=None, error=rest)
    output = (stdout + proc.stderr.decode("utf-8", "replace")).strip()
    # A case with no CASE line crashed the program or was never reached; the last line printed
    # is the best clue.
    for name in names:
        if name not in runs:
            last = output.splitlines()[-1] if output else f"exit code {proc.returncode}"
            runs[name] = CaseRun(
                name=name,
                ok=False,
                kernel_ms=None,
                error=f"{binary.name} did not run this case ({last})",
            )
    return runs, output, proc.returncode


def library_env(env: Mapping[str, str]) -> Dict[str, str]:
    out = dict(env)
    # One thread per CPU this process may use, unless the caller set it.
    out.setdefault("OMP_NUM_THREADS", str(len(os.sched_getaffinity(0))))
    return out
