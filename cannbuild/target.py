"""What a workspace is for: the host and SoC its builds target, remembered.

A run that takes the workspace to build or lock (setup, build, install, fetch, lock, and
bench, profile --run and diagnose when they bring it up to date) records the target it
ran for in `<workspace>/target.json`: the sandbox (its folder, variant and CANN), or the
--sysroot and --cann-path given, and the --soc, --ops-release and --repos given.  Every later task
on that workspace takes those values where the user sets none (tasks/_frame.resolve:
flag > environment > invoke config > remembered > default), so `setup --sandbox` is
followed by a bare `doctor`, `plan`, `validate`, `status`.

A run that names another host (a --cann-path, --sysroot or --sandbox the record does not
hold) uses nothing of the record: a SoC or ops release chosen for one host says nothing
about another.  A flag that differs from a remembered value wins, and `choose` words one
line saying so.  A record cannbuild cannot read is an error naming the file (exit 2),
never ignored: a workspace silently taken for another host would build or judge the
wrong thing.
"""

from __future__ import annotations

import datetime
import os
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Tuple

from msgspec import Struct
from msgspec.structs import asdict

from .bounded import TARGET, Absent, decode_json, read_bytes, refusal
from .errors import UsageError
from .options import Options
from .ownership import owned
from .sandbox.spec import SandboxInfo, load_info
from .workspace import Workspace, write_json_atomic

if TYPE_CHECKING:
    from .build.session import Session

SCHEMA = 1
# The Options fields a target is made of; the first six name the host.
HOST_FIELDS = ("sandbox", "sandbox_dir", "sandbox_variant", "sandbox_cann", "sysroot", "cann_path")
FIELDS = (*HOST_FIELDS, "soc", "ops_release", "repos")
# what only the sandbox's toolkit has: the emulated runtime's device table
# (sandbox/toolkit.py writes `<arch>-linux/conf/sandbox_npu.ini`, linked as `conf/`)
SANDBOX_MARK = "sandbox_npu.ini"


class Target(Struct, frozen=True, kw_only=True):
    """One workspace's target.  The Options fields hold what the user chose (None: the
    default, found or detected); the rest is what the run that recorded it found."""

    schema: int = SCHEMA
    sandbox: bool = False
    sandbox_dir: Optional[str] = None  # None: <workspace>/sandbox
    sandbox_variant: Optional[str] = None
    sandbox_cann: Optional[str] = None
    sysroot: Optional[str] = None  # None: / (the sandbox's own with sandbox)
    cann_path: Optional[str] = None  # None: found by the usual search
    soc: Optional[str] = None  # None: detected from the NPUs
    ops_release: Optional[str] = None  # None: the toolkit's own
    repos: Optional[Tuple[str, ...]] = None  # None: the recipe's default_repos
    built_soc: str = ""  # the SoC that run built for, given or detected
    toolkit_version: str = ""
    toolkit_path: str = ""
    set_by: str = ""  # the command, e.g. "cannbuild setup"
    set_at: str = ""  # "2026-12-02 14:30 UTC"

    def layer(self) -> Dict[str, object]:
        """The values it gives the frame (tasks/_frame.resolve): only what was chosen."""
        return {
            name: getattr(self, name)
            for name in FIELDS
            if getattr(self, name) not in (None, False, "")
        }

    @property
    def soc_word(self) -> str:
        return self.soc or self.built_soc

    @property
    def host(self) -> str:
        """The host, as a line names it: "the sandbox (A2, CANN 8.5.0)"."""
        if self.sandbox:
            return f"the sandbox ({self.sandbox_variant or '?'}, CANN {self.sandbox_cann or '?'})"
        where = self.cann_path or self.toolkit_path or "the toolkit this host has"
        version = f" (CANN {self.toolkit_version})" if self.toolkit_version else ""
        root = f" under {self.sysroot}" if self.sysroot else ""
        return f"{where}{version}{root}"

    @property
    def origin(self) -> str:
        return f"set by {self.set_by or 'a run'} on {self.set_at or 'an unknown date'}"

    def same_target(self, other: Target) -> bool:
        """The same choices and findings, whoever set them and when."""
        keep = ("set_by", "set_at")
        mine = {k: v for k, v in asdict(self).items() if k not in keep}
        return mine == {k: v for k, v in asdict(other).items() if k not in keep}


def target_file(workspace: Path) -> Path:
    return Workspace(root=workspace).target


