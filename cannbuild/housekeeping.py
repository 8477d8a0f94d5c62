"""`clean` and `status`: what a workspace holds, and pruning what it no longer needs.

Both read the workspace only (no host reading, no toolkit): they work anywhere, fast.
"""

from __future__ import annotations

import fcntl
import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Mapping, Optional, Tuple

from msgspec import Struct

from . import vendors as vendors_mod
from .bounded import ATTEMPT, STAMP, read_state
from .decoded import JSONObject, JSONValue, to_plain
from .errors import UsageError
from .lazy import lazy_module
from .ownership import remove_inside
from .proc import pid_alive
from .workspace import Workspace

if TYPE_CHECKING:
    from . import recipes
    from .build import stamps
    from .sources import lock as lockfile
    from .sources.lock import Lock
    from .target import Target
else:  # for status; `clean` does not load them
    stamps = lazy_module("cannbuild.build.stamps")
    lockfile = lazy_module("cannbuild.sources.lock")
    recipes = lazy_module("cannbuild.recipes")

# What build.sh leaves in a checkout besides the packages (build_out/ keeps those, so
# the steps stay up to date after a clean).
BUILD_TREES = ("build", "output")
ATTEMPT_FILE = "last-build.json"  # under reports/: the last build attempt (transaction.py)
RUNNING = "running"  # an attempt recorded at its start, before it has finished


# what a run killed with -9 leaves behind (sources/checkout.py, sources/fetch.py): a
# checkout being made, nested clones parked beside it, a replaced checkout on its way
# out, all named for the run's pid; a bare git clone being made; a download in progress
# `.ops-transformer.tmp-4242`, `.ops-transformer.nested0-4242`, `.opbase.old-4242` (names
# ensure_checkout makes).
_CHECKOUT_TMP = re.compile(r"\.(?P<repo>.+)\.(?:tmp|nested\d+|old)-(?P<pid>\d+)")
# `opbase.git.tmp-4242` (fetch_repo's clone; `.git.tmp` before it was named for the run)
_CLONE_TMP = re.compile(r".+\.git\.tmp(?:-(?P<pid>\d+))?")


def _entries(folder: Path) -> List[Path]:
    try:
        return sorted(folder.iterdir())
    except OSError:  # not there, or not a folder
        return []


def _dead(pid: int) -> bool:
    """Our own pid's folders are this run's, and a live pid's belong to a run still working."""
    return pid != os.getpid() and not pid_alive(pid)


def leftovers(root: Path) -> List[Path]:
    """What runs that died (kill -9, a power cut) left half-made in the workspace: only
    called by a run holding the workspace lock (no other run is writing), and a folder
    named for a pid is taken only when that process is gone."""
    ws = Workspace(root=root)
    found: List[Path] = []
    if not ws.src.is_symlink():
        for path in _entries(ws.src):
            match = _CHECKOUT_TMP.fullmatch(path.name)
            if match and _dead(int(match["pid"])):
                found.append(path)
    if not ws.git_cache.is_symlink():
        # a bare clone fetch_repo had not yet renamed into place
        for path in _entries(ws.git_cache):
            match = _CLONE_TMP.fullmatch(path.name)
            if match and (match["pid"] is None or _dead(int(match["pid"]))):
                found.append(path)
    if not ws.downloads.is_symlink():
        for path in _entries(ws.downloads):
            if path.name == ".incoming" and not path.is_symlink():
                # Downloads in flight: `.incoming/<tag>-<file>` and `.<file>.part`.
                found += _entries(path)
            elif path.name.startswith(".") and path.name.endswith(".part"):
                found.append(path)
    return found


def sweep(root: Path) -> List[Path]:
    """Remove the leftovers of dead runs (the caller holds the workspace lock)."""
    found = leftovers(root)
    if found:
        remove_inside(root, found, "workspace")
    return found


