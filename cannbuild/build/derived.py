"""What the locked checkouts need of the toolkit, derived from them, as doctor rows.

For each step that will run, its repo's checkout at the locked commit is read
(derived_cmake: the find_package modules and the include folders; derived_includes: the
toolkit headers the selected operators' host-side code and the common code include) and
the result is kept per commit in `<workspace>/cache/derived/` (a commit never changes;
like the third-party memo, sources/archives.py), so a no-op run reads one file.  The
toolkit is then checked against it: one failing, blocking row per missing header or
module, naming the CANN package that ships it and the source file that needs it, before
any build starts (`requirement_checks` for doctor, plan and the session;
`refuse_derived` in the pipeline once the sources are checked out).
"""

from __future__ import annotations

import contextlib
import difflib
import hashlib
import os
import re
import time
from pathlib import Path
from typing import Callable, Dict, List, Mapping, Optional, Sequence, Tuple

import msgspec
from msgspec import Struct

from ..bounded import CHECKOUT_RECORD, MEMO, SOURCE_FILE, head, read_state
from ..errors import DoctorBlocked, UsageError
from ..host.check import FAIL, PASS, SKIP, WARN, Check
from ..host.contents import wall_of, wall_row
from ..host.socs import family_soc
from ..recipes import Recipe, StepSpec
from ..recipes.selection import ops_by_repo
from ..workspace import Workspace, write_json_atomic
from .cmake_text import is_test_file
from .derived_cmake import CmakeFacts, Lookup, scan_cmake
from .derived_compile import CompileTarget, compile_row
from .derived_includes import HeaderNeed, IncludeScan, scan_includes
from .toolkit_packages import OPBASE_PACKAGE, module_package

SCANNER = 3  # what a memo was made by: a memo of another scanner is read again
MAX_CMAKE_FILES = 2000
MAX_CMAKE_BYTES = 1 << 20
# Where a toolkit keeps headers whatever a cmake says: a header found only somewhere under
# these is not where this ref's build looks as cannbuild reads it (a warning: a folder that
# comes from elsewhere, such as cann/cmake's find_cann_package, may hold it), and only a
# header in none of them fails.
HEADER_TREES = ("{arch}-linux/include", "{arch}-linux/pkg_inc", "include", "pkg_inc")
MAX_TREE_FILES = 200_000


class Derived(Struct, frozen=True, kw_only=True):
    scanner: int
    repo: str
    commit: str
    opbase_commit: str
    ops: Tuple[str, ...]
    cmake: CmakeFacts
    includes: IncludeScan
    seconds: float  # what the scan took


class StepNeeds(Struct, frozen=True, kw_only=True):
    step: str
    derived: Derived
    cached: bool
    opbase_from: str  # the step that installs opbase before this one ("" when none)
    checkout: Path
    opbase: Optional[Path] = None  # the opbase source the build compiles (>= 9.0)


def memo_path(memo: Path, commit: str, opbase_commit: str, ops: Sequence[str]) -> Optional[Path]:
    """One memo per (commit, opbase commit, operators); only full object ids name one."""
    if not re.fullmatch(r"[0-9a-f]{40,64}", commit) or (
        opbase_commit and not re.fullmatch(r"[0-9a-f]{40,64}", opbase_commit)
    ):
        return None
    key = hashlib.sha256(",".join(ops).encode()).hexdigest()[:12]
    return memo / f"{commit}-{opbase_commit or 'none'}-{key}.json"


