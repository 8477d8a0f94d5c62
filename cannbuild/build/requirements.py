"""What a recipe needs of the host, as doctor rows, checked before anything is built.

`open_session` refuses a blocking row from here before the workspace is touched; `doctor`
shows the same rows beside the host's own (`doctor_report`), so the row a failed build's hint
names is the one doctor printed.
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import Dict, List, Mapping, Optional

from msgspec.structs import replace

from .. import vendors
from ..errors import UsageError
from ..host.check import FAIL, PASS, SKIP, WARN, Check
from ..host.contents import contents_check, wall_rows
from ..host.doctor import HostReport, read_host
from ..host.judge_imports import import_checks
from ..host.pystack import read_python_stack
from ..host.reading import detection_env
from ..host.releases import choose_ops
from ..host.toolkit import host_arch, toolkit_home
from ..options import Options
from ..recipes import Recipe, check_requirements, select_recipe
from ..recipes.selection import for_host, select_repos
from ..sandbox.hostside import laid_out_for
from ..workspace import Workspace
from .compile_cache import cache_checks
from .derived import (
    checked_out,
    cmake_files,
    derived_checks,
    ops_in_checkouts,
    ops_of,
    step_needs,
)
from .derived_compile import find_compiler
from .plan import selected


def requirement_checks(
    recipe: Recipe, host: HostReport, options: Optional[Options] = None
) -> List[Check]:
    """What the recipe needs of this host, as doctor rows: the toolkit's share/info
    packages, the files its builds read from the toolkit (for the steps that will run),
    and the tools its builds call (gawk: ops-transformer's build.sh up to 9.0 pipes its output
    through it and exits 127 without it; 9.1's does not)."""
    checks: List[Check] = _contents_checks(recipe, host, options or Options())
    toolkit = host.toolkit
    if toolkit is not None and toolkit.version is not None:
        unmet = check_requirements(recipe, toolkit.share_info)
        if unmet:
            listed = "; ".join(
                f"{pkg} {spec} ({'missing' if have is None else f'{have}: {problem}'})"
                for pkg, spec, have, problem in unmet
            )
            checks.append(
                Check(
                    id="recipe.toolkit",
                    status=FAIL,
                    detail=f"the toolkit at {toolkit.path} lacks what recipe {recipe.name} needs in "
                    f"share/info: {listed}",
                    hint=f"Install the CANN {toolkit.version.release} packages that provide them, or "
                    "pick another recipe with --recipe.",
                    blocking=True,
                )
            )
        elif recipe.requires:
            checks.append(
                Check(
                    id="recipe.toolkit",
                    status=PASS,
                    detail=f"share/info has what recipe {recipe.name} needs "
                    f"({', '.join(pkg for pkg, _ in recipe.requires)})",
                )
            )
    path = (host.build_env or {}).get("PATH") or os.environ.get("PATH", os.defpath)
    for tool in recipe.tools:
        found = shutil.which(tool.name, path=path)
        checks.append(
            Check(id=f"recipe.tool.{tool.name}", status=PASS, detail=f"{tool.name} at {found}")
            if found
            else Check(
                id=f"recipe.tool.{tool.name}",
                status=FAIL,
                detail=f"{tool.name} is not on PATH; recipe {recipe.name} needs it: {tool.why}",
                hint=f"Install it: {tool.install}.",
                blocking=True,
            )
        )
    return checks


def _contents_checks(recipe: Recipe, host: HostReport, options: Options) -> List[Check]:
    """What the checkouts of the steps that will run need of the toolkit (derived from
    them, build/derived.py), the files the recipe lists by hand because they cannot be
    derived (recipe [[toolkit.files]]), and where ops-transformer looks for opbase's
    headers."""
    tk = host.toolkit
    if tk is None or tk.version is None:
        return []
    home = toolkit_home(tk, host.build_env)
    specs = [s for s in recipe.steps if selected(s, options.optional_steps, options.force)]
    steps = [s.name for s in specs]
    checks = [contents_check(recipe.toolkit_files, steps, home, host_arch(), recipe.name)]
    ws = Workspace(root=options.workspace)
    owners = {s.name: s.repo for s in specs}
    texts: Dict[str, List[str]] = {}  # each checkout's cmake, read once for every entry
    checks += wall_rows(
        recipe.toolkit_files,
        steps,
        home,
        host_arch(),
        lambda f: _checkout_uses(ws, owners.get(f.step), f.used_by_word, texts),
    )
    walls = {c.id for c in checks}
    soc = host.soc.soc if host.soc is not None else ""
    checks += [c for c in derived_rows(recipe, options, home, soc=soc) if c.id not in walls]
    if recipe.opbase == "toolkit" and recipe.opbase_headers != "pkg_inc":
        checks.append(_opbase_headers_check(recipe, home, options.install_into_toolkit))
    return checks


def _checkout_uses(
    ws: Workspace, repo: Optional[str], word: str, texts: Dict[str, List[str]]
) -> bool:
    """Whether the repo's checkout's cmake names `word` (no checkout yet: not known, no);
    `texts` keeps each checkout's cmake read."""
    if repo is None or not (ws.checkout(repo) / ".git").exists():
        return False
    if repo not in texts:
        texts[repo] = list(cmake_files(ws.checkout(repo)).values())
    return any(word in text for text in texts[repo])


def derived_rows(
    recipe: Recipe,
    options: Options,
    home: Path,
    identities: Optional[Mapping[str, Mapping[str, object]]] = None,
    keep: bool = False,
    soc: str = "",
) -> List[Check]:
    """The derived rows for the steps that will run: from the checkouts on disk (doctor,
    plan), or from `identities` (the pipeline's sources, `keep`ing the memo)."""
    specs = [s for s in recipe.steps if selected(s, options.optional_steps, options.force)]
    ws = Workspace(root=options.workspace)
    repos = sorted({s.repo for s in specs if s.repo})
    if identities is None:
        identities = checked_out(ws, repos)
        pending = _host_side_pending(recipe, options, ws)
        if pending is not None:
            return [pending]
    # each buildable repo's operators (--ops, `repo:op`, a bare op to the repo whose checkout
    # has it, as the build routes it, else its recipe's); a source's none
    ops = ops_in_checkouts(recipe, options.ops, ws, options.said) if recipe.selected else {}
    if not recipe.buildable:  # a recipe that names no buildable repo: --ops for every one
        ops = {r: ops_of(options.ops) for r in repos if r != "opbase"}
    needs, absent = step_needs(recipe, specs, ws, ops, identities, keep)
    memo = ws.derived_memo if ws.root.is_dir() else None
    compiler = find_compiler(os.environ)
    return derived_checks(needs, absent, home, host_arch(), memo, compiler, soc)


def _host_side_pending(recipe: Recipe, options: Options, ws: Workspace) -> Optional[Check]:
    """A skip row while the sandbox's toolkit does not hold the host side of the toolkit
    repos checked out now: the run lays it out from them before it checks and builds."""
    repos = [r.name for r in recipe.repos if r.toolkit]
    if not repos or options.sandbox_dir is None:
        return None
    marks = checked_out(ws, repos)
    commits = {r: str(marks[r].get("commit", "")) for r in repos if r in marks}
    if len(commits) == len(repos) and laid_out_for(options.sandbox_dir, commits):
        return None
    return Check(
        id="recipe.derived",
        status=SKIP,
        detail=f"the sandbox lays its toolkit's host side out from {', '.join(repos)} at the "
        "locked commits before it builds, and checks what the checkouts need of it then; it "
        "does not hold the host side of the checkouts there are now",
        hint="`cannbuild fetch` (or setup) lays it out; run doctor again after it.",
    )


def _opbase_headers_check(recipe: Recipe, home: Path, into_toolkit: bool) -> Check:
    """opbase installs op_common under pkg_inc; this recipe's ops-transformer looks elsewhere."""
    where = f"{host_arch()}-linux/{recipe.opbase_headers}"
    header = home / where / "op_common/op_host/util/opbase_export.h"
    if header.is_file():
        return Check(
            id="recipe.opbase_headers",
            status=PASS,
            detail=f"the toolkit ships {where}/op_common, where ops-transformer looks for opbase",
        )
    detail = (
        f"opbase at recipe {recipe.name}'s ref installs op_common under pkg_inc only, its "
        f"ops-transformer looks under {where}, and the toolkit has no {where}/op_common"
    )
    if into_toolkit:
        return Check(
            id="recipe.opbase_headers",
            status=FAIL,
            detail=detail
            + ": with --install-into-toolkit the build stops at 'Could NOT find OPBASE'",
            hint="Drop --install-into-toolkit: cannbuild's workspace overlay exposes opbase's "
            f"headers under both pkg_inc and {recipe.opbase_headers}.",
            blocking=True,
        )
    return Check(
        id="recipe.opbase_headers",
        status=WARN,
        detail=detail + "; the workspace overlay exposes them under both",
        hint="Nothing to do with the default overlay; a toolkit install of this opbase "
        "(--install-into-toolkit) would not build.",
    )


def _import_rows(options: Options, env: Mapping[str, str], host: HostReport) -> List[Check]:
    tk = host.toolkit
    sourced = host.build_env is not None
    return import_checks(
        read_python_stack(),
        host.build_env if host.build_env is not None else detection_env(options, env),
        "with the toolkit's set_env.sh" if sourced else "this shell's env",
        None if options.sandbox or tk is None else tk.version,
        sourced=sourced,
    )


def doctor_report(
    options: Options, env: Mapping[str, str], cwd: Path, imports: bool = True
) -> HostReport:
    """The host's rows, and (when a recipe can be chosen) what that recipe needs of it.
    `imports`: also import torch (and torch_npu) in a child Python, with the toolkit's
    environment where set_env.sh was sourced (seconds: doctor's alone, not every run's)."""
    host = read_host(options, env)
    cache_rows = cache_checks(options.cache_remote, host.build_env or env)
    probed = _import_rows(options, env, host) if imports else []
    host = replace(host, checks=(*host.checks, *cache_rows, *probed))
    toolkit = host.toolkit
    if toolkit is None or toolkit.version is None:
        return host
    try:
        # CANNBUILD_OPS_RELEASE (or its config key) chooses the recipe a build here would use
        ops = choose_ops(options.ops_release, toolkit.version)
        origin = f"{options.said('ops_release')} {ops.release}" if ops.given else None
        # what a build of the selected repos needs (--repos, else the recipe's default)
        recipe = for_host(
            select_repos(
                select_recipe(options.recipe, ops.train, cwd, origin),
                options.repos,
                options.said("repos"),
            ),
            sandbox=options.sandbox,
        )
    except UsageError as exc:
        row = Check(
            id="recipe",
            status=WARN,
            detail=exc.message.rstrip("."),
            hint=exc.hint or "Pass --recipe.",
        )
        return replace(host, checks=(*host.checks, row))
    extra = [
        Check(
            id="recipe",
            status=PASS,
            detail=f"{recipe.name} ({recipe.path.name}) for CANN {toolkit.version}"
            + (f", ops release {ops.release}" if ops.given else ""),
        )
    ]
    extra += requirement_checks(recipe, host, options)
    # which of the workspace's vendor packages serves each operator, and which shadow others
    extra += vendors.workspace_checks(options.workspace / "opp", env)
    needed = {c.id.rsplit(".", 1)[-1] for c in extra if c.id.startswith("recipe.tool.")}
    kept = tuple(c for c in host.checks if not (c.id.startswith("tool.") and c.id[5:] in needed))
    return replace(host, checks=(*kept, *extra))