def clean_plan(root: Path, keep: int, sources: bool = False, sandbox: bool = False) -> List[Path]:
    """The paths `clean` removes: build trees, tmp and validation scratch, the logs and
    reports of all but the last `keep` runs (and never the latest); with `sources` the
    checkouts and caches, with `sandbox` the workspace's sandbox."""
    ws = Workspace(root=root)
    targets: List[Path] = []
    if ws.src.is_dir() and not sources:
        for checkout in sorted(ws.src.iterdir()):
            if checkout.name.startswith(".") or not checkout.is_dir():
                continue
            targets += [checkout / t for t in BUILD_TREES if (checkout / t).exists()]
    targets += [p for p in (ws.tmp, ws.validate) if p.exists()]
    for folder in (ws.logs, ws.reports):
        runs = [p for p in _entries(folder) if p.is_dir() and not p.is_symlink()]
        link = folder / "latest"
        latest = os.readlink(link) if link.is_symlink() else None
        # Runs are folders named `YYYYmmdd-HHMMSS-<pid>`, so the sorted order is their age.
        targets += [r for r in runs[: max(len(runs) - keep, 0)] if r.name != latest]
    if sources:
        targets += [p for p in (ws.src, ws.git_cache, ws.downloads) if p.exists()]
    if sandbox and (ws.root / "sandbox").exists():
        targets.append(ws.root / "sandbox")
    covered = [t for t in targets if t.is_dir() and not t.is_symlink()]
    targets += [p for p in leftovers(root) if not any(c in p.parents for c in covered)]
    return targets


def step_facts(
    ws: Workspace, stamp: Mapping[str, JSONValue], seen: Optional[Dict[str, Tuple[str, str]]] = None
) -> Tuple[str, str]:
    """What a step's stamp is worth now, from the facts the plan reads without the host:
    what the step made is still as it made it (`stamps.outputs_gone`, the plan's own
    check) and the steps it ran after are built, up to date themselves, and still hold
    the outputs it was built on.  (Whether its inputs changed needs the host: `cannbuild
    plan` says.)  `seen`: the answers so far, by step."""
    seen = {} if seen is None else seen
    name = str(stamp.get("step", ""))
    if name in seen:
        return seen[name]
    seen[name] = ("built", "")  # a stamp naming itself upstream ends here
    gone = stamps.outputs_gone(stamp)
    facts = ("out of date", gone) if gone else ("built", "")
    upstream = (stamp.get("inputs") or {}).get("upstream") or {}
    for dep, outputs in sorted(upstream.items()) if not gone else ():
        before = stamps.read_stamp(ws, dep)
        if before is None:
            facts = ("out of date", f"runs after {dep}, which has not been built")
        elif before.get("outputs_digest") != outputs:
            facts = ("out of date", f"output of {dep} changed")
        elif step_facts(ws, before, seen)[0] != "built":
            facts = ("out of date", f"runs after {dep}, which needs to run")
        else:
            continue
        break
    seen[name] = facts
    return facts


def _is_install(ws: Workspace, stamp: Mapping[str, JSONValue]) -> bool:
    """The step that installs the package: what it needs to stay up to date is in opp."""
    vendors = ws.opp / "vendors"
    return any(vendors in Path(p).parents for p in stamp.get("requires_paths", []))


def _lock_held(ws: Workspace) -> bool:
    """Whether a run holds the workspace lock now (the kernel drops a dead run's flock;
    a pid could have been reused)."""
    try:
        # bounded: opened only to take a shared flock, never read
        fd = os.open(ws.root / ".lock", os.O_RDONLY | os.O_NOFOLLOW | os.O_NONBLOCK)
    except OSError:
        return False
    try:
        fcntl.flock(fd, fcntl.LOCK_SH | fcntl.LOCK_NB)
    except OSError:
        return True
    finally:
        os.close(fd)  # closing drops the shared lock it may have taken
    return False


def _last_attempt(ws: Workspace) -> Optional[JSONObject]:
    """The last build attempt; one recorded as started whose process is gone died
    (kill -9, a power cut): it is shown as interrupted, not as what it never finished."""
    attempt = read_state(ws.reports / ATTEMPT_FILE, ATTEMPT)
    if not isinstance(attempt, dict):
        return None
    if attempt.get("status") == RUNNING and not _lock_held(ws):
        attempt = {
            **attempt,
            "status": "interrupted",
            "detail": f"the run (pid {attempt.get('pid')}) ended without finishing: killed or "
            "the machine stopped; the next build reruns what it left unfinished",
        }
    return attempt


def _built_on(ws: Workspace, stamp: Mapping[str, JSONValue]) -> List[Tuple[str, JSONObject]]:
    """The stamps of the steps `stamp` runs after, transitively (name, stamp)."""
    found: Dict[str, JSONObject] = {}
    todo = list(((stamp.get("inputs") or {}).get("upstream") or {}).keys())
    while todo:
        name = str(todo.pop())
        before = stamps.read_stamp(ws, name) if name not in found else None
        if before is None:
            continue
        found[name] = before
        todo += list(((before.get("inputs") or {}).get("upstream") or {}).keys())
    return sorted(found.items())


def _repo_of(step: str, lock: Lock) -> Optional[str]:
    """The locked repo a step builds, by the recipes' naming (`<repo>-build`)."""
    names = [r.name for r in lock.repos if step.startswith(r.name + "-")]
    return max(names, key=len) if names else None