def derive(
    *,
    repo: str,
    checkout: Path,
    commit: str,
    ops: Sequence[str],
    opbase: Optional[Path] = None,
    opbase_commit: str = "",
    memo: Optional[Path] = None,
    keep: bool = True,
) -> Tuple[Derived, bool]:
    """The derivation for this checkout, and whether it came from the memo.  `keep`:
    write the memo (a run that acts; doctor and plan read it and write nothing)."""
    path = memo_path(memo, commit, opbase_commit, ops) if memo is not None else None
    if path is not None:
        known = read_state(path, MEMO)
        if isinstance(known, dict) and known.get("scanner") == SCANNER:
            try:
                return msgspec.convert(known, Derived), True
            except msgspec.ValidationError:
                pass  # a damaged memo is read again, never trusted
    start = time.monotonic()
    facts = scan_cmake(cmake_files(checkout))
    includes = scan_includes(
        repo=checkout,
        repo_dirs=facts.repo_dirs,
        ops=ops,
        repo_sources=facts.repo_sources,
        opbase=opbase,
        opbase_dirs=facts.opbase_dirs,
        opbase_sources=facts.opbase_sources,
    )
    derived = Derived(
        scanner=SCANNER,
        repo=repo,
        commit=commit,
        opbase_commit=opbase_commit,
        ops=tuple(ops),
        cmake=facts,
        includes=includes,
        seconds=round(time.monotonic() - start, 3),
    )
    if path is not None and keep:
        with contextlib.suppress(OSError):  # a memo that cannot be written only costs time
            write_json_atomic(path, msgspec.to_builtins(derived))
    return derived, False


def cmake_files(checkout: Path) -> Dict[str, str]:
    """The cmake a configure of this checkout reads: CMakeLists.txt at the top,
    cmake/**/*.cmake and common/**/CMakeLists.txt (tests' files left out)."""
    paths = [checkout / "CMakeLists.txt"]
    for pattern in ("cmake/**/*.cmake", "common/**/CMakeLists.txt"):
        paths += sorted(checkout.glob(pattern))
    files: Dict[str, str] = {}
    for path in paths[:MAX_CMAKE_FILES]:
        rel = path.relative_to(checkout).as_posix()
        if is_test_file(rel) or not path.is_file():
            continue
        with contextlib.suppress(UsageError):  # made a FIFO since: nothing to read
            files[rel] = head(path, SOURCE_FILE, MAX_CMAKE_BYTES).decode("utf-8", "replace")
    return files


def step_needs(
    recipe: Recipe,
    steps: Sequence[StepSpec],
    ws: Workspace,
    ops: Mapping[str, Sequence[str]],
    identities: Mapping[str, Mapping[str, object]],
    keep: bool = False,
) -> Tuple[List[StepNeeds], List[str]]:
    """The derivation of each step's checkout (`identities`: repo -> its checkout's
    commit and nested pins; `ops`: repo -> the operators it builds), and the repos that
    have no checkout yet."""
    out: List[StepNeeds] = []
    absent: List[str] = []
    opbase_step = next((s.name for s in steps if s.repo == "opbase"), "")
    for spec in steps:
        if spec.repo is None or any(n.derived.repo == spec.repo for n in out):
            continue
        identity = identities.get(spec.repo)
        commit = str((identity or {}).get("commit") or "")
        if not commit:
            absent.append(spec.repo)
            continue
        checkout = ws.checkout(spec.repo)
        opbase, opbase_commit = None, ""
        nested = (identity or {}).get("nested") or {}
        for pin in recipe.repo(spec.repo).pins:
            if pin.repo == "opbase" and isinstance(nested, dict) and pin.dest in nested:
                opbase, opbase_commit = checkout / pin.dest, str(nested[pin.dest])
        derived, cached = derive(
            repo=spec.repo,
            checkout=checkout,
            commit=commit,
            ops=tuple(sorted(ops.get(spec.repo, ()))),
            opbase=opbase,
            opbase_commit=opbase_commit,
            memo=ws.derived_memo,
            keep=keep,
        )
        from_step = opbase_step if recipe.opbase == "toolkit" and spec.repo != "opbase" else ""
        out.append(
            StepNeeds(
                step=spec.name,
                derived=derived,
                cached=cached,
                opbase_from=from_step,
                checkout=checkout,
                opbase=opbase,
            )
        )
    return out, absent


def checked_out(ws: Workspace, repos: Sequence[str]) -> Dict[str, Mapping[str, object]]:
    """What each repo's checkout marker says is checked out (sources/checkout.py)."""
    out: Dict[str, Mapping[str, object]] = {}
    for repo in repos:
        marker = read_state(ws.src / f".{repo}.checkout.json", CHECKOUT_RECORD)
        if isinstance(marker, dict) and (ws.checkout(repo) / ".git").exists():
            out[repo] = marker
    return out


