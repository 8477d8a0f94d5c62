"""Judge the host's readings: one doctor row per question a CANN engineer would ask,
with a fix on every row that is not pass."""

from __future__ import annotations

import shutil
from pathlib import Path
from typing import Dict, Iterator, List, Optional, Set

import distro

from ..options import Options
from . import compat
from .check import FAIL, PASS, SKIP, WARN, Check
from .judge_npu import npu_checks
from .judge_python import python_stack_checks
from .reading import Readings
from .sysroot import Sysroot
from .toolchain import CapturedEnv, ToolResult, free_bytes
from .toolkit import UNREADABLE, Toolkit, ToolkitSearch, host_arch, other_install

GIB = 1 << 30
# Under 1 GiB a build cannot finish, so doctor blocks; under 10 GiB it only advises, the figure its
# hint gives for a full ops-transformer build.
DISK_FAIL_BYTES = 1 * GIB
DISK_WARN_BYTES = 10 * GIB


def judge(r: Readings, options: Options) -> List[Check]:
    toolkit = r.toolkit
    checks: List[Check] = []
    checks += _os_checks()
    # before the toolkit's rows: a build stops at the first failing row, and a sandbox's
    # toolkit lies in the workspace, so a space there fails set_env.sh's rows too
    checks += _workspace_path_checks(options.workspace)
    checks += _toolkit_checks(r.sysroot, r.search)
    checks += _env_checks(toolkit, r.captured, r.capture_error, r.sysroot)
    checks += npu_checks(r, options)
    # ccache is a build step's only with a compile cache configured (build/compile_cache.py)
    checks += _tool_checks(r.tools, needed={"ccache"} if options.cache_remote else set())
    checks += _disk_checks(options.workspace)
    checks += python_stack_checks(r.stack, toolkit, r.env, options.sandbox)
    return checks


def _os_checks() -> Iterator[Check]:
    # os-release is on every OS CANN supports; lsb_release and uname cost a process each
    info = distro.LinuxDistribution(include_lsb=False, include_uname=False)
    os_id = info.id() or "unknown"
    version = info.version() or ""
    name = info.name(pretty=True) or os_id
    # Image tags name the OS as `ubuntu22.04` or `openeuler24.03`: id plus major.minor.
    major_minor = ".".join(version.split(".")[:2])
    oses = compat.image_oses()
    if (os_id.lower(), major_minor) in oses:
        yield Check(id="os", status=PASS, detail=f"{name}")
        return
    known = ", ".join(f"{o} {v}" for o, v in oses)
    # A note (skip), not a warning: no build step depends on the OS's name; the tools a step
    # needs have rows of their own.
    yield Check(
        id="os",
        status=SKIP,
        detail=f"{name}: not an OS the official CANN images use (a note: no step needs one)",
        hint=f"Builds usually work elsewhere but are untested upstream; the images use {known}.",
    )


