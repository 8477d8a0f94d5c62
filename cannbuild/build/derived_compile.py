"""Whether the selected operators' host sources compile against the toolkit.

A header that is there but lacks what the sources use (a stub, a header of another
release) passes every presence check and stops the real build at its first host-side
compile.  So the selected operators' definition, infershape, tiling and op_api sources
(`<op>/op_host/*.cpp`, `<op>/op_api/*.cpp`, `<op>/op_graph/*.cpp`: what
cannmirror/ops-transformer@v9.0.0 cmake/obj_func.cmake:80-135 compiles for an operator)
are compiled with `-fsyntax-only` against the toolkit, with the include folders the
checkout's CMake gives (build/derived_cmake.py).  The result is kept per commit with the
toolkit headers the compiler read (their size and time): a no-op rerun stats them and
compiles nothing; a changed or removed header compiles again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
import subprocess
import tempfile
import time
from concurrent.futures import ThreadPoolExecutor
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

import msgspec
from msgspec import Struct

from .. import proc
from ..bounded import MEMO, SOURCE_FILE, head, read_state, read_text
from ..errors import UsageError
from ..host.check import FAIL, PASS, Check
from ..workspace import write_json_atomic
from .derived_cmake import CmakeFacts
from .derived_includes import HOST_FOLDERS, op_folders

COMPILED = 1  # what a memo was made by
TIMEOUT_S = 300.0
MAX_SOURCES = 40  # a bound on one check: FlashAttention has five
_ERROR = re.compile(r"^(\S+?):(\d+):(?:\d+:)? (?:fatal )?error: (.*)$", re.M)


class Compiled(Struct, frozen=True, kw_only=True):
    """One source's verdict."""

    source: str  # checkout-relative
    ok: bool
    error: str = ""  # the first `file:line: error: ...`, paths as the compiler printed them
    headers: Tuple[Tuple[str, int, int], ...] = ()  # toolkit headers read: path, size, mtime_ns


class CompileCheck(Struct, frozen=True, kw_only=True):
    scanner: int
    compiler: str
    sources: Tuple[Compiled, ...]
    seconds: float
    cached: bool = False

    @property
    def failed(self) -> Tuple[Compiled, ...]:
        return tuple(c for c in self.sources if not c.ok)


def host_sources(checkout: Path, ops: Sequence[str]) -> List[str]:
    folders = op_folders(checkout, ops)
    out: List[str] = []
    for folder in folders.values():
        for sub in HOST_FOLDERS:
            out += sorted(
                p.relative_to(checkout).as_posix() for p in (checkout / folder / sub).glob("*.cpp")
            )
    return out[:MAX_SOURCES]


def find_compiler(env: Mapping[str, str]) -> Optional[str]:
    for name in (env.get("CXX", ""), "c++", "g++", "clang++"):
        found = shutil.which(name, path=env.get("PATH")) if name else None
        if found:
            return found
    return None


class CompileTarget(Struct, frozen=True, kw_only=True):
    """What one step's check compiles: its checkout, operators and CMake facts."""

    step: str
    commit: str
    ops: Tuple[str, ...]
    checkout: Path
    opbase: Optional[Path]
    cmake: CmakeFacts


def include_flags(t: CompileTarget, home: Path, arch: str) -> List[str]:
    """-I for each include folder the checkout's CMake gives that is there, by root."""
    flags: List[str] = []
    roots = (
        (t.checkout, t.cmake.repo_dirs),
        (t.opbase, t.cmake.opbase_dirs),
        (home, t.cmake.toolkit_dirs),
    )
    for root, dirs in roots:
        if root is None:
            continue
        for d in dirs:
            folder = root / d.replace("{arch}", arch)
            if folder.is_dir():
                flags.append(f"-I{folder}")
    return list(dict.fromkeys(flags))


def _memo_key(compiler: str, sources: Sequence[str], flags: Sequence[str]) -> str:
    text = "\n".join([str(COMPILED), compiler, *sources, *flags])
    return hashlib.sha256(text.encode()).hexdigest()[:16]


def _still_valid(check: CompileCheck) -> bool:
    for c in check.sources:
        for path, size, mtime in c.headers:
            try:
                st = os.stat(path)
            except OSError:
                return False
            if (st.st_size, st.st_mtime_ns) != (size, mtime):
                return False
    return True


def compile_check(
    *,
    checkout: Path,
    sources: Sequence[str],
    flags: Sequence[str],
    home: Path,
    compiler: str,
    memo: Optional[Path],
    commit: str,
    keep: bool,
    jobs: int = 2,
) -> CompileCheck:
    """Each source compiled with -fsyntax-only (or the memo's verdicts, when every toolkit
    header they read is as it was)."""
    key = _memo_key(compiler, sources, flags)
    path = memo / f"{commit}-compile-{key}.json" if memo is not None else None
    if path is not None:
        known: Optional[CompileCheck] = read_state(path, MEMO, CompileCheck)
        if known is not None and known.scanner == COMPILED and _still_valid(known):
            return msgspec.structs.replace(known, cached=True)
    start = time.monotonic()
    with ThreadPoolExecutor(max_workers=max(1, min(jobs, len(sources)))) as pool:
        results = list(pool.map(lambda s: _compile(checkout, s, flags, home, compiler), sources))
    check = CompileCheck(
        scanner=COMPILED,
        compiler=compiler,
        sources=tuple(results),
        seconds=round(time.monotonic() - start, 2),
    )
    if path is not None and keep:
        with contextlib.suppress(OSError):
            write_json_atomic(path, msgspec.to_builtins(check))
    return check