def derived_checks(
    needs: Sequence[StepNeeds],
    absent: Sequence[str],
    home: Path,
    arch: str,
    memo: Optional[Path] = None,
    compiler: Optional[str] = None,
    soc: str = "",
) -> List[Check]:
    """The rows: one per missing header or module (failing, blocking), warnings for what
    the build may do without, a passing summary, with a `compiler` whether the
    selected operators' host sources compile against the toolkit (kept in `memo`), and
    with a `soc` whether each selected operator has a kernel for it."""
    rows: List[Check] = []
    if absent:
        rows.append(
            Check(
                id="recipe.derived",
                status=SKIP,
                detail=f"the headers and modules the build needs are derived from the checkout, "
                f"and there is none of {', '.join(absent)} at a locked commit yet",
                hint="`cannbuild fetch` checks the sources out (setup does, then checks them "
                "before it builds); run doctor again after it.",
            )
        )
    for n in needs:
        step_rows = _step_rows(n, home, arch) + [r for r in [_soc_row(n, soc)] if r]
        rows += step_rows
        # (not where a step of this run installs opbase, which these sources include: the
        # toolkit alone is not what they compile against; 8.3 and 8.5)
        if compiler is not None and not n.opbase_from and not any(r.blocking for r in step_rows):
            d = n.derived
            target = CompileTarget(
                step=n.step,
                commit=d.commit,
                ops=d.ops,
                checkout=n.checkout,
                opbase=n.opbase,
                cmake=d.cmake,
            )
            row = compile_row(target, home, arch, memo, compiler)
            rows += [row] if row is not None else []
    return rows


def _found(home: Path, dirs: Sequence[str], names: Sequence[str], arch: str) -> Optional[str]:
    for d in dirs:
        for name in names:
            rel = f"{d}/{name}".lstrip("/").replace("{arch}", arch)
            if (home / rel).exists():
                return rel
    return None


# Top-level folders of an ops repo that are no operator category: their subfolders have
# op_* folders too (ops-math@v9.0.0 common/inc/op_api, tests/ut/op_host; ops-transformer@v9.0.0
# common/include/..., the torch package under torch_extension/), but build.sh --ops=inc builds
# no operator: the build adds only its category folders (ops-math@v9.0.0 cmake/variables.cmake:213
# OPS_CATEGORY_LIST, CMakeLists.txt:108) and stops at "Specified ops(inc) not found in this
# depository" (cmake/func.cmake:772-779).  experimental/ is read apart (experimental_op).
NOT_CATEGORIES = frozenset({"common", "tests", "torch_extension", "docs", "experimental"})


def ships_op(checkout: Path, op: str) -> bool:
    """Whether a checkout has an operator folder `<category>/<op>` (the layout of every ops
    repo: math/segsum, attention/flash_attention_score)."""
    return bool(op_folders(checkout, op))


def op_folders(checkout: Path, op: str = "*") -> List[Path]:
    """The checkout's operator folders `<category>/<op>` (every one with `*`)."""
    try:
        found = checkout.glob(f"*/{op}")
        return [p for p in found if p.parent.name not in NOT_CATEGORIES and _is_op_folder(p)]
    except OSError:
        return []


def ops_in_checkouts(
    recipe: Recipe, ops: str, ws: Workspace, said: Callable[[str], str]
) -> Dict[str, Tuple[str, ...]]:
    """Each selected repo's operators, a bare op routed to the repo whose checkout has it
    (an experimental one to the repo that has it under experimental/), as the build does;
    `said`: how the user gave a field (Options.said), for the errors."""
    return ops_by_repo(
        recipe,
        ops,
        lambda repo, op: ships_op(ws.checkout(repo), op),
        lambda repo, op: experimental_op(ws.checkout(repo), op) is not None,
        said,
        lambda repo: [p.name for p in op_folders(ws.checkout(repo))],
    )