def _toolkit_checks(sysroot: Sysroot, search: ToolkitSearch) -> Iterator[Check]:
    tk = search.toolkit
    unreadable = [path for _, path, outcome in search.tried if outcome.startswith(UNREADABLE)]
    if tk is None and unreadable:
        yield _unreadable_check(unreadable, search.explicit_failure)
    elif tk is None:
        if search.explicit_failure:
            yield Check(
                id="toolkit",
                status=FAIL,
                detail=search.explicit_failure,
                hint="Pass the toolkit folder itself: --cann-path=/usr/local/Ascend/cann (CANN "
                ">= 8.5) or --cann-path=/usr/local/Ascend/ascend-toolkit/latest (<= 8.3).",
                blocking=True,
            )
        else:
            by_path: Dict[str, List[str]] = {}
            for rule, path, _ in search.tried:
                rules = by_path.setdefault(path, [])
                rule = "default" if rule == f"default {path}" else rule  # not the path twice
                if rule not in rules:
                    rules.append(rule)
            tried = "; ".join(f"{path} ({', '.join(rules)})" for path, rules in by_path.items())
            yield _not_found_check(tried, [sysroot.display(p) for p in search.installs])
    else:
        shown = sysroot.display(tk.path)
        if tk.version is None:
            yield Check(
                id="toolkit",
                status=FAIL,
                detail=f"toolkit at {shown} has no readable version "
                f"({'; '.join(tk.problems) or 'no version file'})",
                hint="Check <arch>-linux/ascend_toolkit_install.info (version=...) or reinstall the "
                "toolkit.",
                blocking=True,
            )
        else:
            yield Check(
                id="toolkit",
                status=PASS,
                detail=f"CANN {tk.version} at {shown}{_on_disk(shown, tk.path)} ({tk.layout} "
                f"layout; found by {tk.found_by}; version from {tk.version_source})",
            )
        # Only when the version was found elsewhere: a malformed file is then a warning, not the
        # blocking row above.
        for problem in tk.problems if tk.version is not None else ():
            yield Check(
                id="toolkit.files",
                status=WARN,
                detail=problem,
                hint="The file is malformed; cannbuild read the version elsewhere. Reinstalling "
                "the toolkit restores it.",
            )
        arch = host_arch()
        # `<arch>-linux/` names the toolkit's arch; an x86_64 toolkit on an aarch64 host cannot
        # build.
        if tk.arch and tk.arch != arch:
            yield Check(
                id="toolkit.arch",
                status=FAIL,
                detail=f"toolkit is built for {tk.arch}, this host is {arch}",
                hint=f"Install the {arch} toolkit (Ascend-cann-toolkit_<version>_linux-{arch}.run).",
                blocking=True,
            )
        if len(search.installs) > 1:
            listed = ", ".join(sysroot.display(p) for p in search.installs)
            yield Check(
                id="toolkit.installs",
                status=PASS,
                detail=f"{len(search.installs)} installs: {listed}",
            )
    for warning in search.warnings:
        yield Check(
            id="toolkit.env",
            status=WARN,
            detail=warning,
            hint="A stale variable from an old set_env.sh; open a new shell or source the "
            "right set_env.sh.",
        )


def _not_found_check(tried: str, installs: List[str]) -> Check:
    """No candidate is a toolkit.  Installs may still sit side by side with no `cann` or
    `ascend-toolkit/latest` pointing at them (uninstalling the newest version removes the
    `latest` links, remove_latest_softlink.sh): then the fix is --cann-path, not installing."""
    detail = f"no CANN toolkit found (looked in {tried or 'nothing'})"
    if installs:
        return Check(
            id="toolkit",
            status=FAIL,
            detail=f"{detail}; installed, but no cann or ascend-toolkit/latest link names "
            f"them: {', '.join(installs)}",
            hint=f"Pass the one to build with: --cann-path={installs[-1]} (or set "
            "CANNBUILD_CANN_PATH), or source its set_env.sh.",
            blocking=True,
        )
    return Check(
        id="toolkit",
        status=FAIL,
        detail=detail,
        hint="Install Ascend-cann-toolkit_<version>_linux-<arch>.run, or pass "
        "--cann-path=<folder holding set_env.sh>, or source its set_env.sh. "
        "To try cannbuild without CANN or an NPU: cannbuild setup --sandbox "
        "(an emulated Ascend host).",
        blocking=True,
    )


def _unreadable_check(paths: List[str], explicit_failure: Optional[str]) -> Check:
    """A toolkit is there but this user may not read it: installing another one is not
    the fix, reading rights are (a root install without --install-for-all is root's)."""
    shown = ", ".join(dict.fromkeys(paths))
    return Check(
        id="toolkit",
        status=FAIL,
        detail=explicit_failure
        or f"a CANN toolkit is installed ({shown}), but this user cannot read it",
        hint="It belongs to another user: run cannbuild as the user who installed it, ask "
        "them for read access to the folder, or have root reinstall the toolkit with "
        "--install-for-all (readable by every user).",
        blocking=True,
    )