def _compile(
    checkout: Path, source: str, flags: Sequence[str], home: Path, compiler: str
) -> Compiled:
    with tempfile.TemporaryDirectory(prefix="cannbuild-syntax-") as tmp:
        deps = Path(tmp) / "deps.d"
        argv = [
            compiler,
            "-std=c++17",
            "-fsyntax-only",
            "-w",
            "-fmax-errors=5",
            "-MD",
            "-MF",
            str(deps),
            *flags,
            str(checkout / source),
        ]
        try:
            done = proc.run(argv, cwd=checkout, timeout=TIMEOUT_S)
        except subprocess.TimeoutExpired:
            return Compiled(source=source, ok=False, error=f"no verdict in {TIMEOUT_S:.0f} s")
        output = done.stderr.decode("utf-8", "replace")
        first = _ERROR.search(output)
        headers = _toolkit_headers(deps, home) if deps.is_file() else ()
    if done.returncode == 0:
        return Compiled(source=source, ok=True, headers=headers)
    error = first.group(0).strip() if first else (output.strip().splitlines() or ["?"])[-1]
    return Compiled(source=source, ok=False, error=error[:400], headers=headers)


def _toolkit_headers(deps: Path, home: Path) -> Tuple[Tuple[str, int, int], ...]:
    text = read_text(deps, SOURCE_FILE, errors="replace").replace("\\\n", " ")
    top = os.path.realpath(home)
    out: Dict[str, Tuple[int, int]] = {}
    for token in text.split()[1:]:
        real = os.path.realpath(token)
        if not real.startswith(top + os.sep) or token in out:
            continue
        with contextlib.suppress(OSError):
            st = os.stat(token)
            out[token] = (st.st_size, st.st_mtime_ns)
    return tuple((p, size, mtime) for p, (size, mtime) in sorted(out.items()))


def compile_row(
    t: CompileTarget, home: Path, arch: str, memo: Optional[Path], compiler: str
) -> Optional[Check]:
    """Doctor's row for whether `t`'s host sources compile against the toolkit."""
    sources = host_sources(t.checkout, t.ops)
    row_id = f"recipe.derived.compile.{t.step}"
    if not sources:
        return None  # a step of no operator (opbase's own build): nothing of its own
    flags = include_flags(t, home, arch)
    check = compile_check(
        checkout=t.checkout,
        sources=sources,
        flags=flags,
        home=home,
        compiler=compiler,
        memo=memo,
        commit=t.commit,
        keep=True,
    )
    how = "memo: no toolkit header it read changed" if check.cached else f"{check.seconds:.1f} s"
    if not check.failed:
        return Check(
            id=row_id,
            status=PASS,
            detail=f"{t.step}: the {len(sources)} host sources of {', '.join(t.ops)} "
            f"({', '.join(sorted({s.split('/')[-2] for s in sources}))}) compile against the "
            f"toolkit (-fsyntax-only, {how})",
        )
    header, error = first_header_error(check, home)
    stubs = _stubs_read(check.failed[0].headers)
    what = f"; it reads the sandbox's stand-in headers {', '.join(stubs[:4])}" if stubs else ""
    named = f" in the toolkit header {header}" if header else ""
    return Check(
        id=row_id,
        status=FAIL,
        detail=f"{t.step} at {t.commit[:12]}: {len(check.failed)} of {len(sources)} host sources "
        f"of {', '.join(t.ops)} do not compile against {home}{named}: {check.failed[0].source}: "
        f"{error}{what}",
        hint="A toolkit header is there but is not the one this ref's host code is written "
        "against (a stub, another release's): install the toolkit of the release the recipe "
        "names. Without it the build stops at this compile.",
        blocking=True,
    )


def _stubs_read(headers: Sequence[Tuple[str, int, int]]) -> List[str]:
    out = []
    for path, _, _ in headers:
        with contextlib.suppress(OSError, UsageError):
            if b"cannbuild sandbox stub of" in head(Path(path), SOURCE_FILE, 256):
                out.append(Path(path).name)
    return out


def first_header_error(check: CompileCheck, home: Path) -> Tuple[str, str]:
    """(the toolkit header the first error is in or names, the error) of a failed check;
    the header is "" when the error is in the checkout's own code."""
    failed = check.failed
    if not failed:
        return "", ""
    error = failed[0].error
    top = os.path.realpath(home)
    where = error.split(":", 1)[0]
    if os.path.realpath(where).startswith(top + os.sep):
        return os.path.relpath(os.path.realpath(where), top), error
    missing = re.search(r"error: (\S+): No such file or directory", error)
    return (missing.group(1) if missing else ""), error