def experimental_op(checkout: Path, op: str) -> Optional[str]:
    """`experimental/<category>/<op>` where the checkout has the operator only there: its
    build.sh builds that tree only under `--experimental` (ops-transformer, ops-math,
    ops-nn and ops-cv, v8.5.0 to 9.2), which no step of cannbuild's passes."""
    try:
        hit = next((p for p in checkout.glob(f"experimental/*/{op}") if _is_op_folder(p)), None)
    except OSError:
        return None
    return None if hit is None else hit.relative_to(checkout).as_posix()


def _is_op_folder(folder: Path) -> bool:
    """An operator's folder holds its code in `op_*` folders (op_host, op_kernel, op_api,
    ...); a category (experimental/attention), shared code (mc2/common) or docs (docs/zh)
    at the same depth holds none, and build.sh --ops=<it> builds no operator."""
    return folder.is_dir() and any(p.is_dir() for p in folder.glob("op_*"))


# `this->AICore().AddConfig("ascend910b", ...)` in an operator's <op>_def.cpp: the SoCs it has
# kernels for.  The build compiles none for another and packs the host code alone
# (hicann/ops-math@9.1.0 cmake/gen_ops_info.cmake:272-293 check_op_supported greps the def for
# `.AddConfig("<soc>"`, :104-110 "[segsum] not supported"; ops-transformer's opbuild writes
# the def's SoCs to aic-<soc>-ops-info.ini).
# A SoC named by a variable (ops-nn@9.1.0 conv/conv2d_v2/op_host/conv2d_v2_def.cpp
# `AddConfig(version, ...)`) is not read: such a def gets no row.
_ADD_CONFIG = re.compile(r'\.AddConfig\(\s*"([A-Za-z0-9_]+)"')
_NAMED_CONFIG = re.compile(r'\.AddConfig\(\s*[^"\s)]')


def _soc_row(n: StepNeeds, soc: str) -> Optional[Check]:
    """A warning for the selected operators whose def names SoCs, but not `soc`: the
    package then holds no kernel of theirs for it (a toolkit's built-in kernel, where it
    has one, serves the op, so it is no refusal)."""
    lacking: List[str] = []
    socs: List[str] = []
    for op in n.derived.ops if soc else ():
        folders = op_folders(n.checkout, op)
        defs = sorted(folders[0].rglob(f"{op}_def.cpp")) if folders else []
        texts = [_text(d) for d in defs]
        said = {family_soc(c) for t in texts for c in _ADD_CONFIG.findall(t)}
        if said and soc not in said and not any(_NAMED_CONFIG.search(t) for t in texts):
            socs = sorted(said)
            lacking.append(f"{op} ({defs[0].relative_to(n.checkout)} adds {', '.join(socs)})")
    if not lacking:
        return None
    return Check(
        id=f"recipe.derived.soc.{n.step}",
        status=WARN,
        detail=f"{n.step}: {n.derived.repo} at {n.derived.commit[:12]} has no {soc} kernel of "
        f"{'; '.join(lacking)}: for --soc={soc} the build compiles none and packs the host "
        "code alone, so on this SoC the op runs the toolkit's own kernel, if it has one, and "
        "validation judges that one, not this build",
        hint=f"To build its kernel, build for a SoC its def adds (--soc {socs[0]}); else pick "
        f'operators (--ops) whose op_host/<op>_def.cpp has AddConfig("{soc}").',
    )


def _text(path: Path) -> str:
    return head(path, SOURCE_FILE, MAX_CMAKE_BYTES).decode("utf-8", "replace")


def _unknown_op_row(n: StepNeeds, op: str) -> Check:
    """A selected operator the checkout has no folder for (a misspelt --ops): the build
    would compile none of it and package whatever the repo builds by default."""
    where = experimental_op(n.checkout, op)
    if where is not None:
        return Check(
            id=f"recipe.derived.ops.{n.step}",
            status=FAIL,
            detail=f"{n.step}: {op!r} (--ops) is an experimental operator of "
            f"{n.derived.repo} at {n.derived.commit[:12]}, in {where}: its build.sh builds "
            "the operators under experimental/ only when given --experimental, which "
            "cannbuild's build step does not pass, so this build would not compile it",
            hint=f"Build it with the repo's own script in {n.checkout}: bash build.sh --pkg "
            f"--experimental --soc=<soc> --ops={op} (see its README), or pick an operator "
            "outside experimental/ for cannbuild to build.",
            blocking=True,
        )
    names = sorted({p.name for p in op_folders(n.checkout)})
    close = difflib.get_close_matches(op, names, n=3)
    # an operator of this repo for the example, not ops-transformer's in ops-math's row
    example = next((o for o in n.derived.ops if o in names), names[0] if names else "")
    return Check(
        id=f"recipe.derived.ops.{n.step}",
        status=FAIL,
        detail=f"{n.step}: {n.derived.repo} at {n.derived.commit[:12]} has no operator folder "
        f"<category>/{op} for the operator {op!r} (--ops)",
        hint=(f"Did you mean {' or '.join(close)}? " if close else "")
        + f"--ops takes operators by their folder name in {n.derived.repo}"
        + (f", e.g. {example}." if example else "."),
        blocking=True,
    )