def read_target(workspace: Path, asked: Optional[Path] = None) -> Optional[Target]:
    """The workspace's remembered target; None when there is none (a new workspace, one
    made before cannbuild remembered targets).  A record is data a user could have
    edited: a sandbox folder outside the workspace is taken only where a sandbox is, or
    where this run asks for one (`asked`: CANNBUILD_SANDBOX_DIR, the config), so the
    command that made a sandbox since deleted makes it again."""
    path = target_file(workspace)
    try:
        data = read_bytes(path, TARGET)
    except Absent:
        return None
    schema = decode_json(data, path, TARGET, _Schema).schema  # before the fields it names
    if schema != SCHEMA:
        raise refusal(path, TARGET, f"has schema {schema}; this cannbuild reads schema {SCHEMA}")
    target: Target = decode_json(data, path, TARGET, Target)
    where = Path(
        os.path.normpath(os.path.join(os.path.abspath(workspace), target.sandbox_dir or "."))
    )
    outside = not where.is_relative_to(os.path.abspath(workspace))
    mine = asked is not None and _same_place(Path(os.path.abspath(asked)), where)
    if target.sandbox and outside and not mine and load_info(where) is None:
        raise refusal(
            path,
            TARGET,
            f"names the sandbox folder {target.sandbox_dir}, outside the workspace, where no "
            "sandbox is: cannbuild makes a sandbox outside its workspace only when asked "
            "(--cann-path of a sandbox's toolkit)",
        )
    return target


class _Schema(Struct, kw_only=True):
    schema: int


def target_of(
    options: Options,
    *,
    soc: str,
    toolkit_version: str,
    toolkit_path: Path,
    command: str,
    when: str,
) -> Target:
    """The target a run with these (resolved) options ran for.  A value the options hold
    was chosen (a flag, a variable, the config or the record before): the defaults are
    None."""
    sandbox = options.sandbox
    own_dir = options.sandbox_dir is None or _same_place(
        options.sandbox_dir, options.workspace / "sandbox"
    )
    return Target(
        sandbox=sandbox,
        sandbox_dir=str(options.sandbox_dir) if sandbox and not own_dir else None,
        sandbox_variant=options.sandbox_variant if sandbox else None,
        sandbox_cann=options.sandbox_cann if sandbox else None,
        sysroot=None if sandbox or options.sysroot == Path("/") else str(options.sysroot),
        cann_path=str(options.cann_path) if options.cann_path else None,
        soc=options.soc,
        ops_release=options.ops_release,
        repos=options.repos or None,
        built_soc=soc,
        toolkit_version=toolkit_version,
        toolkit_path=str(toolkit_path),
        set_by=command,
        set_at=when,
    )


def record_session(session: Session, command: str) -> Optional[Target]:
    """Record the target a run on `session` (which took the workspace) ran for."""
    target = target_of(
        session.options,
        soc=session.soc,
        toolkit_version=session.toolkit.version_text or "",
        toolkit_path=session.toolkit.path,
        command=command,
        when=datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%d %H:%M UTC"),
    )
    return record(session.options.workspace, target)


def record(workspace: Path, target: Target) -> Optional[Target]:
    """Write the record (atomically) unless it already says the same; only into a
    workspace cannbuild owns.  `target` when it was written, else None."""
    if not owned(workspace, "workspace"):
        return None
    path = target_file(workspace)
    try:
        before = read_target(workspace)
    except UsageError:  # a damaged record is replaced by a good one
        before = None
    if before is not None and before.same_target(target):
        return None
    write_json_atomic(path, asdict(target))
    return target


class Choice(Struct, frozen=True, kw_only=True):
    """What the record gives a run (`layer`, for options.options_from) and the lines that say
    where an explicit choice differs from it."""

    layer: Mapping[str, object]
    notes: Tuple[str, ...] = ()


def _other_host(target: Target, given: Mapping[str, str], plain: Options) -> Optional[str]:
    """How the user named a host other than the remembered one, or None."""
    if target.sandbox:
        remembered_dir = Path(target.sandbox_dir or plain.workspace / "sandbox")
        if "sandbox" in given and not plain.sandbox:
            return f"{given['sandbox']} off"
        given_dir = plain.sandbox_dir
        if "sandbox_dir" in given and given_dir and not _same_place(given_dir, remembered_dir):
            return f"{given['sandbox_dir']} {plain.sandbox_dir}"
        if "sysroot" in given:
            return f"{given['sysroot']} {plain.sysroot}"
        inside = plain.cann_path is not None and any(
            _same_place(p, remembered_dir) for p in plain.cann_path.parents
        )
        if "cann_path" in given and not inside:
            return f"{given['cann_path']} {plain.cann_path}"
        return None
    if "sandbox" in given and plain.sandbox:
        return given["sandbox"]
    if "sysroot" in given and str(plain.sysroot) != (target.sysroot or "/"):
        return f"{given['sysroot']} {plain.sysroot}"
    if "cann_path" in given and plain.cann_path is not None:
        known = {p for p in (target.cann_path, target.toolkit_path) if p}
        if not known or not any(_same_place(plain.cann_path, Path(p)) for p in known):
            return f"{given['cann_path']} {plain.cann_path}"
    return None