def _env_checks(
    tk: Optional[Toolkit],
    captured: Optional[CapturedEnv],
    capture_error: Optional[str],
    sysroot: Sysroot,
) -> Iterator[Check]:
    if tk is None:
        yield Check(
            id="set_env", status=SKIP, detail="no toolkit", hint="Fix the toolkit row first."
        )
        return
    if tk.set_env is None:
        yield Check(
            id="set_env",
            status=FAIL,
            detail=f"no set_env.sh next to {tk.path}",
            hint="The toolkit install is incomplete; reinstall it (set_env.sh sits in the toolkit "
            "folder from 8.5, in ascend-toolkit/ before).",
            blocking=True,
        )
        return
    if captured is None:
        yield Check(
            id="set_env",
            status=FAIL,
            detail=f"sourcing {tk.set_env} failed: {capture_error}",
            hint=f"Run 'bash -x {tk.set_env}' to see where it stops.",
            blocking=True,
        )
        return
    if not captured.completed:
        yield _ended_shell_check(tk.set_env, captured)
        return
    home = captured.env.get("ASCEND_HOME_PATH", "(unset)")
    other = other_install(tk, home) if "ASCEND_HOME_PATH" in captured.env else None
    # The 9.x set_env.sh greps driver_install_path_param from /etc/ascend_install.info under `set
    # -euo pipefail`; a missing key aborts the sourcing part way (reference cann-environment.md
    # §1.3), hence the hint.
    if captured.status != 0:
        last = captured.stderr.splitlines()[-1] if captured.stderr else "no message"
        yield Check(
            id="set_env",
            status=WARN,
            detail=f"set_env.sh returned {captured.status} ({last}); ASCEND_HOME_PATH={home}",
            hint="9.x set_env.sh reads driver_install_path_param from /etc/ascend_install.info; "
            "check that file exists and is complete.",
        )
    elif "ASCEND_HOME_PATH" in captured.env and not sysroot.from_user(home).is_dir():
        # torch_npu stops at `ASCEND_HOME_PATH : X does not exist` and the builds find no
        # toolkit (cann-environment.md 4.3): a set_env.sh naming a removed `latest` or version.
        yield Check(
            id="set_env",
            status=FAIL,
            detail=f"{tk.set_env} sets ASCEND_HOME_PATH={home}, which does not exist",
            hint=f"Builds and torch_npu would look for the toolkit there. Reinstalling the "
            f"toolkit recreates {home}; or source the set_env.sh of the install you build with.",
            blocking=True,
        )
    elif other is not None:
        yield Check(
            id="set_env",
            status=FAIL,
            detail=f"{tk.set_env} sets ASCEND_HOME_PATH={home}, which runs {other}, not the "
            f"toolkit chosen ({tk.real_path})",
            hint=f"A build would use {other.name}. Pass --cann-path {home} to build with it, or "
            f"point {home} at {tk.real_path.name} (its runtime, compiler and opp links).",
            blocking=True,
        )
    else:
        yield Check(
            id="set_env",
            status=PASS,
            detail=f"sourced {tk.set_env.name}: ASCEND_HOME_PATH={home}",
        )
    # ops-transformer's build.sh stops with `Error: bisheng compilation tool not found` unless
    # setenv.bash put bisheng on PATH (reference cann-build-systems.md §2.1).
    bisheng = shutil.which("bisheng", path=captured.env.get("PATH", ""))
    if bisheng:
        yield Check(id="bisheng", status=PASS, detail=f"bisheng at {bisheng}")
    else:
        yield Check(
            id="bisheng",
            status=FAIL,
            detail="bisheng is not on PATH after sourcing set_env.sh",
            hint="bisheng ships in the toolkit's compiler (compiler/ccec_compiler/bin); "
            "reinstall the toolkit with --full.",
            blocking=True,
        )