def _step_rows(n: StepNeeds, home: Path, arch: str) -> List[Check]:
    d = n.derived
    rows: List[Check] = [_unknown_op_row(n, op) for op in d.ops if not ships_op(n.checkout, op)]
    elsewhere: List[str] = []
    optional: List[str] = []
    provided = 0
    lookups = 0
    for module in d.cmake.modules:
        package = module_package(module.name)
        if n.opbase_from and package == OPBASE_PACKAGE:
            provided += len(module.lookups)
            continue
        missing: List[Lookup] = []
        for lookup in module.lookups:
            lookups += 1
            places = [(home, lookup.dirs), (n.checkout, lookup.repo_dirs)]
            if n.opbase is not None:
                places.append((n.opbase, lookup.opbase_dirs))
            if not any(_found(root, dirs, lookup.names, arch) for root, dirs in places):
                missing.append(lookup)
        blocking = [m for m in missing if m.blocking and module.required]
        optional += [
            f"{m.names[0]} ({module.name}, {m.source})" for m in missing if m not in blocking
        ]
        if blocking:
            rows.append(_module_row(n, module.name, module.source, package, blocking, home, arch))
    checked = 0
    dirs = d.cmake.toolkit_dirs
    trees = _HeaderTrees(home, arch)
    for need in d.includes.headers if dirs else ():
        if n.opbase_from and need.package == OPBASE_PACKAGE:
            provided += 1
            continue
        checked += 1
        if _found(home, dirs, [need.header], arch) is not None:
            continue
        usual = trees.find(need.header)
        if usual is not None:
            elsewhere.append(f"{need.header} (at {usual}; {need.sources[0]})")
            continue
        rows.append(_header_row(n, need, len(dirs), home))
    if elsewhere:
        rows.append(
            Check(
                id=f"recipe.derived.elsewhere.{n.step}",
                status=WARN,
                detail=f"{n.step}: the toolkit has {', '.join(elsewhere)}, but not in a folder the "
                f"cmake at {d.commit[:12]} puts on the include path",
                hint="A toolkit laid out unlike this ref expects: if the compile stops at one of "
                "them, install the toolkit packages of this CANN release.",
            )
        )
    if optional:
        rows.append(
            Check(
                id=f"recipe.derived.optional.{n.step}",
                status=WARN,
                detail=f"{n.step}: {home} lacks what find_package modules look for without "
                f"stopping the configure: {'; '.join(optional)}",
                hint="Nothing to do unless the build fails on one of them (the configure goes "
                "on; nothing cannbuild read links or includes them).",
            )
        )
    if not any(r.status == FAIL for r in rows):
        rows.append(_summary(n, lookups, checked, provided, home))
    rows += [r for r in (_wall_row(n, home, p) for p in d.cmake.programs) if r is not None]
    return rows


def _wall_row(n: StepNeeds, home: Path, program: str) -> Optional[Check]:
    """The sandbox-wall row of a toolkit program the cmake runs (host/contents.py)."""
    rel, _, where = program.partition("\t")
    said = wall_of(home / rel)
    return wall_row(n.step, rel, where, said) if said is not None else None