def _same_place(a: Path, b: Path) -> bool:
    try:
        return a == b or os.path.samefile(a, b)
    except OSError:
        return False


def choose(target: Target, given: Mapping[str, str], plain: Options, builds: bool) -> Choice:
    """What the remembered `target` gives a run whose user set the fields `given` (field
    -> how it was spelled) and whose options without the record are `plain`; `builds`:
    the run builds (its lines say "building for"), else it only reads ("this run
    uses")."""
    verb = "building for" if builds else "this run uses"
    other = _other_host(target, given, plain)
    if other is not None:
        reads = "building against" if builds else "this run reads"
        return Choice(
            layer={},
            notes=(
                f"{other} differs from this workspace's target, {target.host} "
                f"({target.origin}): {reads} that host instead, and nothing else the "
                "workspace remembers is used",
            ),
        )
    notes: List[str] = []
    if target.sandbox:  # the same sandbox folder, another kind asked for
        for name, had in (
            ("sandbox_variant", target.sandbox_variant),
            ("sandbox_cann", target.sandbox_cann),
        ):
            value = getattr(plain, name)
            if name in given and had and value and str(value).lower() != had.lower():
                notes.append(
                    f"{given[name]} {value} differs from this workspace's target, {target.host} "
                    f"({target.origin}): this run asks for that sandbox instead"
                )
    soc = plain.soc
    if "soc" in given and soc and target.soc_word and soc != target.soc_word:
        notes.append(
            f"{given['soc']} {soc} differs from this workspace's {target.soc_word} "
            f"({target.origin}): {verb} {soc}"
        )
    release = plain.ops_release
    if "ops_release" in given and release and release.lower() != (target.ops_release or "").lower():
        was = target.ops_release or f"the toolkit's own ({target.toolkit_version or '?'})"
        notes.append(
            f"{given['ops_release']} {release} differs from this workspace's ops release, {was} "
            f"({target.origin}): {verb} the operator sources of {release}"
        )
    repos = plain.repos
    if "repos" in given and repos and target.repos and tuple(target.repos) != repos:
        notes.append(
            f"{given['repos']} {','.join(repos)} differs from this workspace's repos, "
            f"{','.join(target.repos)} ({target.origin}): {verb} {','.join(repos)}"
        )
    layer = {k: v for k, v in target.layer().items() if k not in given}
    return Choice(layer=layer, notes=tuple(notes))


def sandbox_of_toolkit(cann_path: Path) -> Optional[SandboxInfo]:
    """The sandbox whose tree holds `cann_path` (`--cann-path=<a sandbox's toolkit>`), or
    None.  Its toolkit carries SANDBOX_MARK; the sandbox folder above it its
    sandbox.json.  A toolkit with the mark but no sandbox above it is an error: it
    cannot be read as a real host (its NPUs live in the sandbox's sysroot)."""
    path = Path(os.path.abspath(cann_path))
    for folder in path.parents:
        info = load_info(folder)
        if info is not None and (info.sysroot == path or info.sysroot in path.parents):
            return info
    try:
        marks = [path / "conf" / SANDBOX_MARK, *path.glob(f"*-linux/conf/{SANDBOX_MARK}")]
        marked = any(m.is_file() for m in marks)
    except OSError:
        # a folder this user may not read (EACCES) is no sandbox's: doctor's toolkit row
        # judges it, naming --cann-path, and not as a file cannbuild could not write
        marked = False
    if marked:
        raise UsageError(
            f"--cann-path {cann_path} is the toolkit of a cannbuild sandbox (it has "
            f"conf/{SANDBOX_MARK}), but no sandbox.json is above it: its NPUs and driver live "
            "in the sandbox's sysroot, which cannot be found from here.",
            "Pass --sandbox (with the --workspace that holds it) instead, or the toolkit's path "
            "inside its sandbox folder.",
        )
    return None


__all__ = [
    "Choice",
    "Target",
    "choose",
    "read_target",
    "record",
    "record_session",
    "sandbox_of_toolkit",
    "target_of",
]
