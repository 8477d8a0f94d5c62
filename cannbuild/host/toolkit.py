"""Find the CANN toolkit, its version, layout and installed components.

Candidates are tried in a fixed order and the matching rule is reported, so a
user can see *why* this toolkit was picked (the classic failure is a stale
`ASCEND_HOME_PATH` or an installer record pointing at another install).
Both layouts are understood: up to 8.3 `<root>/ascend-toolkit/<ver>` plus a
`latest` symlink farm; from 8.5 `<root>/cann-<ver>` plus a `cann` link.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import Dict, Iterable, List, Mapping, Optional, Tuple

from msgspec import Struct, field

from .infofiles import InfoFileError, get_ci, read_kv, version_cfg_running
from .sysroot import SymlinkLoopError, Sysroot
from .versions import CannVersion, parse_cann_version

# A root install lives here; a non-root one under `$HOME/Ascend`, added from the env below.
DEFAULT_ROOTS = ("/usr/local/Ascend",)
# The CANN installer's record, one line `Install_Path=<root>`; a non-root install writes
# `$HOME/Ascend/ascend_cann_install.info` instead (reference cann-environment.md §1.1).
INSTALLER_RECORD = "/etc/Ascend/ascend_cann_install.info"
# The real tree of the >= 8.5 layout: `/usr/local/Ascend/cann-8.5.0`, with `cann -> cann-8.5.0`.
_CANN_DIR_RE = re.compile(r"^cann-(\d.*)$")
# The outcome of a candidate folder this user may not list: a root install made without
# `--install-for-all` is another user's toolkit (reference cann-environment.md §5).
UNREADABLE = "cannot be read"


def host_arch() -> str:
    machine = os.uname().machine.lower()  # what platform.machine() reads, without its import
    # Some systems report `arm64`; CANN's folders say `aarch64-linux` (reference §1.2, §7).
    return {"arm64": "aarch64", "amd64": "x86_64"}.get(machine, machine)


class Candidate(Struct, frozen=True, kw_only=True):
    rule: str
    path: Path
    explicit: bool = False


class Toolkit(Struct, frozen=True, kw_only=True):
    """A CANN toolkit as found on the host."""

    path: Path
    real_path: Path
    found_by: str
    layout: str  # "cann" (>= 8.5) or "ascend-toolkit" (<= 8.3)
    arch: Optional[str]
    version: Optional[CannVersion]
    version_text: Optional[str]
    version_source: Optional[str]
    set_env: Optional[Path]
    share_info: Dict[str, str] = field(default_factory=dict)
    components: Dict[str, str] = field(default_factory=dict)
    problems: Tuple[str, ...] = ()


def toolkit_home(toolkit: Toolkit, build_env: Optional[Mapping[str, str]]) -> Path:
    """Where a build looks for the toolkit: the ASCEND_HOME_PATH its own set_env.sh
    exports (`<root>/cann-<ver>` from 8.5, `ascend-toolkit/latest` up to 8.3: reference
    cann-environment.md §1), else, not sourced or exporting none, the folder found."""
    return Path((build_env or {}).get("ASCEND_HOME_PATH") or toolkit.path)


def other_install(toolkit: Toolkit, home: str) -> Optional[Path]:
    """The install that set_env.sh's ASCEND_HOME_PATH really runs when it is not `toolkit`,
    else None.  Up to 8.3 `ascend-toolkit/set_env.sh` exports `latest`, a folder of links
    into one of the versions that may sit side by side (cann-environment.md 1.2): a
    `--cann-path` naming another version would be reported but not built with."""
    for component in ("runtime", "compiler", "opp"):
        ours, theirs = toolkit.real_path / component, Path(home) / component
        if ours.exists() and theirs.exists() and ours.resolve() != theirs.resolve():
            return theirs.resolve().parent
    return None


class ToolkitSearch(Struct, frozen=True, kw_only=True):
    toolkit: Optional[Toolkit]
    tried: Tuple[Tuple[str, str, str], ...]  # (rule, path, outcome)
    installs: Tuple[Path, ...]
    warnings: Tuple[str, ...]
    explicit_failure: Optional[str] = None


def candidates(
    sysroot: Sysroot, env: Mapping[str, str], cann_path: Optional[Path]
) -> Tuple[List[Candidate], List[str]]:
    """All places to look, in the documented order, plus problems met on the way."""
    found: List[Candidate] = []
    notes: List[str] = []
    # Order of reference cann-environment.md §7: what the user said, then the environment
    # set_env.sh exported, then the installer record, then the default roots.  The env comes before
    # the record because the record may name another install than the one sourced (sgl-kernel-npu
    # issue 485); ops-transformer's build.sh also tries -p, ASCEND_HOME_PATH, then dirname
    # ASCEND_OPP_PATH.
    if cann_path is not None:
        found.append(
            Candidate(rule="--cann-path", path=sysroot.from_user(cann_path), explicit=True)
        )
    for var in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME"):
        if env.get(var):
            found.append(Candidate(rule=var, path=sysroot.from_user(env[var])))
    # set_env.sh exports ASCEND_OPP_PATH=${ASCEND_TOOLKIT_HOME}/opp.
    if env.get("ASCEND_OPP_PATH"):
        opp = sysroot.from_user(env["ASCEND_OPP_PATH"])
        found.append(Candidate(rule="dirname(ASCEND_OPP_PATH)", path=opp.parent))
    roots = [sysroot.path(r) for r in DEFAULT_ROOTS]
    home = sysroot.home(env)
    if home is not None:
        roots.append(home / "Ascend")
    records = [sysroot.path(INSTALLER_RECORD)]
    if home is not None:
        records.append(home / "Ascend" / "ascend_cann_install.info")
    for record in records:
        if not record.exists():
            continue
        try:
            install_path = get_ci(read_kv(record), "Install_Path")
        except InfoFileError as exc:
            notes.append(f"installer record {sysroot.display(record)} {exc.problem}")
            continue
        if not install_path:
            notes.append(f"installer record {sysroot.display(record)} has no Install_Path=")
            continue
        base = sysroot.from_user(install_path)
        rule = f"installer record {sysroot.display(record)}"
        # `cann` (>= 8.5), `ascend-toolkit/latest` (<= 8.3; kept as a link to `cann` in 9.0 images)
        # and `latest` (opbase v8.5.0's default ASCEND_HOME_PATH, ops-transformer's last fallback).
        for sub in ("cann", "ascend-toolkit/latest", "latest"):
            found.append(Candidate(rule=rule, path=base / sub))
    for root in roots:
        for sub in ("cann", "ascend-toolkit/latest", "latest"):
            found.append(Candidate(rule=f"default {sysroot.display(root / sub)}", path=root / sub))
    return found, notes


def list_installs(sysroot: Sysroot, env: Mapping[str, str]) -> Tuple[Path, ...]:
    """Every toolkit install side by side: `cann-*` and `ascend-toolkit/<ver>`."""
    roots = [sysroot.path(r) for r in DEFAULT_ROOTS]
    home = sysroot.home(env)
    if home is not None:
        roots.append(home / "Ascend")
    installs: List[Path] = []
    for root in roots:
        try:
            entries = sorted(root.iterdir()) if root.is_dir() else []
        except OSError:
            entries = []
        for entry in entries:
            # `cann-<ver>` folders only: the `cann` link itself does not match, and a link named
            # `cann-...` would list the same install twice.
            if _CANN_DIR_RE.match(entry.name) and entry.is_dir() and not entry.is_symlink():
                installs.append(entry)
        farm = root / "ascend-toolkit"
        try:
            subdirs = sorted(farm.iterdir()) if farm.is_dir() else []
        except OSError:
            subdirs = []
        for entry in subdirs:
            # `latest` is a folder of links to `../<ver>/...` (<= 8.3) or a link to `cann`
            # (8.5 on); names that are no version (set_env.sh, a stray file) are skipped below.
            if entry.name == "latest" or entry.is_symlink() or not entry.is_dir():
                continue
            try:
                parse_cann_version(entry.name)
            except ValueError:
                continue
            installs.append(entry)
    return tuple(installs)


def find_toolkit(
    sysroot: Sysroot, env: Mapping[str, str], cann_path: Optional[Path] = None
) -> ToolkitSearch:
    cands, notes = candidates(sysroot, env, cann_path)
    tried: List[Tuple[str, str, str]] = []
    warnings = list(notes)
    seen: set = set()

    def searched(toolkit: Optional[Toolkit] = None, failure: Optional[str] = None) -> ToolkitSearch:
        return ToolkitSearch(
            toolkit=toolkit,
            tried=tuple(tried),
            installs=list_installs(sysroot, env),
            warnings=tuple(warnings),
            explicit_failure=failure,
        )

    for cand in cands:
        shown = sysroot.display(cand.path)
        try:
            real = sysroot.resolve(cand.path)
        except SymlinkLoopError:
            outcome = "symlink loop"
            tried.append((cand.rule, shown, outcome))
            if cand.explicit:
                return searched(failure=f"{cand.rule} {shown} {outcome}")
            warnings.append(f"{cand.rule}: {shown} is a symlink loop")
            continue
        # Two rules often reach one tree (ASCEND_HOME_PATH and the default `latest`); read it once.
        key = (cand.path, real)
        if key in seen:
            continue
        seen.add(key)
        problem = _not_a_toolkit(real)
        if problem:
            tried.append((cand.rule, shown, problem))
            if cand.explicit:
                return searched(failure=f"{cand.rule} {shown} {problem}")
            # Only a variable the user's shell exported is worth a warning: a stale
            # ASCEND_HOME_PATH is the classic way to build against the wrong toolkit.
            if cand.rule in ("ASCEND_HOME_PATH", "ASCEND_TOOLKIT_HOME", "dirname(ASCEND_OPP_PATH)"):
                warnings.append(f"{cand.rule} points at {shown}, which {problem}")
            continue
        tried.append((cand.rule, shown, "toolkit"))
        return searched(read_toolkit(sysroot, cand.path, real, cand.rule))
    return searched()


def _not_a_toolkit(real: Path) -> Optional[str]:
    if not real.exists():
        return "does not exist"
    if not real.is_dir():
        return "is not a directory"
    try:
        names = {p.name for p in real.iterdir()}
    except OSError as exc:
        return f"{UNREADABLE} ({exc.strerror})"
    # `<arch>-linux/` exists in both layouts and `version.cfg` in a <= 8.3 `latest`; torch_npu
    # refuses a home without `runtime/` and `compiler/`, so either one marks a toolkit too.
    if any(n.endswith("-linux") for n in names) or "version.cfg" in names:
        return None
    if "runtime" in names or "compiler" in names:
        return None
    return "is not a CANN toolkit (no <arch>-linux/, version.cfg, runtime/ or compiler/)"


def read_toolkit(sysroot: Sysroot, path: Path, real: Path, rule: str) -> Toolkit:
    problems: List[str] = []
    arch = _toolkit_arch(real)
    version_text, source = _read_version(sysroot, path, real, arch, problems)
    version: Optional[CannVersion] = None
    if version_text:
        try:
            version = parse_cann_version(version_text)
        except ValueError as exc:
            problems.append(f"{source}: {exc}")
    # The layout follows the resolved folder (`cann-8.5.0`) or the name it was reached by (`cann`).
    layout = "cann" if (_CANN_DIR_RE.match(real.name) or path.name == "cann") else "ascend-toolkit"
    return Toolkit(
        path=path,
        real_path=real,
        found_by=rule,
        layout=layout,
        arch=arch,
        version=version,
        version_text=version_text,
        version_source=source,
        set_env=_find_set_env(path, real),
        share_info=_share_info(real, problems),
        components=_components(real),
        problems=tuple(problems),
    )


def _toolkit_arch(real: Path) -> Optional[str]:
    arches = sorted(
        p.name[: -len("-linux")]
        for p in real.glob("*-linux")
        # `arm64-linux -> aarch64-linux` is an alias link in the 8.2 `latest` farm
        # (tests/fixtures/host/ls-ascend-toolkit-latest-8.2.txt); the host's arch wins if present.
        if p.is_dir() and p.name != "arm64-linux"
    )
    if host_arch() in arches:
        return host_arch()
    return arches[0] if arches else None


def _read_version(
    sysroot: Sysroot, path: Path, real: Path, arch: Optional[str], problems: List[str]
) -> Tuple[Optional[str], Optional[str]]:
    # The order of reference cann-environment.md §7 step 2, most reliable first.  The install
    # record says `version=8.2.RC1` (tests/fixtures/host/ascend_toolkit_install.info.a3-cann8.2).
    if arch:
        info = real / f"{arch}-linux" / "ascend_toolkit_install.info"
        if info.exists():
            try:
                value = get_ci(read_kv(info), "version")
                if value and _parses(value):
                    return value, f"{arch}-linux/ascend_toolkit_install.info"
                problems.append(
                    f"{sysroot.display(info)} has no usable version= line ({value!r})"
                    if value
                    else f"{sysroot.display(info)} has no version= line"
                )
            except InfoFileError as exc:
                problems.append(f"{sysroot.display(info)} {exc.problem}")
    # <= 8.3 fallback: `toolkit_running_version=[7.6.0.1.220:8.0.0]`, CANN version after the colon.
    # `latest/version.cfg` is a real file beside the links, so the path as given is read before the
    # resolved one, and only the first that exists.
    for cfg in (path / "version.cfg", real / "version.cfg"):
        if cfg.exists():
            try:
                value = version_cfg_running(read_kv(cfg))
                if value and _parses(value):
                    return value, "version.cfg"
                problems.append(f"{sysroot.display(cfg)} has no toolkit_running_version=[a:b]")
            except InfoFileError as exc:
                problems.append(f"{sysroot.display(cfg)} {exc.problem}")
            break
    for comp in ("runtime", "toolkit", "compiler"):
        info = real / comp / "version.info"
        if not info.exists():
            continue
        try:
            values = read_kv(info)
        except InfoFileError as exc:
            problems.append(f"{sysroot.display(info)} {exc.problem}")
            continue
        # `version_dir=8.5.0` names the CANN release; `Version=` is often the component's own
        # number (`Version=8.5.0.2.220` in opp/version.info), which _parses rejects.
        value = get_ci(values, "version_dir") or get_ci(values, "Version")
        if value and _parses(value):
            return value, f"{comp}/version.info"
    name = _version_from_name(real, path)
    if name:
        return name, "folder name"
    return None, None


def _parses(text: str) -> bool:
    try:
        parse_cann_version(text)
    except ValueError:
        return False
    return True


def _version_from_name(real: Path, path: Path) -> Optional[str]:
    match = _CANN_DIR_RE.match(real.name)
    if match and _parses(match.group(1)):
        return match.group(1)
    if _parses(real.name):
        return real.name
    # <= 8.3 `latest/runtime -> ../8.2.RC2/runtime`: the folder before `runtime` is the version.
    runtime = path / "runtime"
    if runtime.is_symlink():
        target = Path(os.readlink(runtime))
        if len(target.parts) >= 2 and _parses(target.parts[-2]):
            return target.parts[-2]
    return None


def _find_set_env(path: Path, real: Path) -> Optional[Path]:
    for candidate in (
        # `<root>/cann/set_env.sh` (>= 8.5); `ascend-toolkit/set_env.sh` sits beside `latest`;
        # `bin/setenv.bash` is what ops-transformer's build.sh sources from the package path.
        path / "set_env.sh",
        real / "set_env.sh",
        path.parent / "set_env.sh",
        real / "bin" / "setenv.bash",
    ):
        if candidate.is_file():
            return candidate
    return None


def _share_info(real: Path, problems: List[str]) -> Dict[str, str]:
    # `share/info/<pkg>/version.info` is what the repos' configure reads
    # (check_build_dependencies.py): opbase >= 8.5 needs runtime, metadef, bisheng-compiler, ...
    infos = sorted((real / "share" / "info").glob("*/version.info"))
    return _versions(((i.parent.name, i) for i in infos), real, problems)


def _components(real: Path) -> Dict[str, str]:
    names = ("runtime", "compiler", "opp", "toolkit", "hccl", "opp_kernel")
    return _versions(((n, real / n / "version.info") for n in names), real, None)


def _versions(
    infos: Iterable[Tuple[str, Path]], real: Path, problems: Optional[List[str]]
) -> Dict[str, str]:
    """name -> the `Version=` of its version.info, where it has one; an unreadable one is
    a problem (when `problems` collects them), a missing one skipped."""
    result: Dict[str, str] = {}
    for name, info in infos:
        if not info.is_file():
            continue
        try:
            value = get_ci(read_kv(info), "Version")
        except InfoFileError as exc:
            if problems is not None:
                problems.append(f"{info.relative_to(real)} {exc.problem}")
            continue
        if value:
            result[name] = value
    return result


def kernels_dir(toolkit: Toolkit, soc: str) -> Path:
    # Kernels install into the toolkit tree per SoC: `.../tbe/kernel/ascend910b/`.
    return toolkit.real_path / "opp" / "built-in" / "op_impl" / "ai_core" / "tbe" / "kernel" / soc


def kernel_entries(toolkit: Toolkit, soc: str) -> List[str]:
    """Op folders shipped for `soc`; a toolkit-only install has just `ops_oam`."""
    base = kernels_dir(toolkit, soc)
    try:
        names = sorted(p.name for p in base.iterdir())
    except OSError:
        return []
    # A toolkit without the ops package carries only `ops_oam` there, and every compute op then
    # fails with `AclOpKernelInit failed` / 561103 (reference cann-environment.md §1.5).
    return [n for n in names if n not in ("ops_oam", "config")]


def kernels_package_name(version: Optional[CannVersion], soc: str, arch: str) -> str:
    """The ops/kernels `.run` a user installs for this SoC (reference §1.5)."""
    ver = version.text if version else "<version>"
    new_scheme = (
        version is not None and version.comparable and (version.major, version.minor) >= (8, 5)
    )
    # Package names of reference cann-environment.md §1.5: before 8.5
    # `Ascend-cann-kernels-910b_...` / `Atlas-A3-cann-kernels_...`; from 8.5
    # `Ascend-cann-910b-ops_...` / `Ascend-cann-A3-ops_...`.
    if soc == "ascend910_93":
        if new_scheme:
            return f"Ascend-cann-A3-ops_{ver}_linux-{arch}.run"
        return f"Atlas-A3-cann-kernels_{ver}_linux-{arch}.run"
    short = soc.replace("ascend", "", 1)
    if new_scheme:
        return f"Ascend-cann-{short}-ops_{ver}_linux-{arch}.run"
    return f"Ascend-cann-kernels-{short}_{ver}_linux-{arch}.run"