class _HeaderTrees:
    """Every file under the toolkit's header trees, listed once and only when a header is
    not where the cmake looks (a real toolkit holds some thousands)."""

    def __init__(self, home: Path, arch: str) -> None:
        self.home, self.arch = home, arch
        self._files: Optional[List[str]] = None

    def find(self, header: str) -> Optional[str]:
        if self._files is None:
            self._files = []
            for tree in dict.fromkeys(t.replace("{arch}", self.arch) for t in HEADER_TREES):
                top = self.home / tree
                for dirpath, _, names in os.walk(top, followlinks=False):
                    rel = os.path.relpath(dirpath, self.home)
                    self._files += [f"{rel}/{name}" for name in names]
                    if len(self._files) > MAX_TREE_FILES:
                        break
        suffix = "/" + header
        return next((f for f in self._files if f.endswith(suffix)), None)


def _summary(n: StepNeeds, lookups: int, headers: int, provided: int, home: Path) -> Check:
    d = n.derived
    what = (
        f"the {lookups} lookups of {len(d.cmake.modules)} find_package modules"
        if d.cmake.modules
        else "no find_package module of the toolkit (none in its cmake)"
    )
    if d.cmake.toolkit_dirs:
        ops = ", ".join(d.ops) if d.ops else "its common code"
        what += (
            f" and the {headers} toolkit headers {ops} and the common code include "
            f"({d.includes.files} files read; {d.includes.unclassified} other includes, the C++ "
            "library, third-party or generated, not checked)"
        )
    else:
        what += " (its cmake names no toolkit include folder: headers not derived)"
    if provided:
        what += f"; {provided} of opbase come from step {n.opbase_from}"
    source = "memo" if n.cached else f"read in {d.seconds:.2f} s"
    return Check(
        id=f"recipe.derived.{n.step}",
        status=PASS,
        detail=f"{n.step} at {d.commit[:12]}: {what} are in {home} ({source})",
    )


def _module_row(
    n: StepNeeds,
    module: str,
    called: str,
    package: str,
    missing: Sequence[Lookup],
    home: Path,
    arch: str,
) -> Check:
    looked = "; ".join(
        f"{' or '.join(m.names)} in "
        + ", ".join(
            [d.replace("{arch}", arch) or "." for d in m.dirs]
            + [f"the checkout's {d or '.'}" for d in m.repo_dirs]
            + [f"opbase's {d or '.'}" for d in m.opbase_dirs]
        )
        + f" ({m.source}: {m.blocking})"
        for m in missing
    )
    return Check(
        id=f"recipe.derived.module.{module}",
        status=FAIL,
        detail=f"{n.step} at {n.derived.commit[:12]} runs find_package({module}) ({called}), which "
        f"looks under {home} for {looked}; none is there (CANN package {package})",
        hint=f"Install the CANN package {package} into this toolkit (same --install-path). "
        f"Without it the build stops: 'Could NOT find {module}' or a link error.",
        blocking=True,
    )


def _header_row(n: StepNeeds, need: HeaderNeed, folders: int, home: Path) -> Check:
    header, package, includers = need.header, need.package, need.includers
    more = f" and {includers - 1} more file{'s' if includers > 2 else ''}" if includers > 1 else ""
    return Check(
        id=f"recipe.derived.header.{header}",
        status=FAIL,
        detail=f"{n.step} needs the toolkit header {header} (CANN package {package}: "
        f"{need.shipped_by}), included by {need.sources[0]}{more}; it is in none of the "
        f"{folders} folders the cmake at {n.derived.commit[:12]} puts on the include path "
        f"under {home}, nor in the checkout",
        hint=f"Install the CANN package {package} into this toolkit (same --install-path). "
        f"Without it the compile stops at '{header}: No such file or directory'.",
        blocking=True,
    )


def refuse_blocking(rows: Sequence[Check]) -> None:
    """DoctorBlocked (exit 3) on the first failing row, as open_session does for doctor's."""
    for row in rows:
        if row.status == FAIL and row.blocking:
            raise DoctorBlocked(
                f"cannot build: doctor check {row.id} failed: {row.detail}.", row.hint
            )


def ops_of(text: str) -> Tuple[str, ...]:
    """--ops as the build takes it: a comma-separated list."""
    return tuple(sorted({o.strip() for o in text.split(",") if o.strip()}))