def install_staleness(
    ws: Workspace, stamp: Mapping[str, JSONValue], soc: str, lock: Optional[Lock]
) -> List[str]:
    """Why the installed package is not one of the current target and lock: built for
    another SoC than `soc`, against another toolkit than the lock's, or from commits the
    lock no longer pins (another ops release, a moved tag).  Empty: it is current."""
    reasons: List[str] = []
    inputs = stamp.get("inputs") or {}
    built_soc = inputs.get("soc")
    if soc and built_soc and built_soc != soc:
        reasons.append(f"built for {built_soc}; this workspace now targets {soc}")
    if lock is None:
        return reasons
    version = (inputs.get("toolkit") or {}).get("version")
    if version and lock.toolkit_version and version != lock.toolkit_version:
        reasons.append(f"built against CANN {version}; the lock is for CANN {lock.toolkit_version}")
    release = f" (ops release {lock.ops_release})" if lock.ops_release else ""
    for name, before in _built_on(ws, stamp):
        commit = str(((before.get("inputs") or {}).get("source") or {}).get("commit") or "")
        repo = _repo_of(name, lock)
        locked = lock.repo(repo) if repo else None
        if commit and locked is not None and locked.commit != commit:
            reasons.append(
                f"{name} built from {commit[:12]}; the lock{release} pins {repo} at "
                f"{locked.commit[:12]}"
            )
    return reasons


def workspace_status(
    root: Path, lock_file: Path, soc: Optional[str] = None, target: Optional[Target] = None
) -> Dict[str, object]:
    """What is built, installed and validated in the workspace, and from which commits;
    each only as far as the files behind it are still there, and marked stale where it
    was made for another SoC (`soc`, else the remembered `target`'s, else the lock's),
    toolkit or commit than the lock's.  A lock that cannot be read is an error (exit 2),
    not "no lock yet"; so is a workspace path that is a file or a device."""
    if root.exists() and not root.is_dir():
        raise UsageError(
            f"--workspace {root} is not a folder (a file or a device), so it holds no workspace.",
            "Pass the workspace folder (.cannbuild in the folder a build ran in).",
        )
    ws = Workspace(root=root)
    lock = lockfile.read_lock(lock_file)
    steps = []
    installs: List[Tuple[JSONObject, JSONObject]] = []  # each install step's entry and stamp
    seen: Dict[str, Tuple[str, str]] = {}
    for stamp_path in sorted(ws.stamps.glob("*.json")) if ws.stamps.is_dir() else []:
        stamp = read_state(stamp_path, STAMP)
        if not isinstance(stamp, dict) or "input_hash" not in stamp:
            continue
        source = (stamp.get("inputs") or {}).get("source") or {}
        state, why = step_facts(ws, {"step": stamp_path.stem, **stamp}, seen)
        step = {
            "step": stamp.get("step", stamp_path.stem),
            "state": state,
            "reason": why,
            "finished": stamp.get("finished"),
            "run_id": stamp.get("run_id"),
            "commit": source.get("commit"),
            "artifacts": [
                {"path": a.get("path"), "present": Path(a.get("path", "")).is_file()}
                for a in stamp.get("artifacts", [])
            ],
        }
        steps.append(step)
        if _is_install(ws, stamp):
            installs.append((step, stamp))
    validation = read_state(ws.stamps / "validate.json", STAMP) or {}
    current_soc = soc or (target.soc_word if target else "") or (lock.soc if lock else "")
    installs = _in_source_order(ws, installs)
    vendors = [_vendor_entry(ws, step, stamp, current_soc, lock) for step, stamp in installs]
    install = installs[0][0] if installs else None
    installed_ok = bool(installs) and all(step["state"] == "built" for step, _ in installs)
    stale = [why for v, _ in vendors for why in v.stale]
    verdict = None
    if validation:
        verdict = {
            "status": (validation.get("validation") or {}).get("status"),
            "run_id": validation.get("run_id"),
            "reason": (validation.get("validation") or {}).get("reason"),
        }
        newest = max((str(step["run_id"] or "")[:15] for step, _ in installs), default="")
        if install is None or not installed_ok:
            reasons = [step["reason"] for step, _ in installs if step["reason"]]
            why = "; ".join(reasons + stale)
            verdict["stale"] = "the package it validated is no longer installed" + (
                f" ({why})" if why else ""
            )
        elif newest > str(validation.get("run_id") or "")[:15]:
            run = next(step["run_id"] for step, _ in installs if str(step["run_id"])[:15] == newest)
            verdict["stale"] = f"the package was installed again since (run {run})"
        elif stale:
            verdict["stale"] = f"it judged the installed package, which is stale ({stale[0]})"
    source = vendors_mod.source_file(ws.opp)
    return {
        "workspace": str(ws.root),
        "exists": ws.root.is_dir(),
        "lock": {
            "file": str(lock_file),
            "recipe": lock.recipe,
            "cann": lock.toolkit_version,
            "soc": lock.soc,
            "repos": [{"name": r.name, "ref": r.ref, "commit": r.commit} for r in lock.repos],
            # third-party archives taken as the sandbox's stand-ins (--accept-stand-in)
            "stand_ins": [
                {"name": a.name, "why": a.stand_in} for a in lock.third_party if a.stand_in
            ],
        }
        if lock
        else None,
        "steps": steps,
        "target": _target_json(ws, target, current_soc),
        "install": {
            "step": install["step"],
            "state": "installed" if installed_ok else "not installed",
            "reason": install["reason"]
            or "; ".join(f"{s['step']}: {s['reason']}" for s, _ in installs if s["reason"]),
            "stale": stale,
        }
        if install
        else None,
        "installed": to_plain([v for v, ok in vendors if ok]),
        # several vendors: the one file that sets them on ASCEND_CUSTOM_OPP_PATH in order
        "source": str(source)
        if len(installs) > 1 and vendors_mod.source_order(ws.opp) is not None
        else None,
        "validation": verdict,
        "last_build": _last_attempt(ws),
        "latest_report": str(ws.reports / "latest" / "report.md")
        if (ws.reports / "latest").exists()
        else None,
    }