def _ended_shell_check(set_env: Path, captured: CapturedEnv) -> Check:
    """set_env.sh ended the shell that sourced it, so none of what it exports arrived."""
    said = f": {captured.stderr.splitlines()[-1]}" if captured.stderr else ""
    return Check(
        id="set_env",
        status=FAIL,
        detail=f"sourcing {set_env} ended the shell (exit {captured.status}{said}) before it "
        "finished, so nothing it sets reached cannbuild",
        hint="A sourced script must not `exit`. Under `set -e` a failing command ends the shell "
        "too: 9.x set_env.sh greps driver_install_path_param from /etc/ascend_install.info, "
        f"so check that file. Run 'bash -x {set_env}' to see where it stops.",
        blocking=True,
    )


def _tool_checks(tools: List[ToolResult], needed: Set[str]) -> Iterator[Check]:
    """A tool every build needs fails; an optional one warns; one no step needs (advisory,
    and not in `needed`) is a note (skip): doctor_report puts a failing row in its place
    when the recipe's [[host.tools]] lists it."""
    for tool in tools:
        spec = tool.spec
        cid = f"tool.{spec.name}"
        note = spec.advisory and spec.name not in needed
        bad_status = FAIL if spec.required else SKIP if note else WARN
        aside = " (a note: no build step here calls it)" if note else ""
        if tool.path is None:
            problem = f"{spec.name} not found on PATH"
        elif tool.error:
            problem = tool.error
        elif tool.too_old:
            problem = f"{spec.name} {tool.version} is older than {spec.minimum}"
        else:
            detail = f"{spec.name} {tool.version or ''} ({tool.path})".replace("  ", " ")
            yield Check(id=cid, status=PASS, detail=detail)
            continue
        yield Check(
            id=cid,
            status=bad_status,
            detail=problem + aside,
            hint=spec.hint,
            blocking=spec.required,
        )


# Characters CANN's build scripts split a path at: cmake's unquoted arguments and lists
# (opbase's `if(EXISTS ${CANN_3RD_LIB_PATH}/...)`) and bash's unquoted words.
_SPLITTING = {" ": "a space", "\t": "a tab", "\n": "a newline", ";": "a ';'"}


def _workspace_path_checks(workspace: Path) -> Iterator[Check]:
    """A workspace path the upstream build splits fails a build step seconds in with an
    unrelated error (`tar: ...protobuf-25.1.tar.gz: Cannot open`): refused up front."""
    found = [said for ch, said in _SPLITTING.items() if ch in str(workspace)]
    if not found:
        return
    yield Check(
        id="workspace.path",
        status=FAIL,
        detail=f"the workspace {str(workspace)!r} holds {' and '.join(found)}, where CANN's build.sh "
        "and cmake files split a path (their third-party archives are then not found)",
        hint="Pass --workspace a path without spaces or ';' (e.g. ~/cannbuild-ws), or run in "
        "a folder whose path has none.",
        blocking=True,
    )


def _disk_checks(workspace: Path) -> Iterator[Check]:
    try:
        free = free_bytes(workspace)
    except OSError as exc:
        yield Check(
            id="disk",
            status=WARN,
            detail=f"cannot read free space: {exc}",
            hint="Check the workspace path.",
        )
        return
    shown = f"{free / GIB:.1f} GiB free under {workspace}"
    if free < DISK_FAIL_BYTES:
        yield Check(
            id="disk",
            status=FAIL,
            detail=shown,
            hint="A build needs several GiB; free space or pass --workspace on a larger disk.",
            blocking=True,
        )
        return
    if free < DISK_WARN_BYTES:
        yield Check(
            id="disk",
            status=WARN,
            detail=shown,
            hint="A full ops-transformer build can take 10 GiB; consider --workspace elsewhere.",
        )
        return
    yield Check(id="disk", status=PASS, detail=shown)


def _on_disk(shown: str, path: Path) -> str:
    """Where a toolkit shown by its path inside a sysroot (the sandbox's) is on this disk."""
    return "" if shown == str(path) else f" (on this disk {path})"