def _vendor_of(stamp: Mapping[str, JSONValue]) -> Optional[Path]:
    """The vendor folder an install step's stamp keeps up to date (its bin/set_env.bash)."""
    for required in stamp.get("requires_paths", []):
        path = Path(str(required))
        if path.name == "set_env.bash" and path.parent.name == "bin":
            return path.parent.parent
    return None


def _in_source_order(
    ws: Workspace, installs: List[Tuple[JSONObject, JSONObject]]
) -> List[Tuple[JSONObject, JSONObject]]:
    """The installs in the order the workspace's opp/set_env.bash sets their vendors (the
    --repos order), the others after them by name."""
    order = [str(p) for p in vendors_mod.source_order(ws.opp) or []]

    def rank(item: Tuple[JSONObject, JSONObject]) -> Tuple[int, str]:
        vendor = str(_vendor_of(item[1]) or "")
        return (order.index(vendor) if vendor in order else len(order), vendor)

    return sorted(installs, key=rank)


class VendorEntry(Struct, frozen=True, kw_only=True):
    """One installed vendor as status lists it (its JSON): its folder, the repo and commit
    it was built from, the operators it ships."""

    vendor: Path
    set_env: Path
    stale: List[str]
    repo: Optional[str]
    commit: Optional[str]
    ops: List[str]
    step: str


def _vendor_entry(
    ws: Workspace,
    step: JSONObject,
    stamp: JSONObject,
    soc: str,
    lock: Optional[Lock],
) -> Tuple[VendorEntry, bool]:
    """The entry, and whether it is this target's install."""
    vendor = _vendor_of(stamp) or ws.opp / "vendors"
    present = not stamps.outputs_gone(stamp)
    stale = install_staleness(ws, stamp, soc, lock) if present else []
    repo, commit = None, None
    for name, before in _built_on(ws, stamp):
        found = str(((before.get("inputs") or {}).get("source") or {}).get("commit") or "")
        if found and before.get("artifacts"):  # the build whose package it installed
            repo, commit = (_repo_of(name, lock) if lock else None) or name, found
    entry = VendorEntry(
        vendor=vendor,
        set_env=vendor / "bin" / "set_env.bash",
        stale=stale,
        repo=repo,
        commit=commit,
        ops=list(vendors_mod.read_vendor(vendor).ops),
        step=str(step["step"]),
    )
    return entry, step["state"] == "built" and entry.set_env.is_file()


def _target_json(ws: Workspace, target: Optional[Target], soc: str) -> Optional[JSONObject]:
    """The remembered target as status shows it (None: the workspace has no record)."""
    if target is None:
        return None
    known = recipes.known_repos(Path.cwd()) if target.repos else set()
    return {
        "file": str(ws.target),
        "unknown_repos": sorted(set(target.repos or ()) - known),
        "host": target.host,
        "soc": soc or None,
        "remembered": dict(target.layer()),
        "set_by": target.set_by,
        "set_at": target.set_at,
    }
