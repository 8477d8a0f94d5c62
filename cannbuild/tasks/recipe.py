"""Tasks on recipes themselves: `recipe check` (every flag a recipe renders, against each
repository's build.sh) and `recipe draft` (a new train's recipe, drafted from the
repositories at a ref)."""

from __future__ import annotations

import sys
from pathlib import Path
from typing import TYPE_CHECKING, Dict, List, Optional, Tuple

from .. import ui
from ..errors import DryRun, UsageError
from ..lazy import lazy_module
from ._flags import FlagValue, cli_task, list_of, text_of
from ._frame import Frame

if TYPE_CHECKING:
    from .. import locks, recipes, ui_compare, workspace
    from ..build import session as build_session
    from ..sources import fetch
    from ..train import check, draft, drafttoml, manifest
    from ..train.check import RecipeCheck
else:  # only the action that runs loads its core (`cannbuild --help` loads this module)
    locks = lazy_module("cannbuild.locks")
    recipes = lazy_module("cannbuild.recipes")
    ui_compare = lazy_module("cannbuild.ui_compare")
    build_session = lazy_module("cannbuild.build.session")
    fetch = lazy_module("cannbuild.sources.fetch")
    check = lazy_module("cannbuild.train.check")
    draft = lazy_module("cannbuild.train.draft")
    drafttoml = lazy_module("cannbuild.train.drafttoml")
    manifest = lazy_module("cannbuild.train.manifest")
    workspace = lazy_module("cannbuild.workspace")

ACTIONS = ("check", "draft")


@cli_task(
    "workspace",
    "out",
    "offline",
    "sandbox",
    "cann",
    "wait",
    "json",
    "src",
    "manifest",
    "repos",
    "dry_run",
    positional=[
        ("action", "check or draft"),
        ("recipe", "check: the recipe (a train such as 9.1, or a .toml file)"),
    ],
    optional=("recipe",),
    extra=[
        ("ref", None, "draft: the release's tag or branch, e.g. v9.0.1, 9.1.0"),
        (
            "from_",
            None,
            "draft: the recipe to start from (a train or a .toml file; default: the newest "
            "train not after the ref's)",
        ),
    ],
    help={
        "out": "draft: where to write it (default ./cannbuild-recipes/<train>.toml)",
        "sandbox": "draft: read the sandbox's stand-in repositories (its mirror)",
        "cann": "draft --sandbox: the sandbox's CANN version (e.g. 9.1.0)",
        "repos": "draft: the repositories to draft, comma-separated (default: every one of "
        "the base recipe; the sources they pin come along)",
    },
)
def recipe(frame: Frame, action: str, recipe: Optional[str] = None, **flags: FlagValue) -> None:
    """Check the flags a recipe renders against each repo's build.sh, or draft a new
    train's recipe from the repositories at a ref.

    `recipe check RECIPE [--src REPO=DIR]`: every flag the recipe's steps render, for each
    SoC it lists, checked against the options each repository's build.sh accepts, read in
    `--src`, the workspace's checkout, or the workspace's git cache at the recipe's ref;
    exit 2 naming the step, the flag and the closest option when one is not accepted.

    `recipe draft --ref TAG [--from RECIPE] [--manifest cann.xml] [--repos A,B] [--out FILE]`:
    fetches the repositories at that ref (through cannbuild.mirrors; --sandbox: the stand-ins),
    reads their refs, SoCs, build.sh flags, toolkit needs, pins and archives, and writes a
    draft (default ./cannbuild-recipes/<train>.toml, never over a file) that lists, as it
    prints, what it could not decide."""
    if action not in ACTIONS:
        raise UsageError(
            f"recipe {action!r}: the actions are {' and '.join(ACTIONS)}.",
            "Run: cannbuild recipe check RECIPE, or cannbuild recipe draft --ref TAG.",
        )
    if action == "check":
        _check(frame, recipe, flags)
    else:
        if recipe is not None:
            raise UsageError(
                f"recipe draft takes no RECIPE (got {recipe!r}).",
                f"Start from it with --from {recipe}.",
            )
        _draft(frame, flags)


def _check(frame: Frame, name: Optional[str], flags: Dict[str, FlagValue]) -> None:
    if not name:
        raise UsageError(
            "recipe check needs RECIPE.", "Run: cannbuild recipe check 9.1 (or a .toml file)."
        )
    for unused in ("ref", "from_", "manifest", "out", "repos"):
        if flags.get(unused):
            raise UsageError(f"recipe check does not take --{unused.strip('_')}.", None)
    options = frame.options
    chosen = recipes.select_recipe(name, None, Path.cwd())
    ws = workspace.Workspace(root=options.workspace)
    given = check.parse_src(list_of(flags, "src"))
    scripts = check.workspace_scripts(chosen, ws, given)
    result = check.check_recipe(chosen, ws, scripts, options.jobs, options.ops, options.vendor_name)
    if flags.get("json"):
        ui.print_json(result.to_json())
    else:
        _print_check(result)
    if result.unknown:
        raise check.refusal(result)


def _print_check(result: RecipeCheck) -> None:
    out = sys.stdout
    out.write(f"recipe {result.recipe}\n")
    for script in result.scripts:
        at = f" at {script.ref[:12]}" if script.ref else ""
        out.write(f"  {script.repo}: {script.path}{at} ({script.spec.style} options)\n")
    every = list(dict.fromkeys(r.soc for r in result.rows))
    steps = list(dict.fromkeys(r.step for r in result.rows))
    rows: Dict[Tuple[str, str, str], List[str]] = {}
    for row in sorted(result.rows, key=lambda r: (steps.index(r.step), bool(r.note))):
        verdict = (
            f"accepted ({row.option}, {row.file}:{row.line})"
            if row.accepted
            else f"UNKNOWN: {row.why}" + (f"; closest {row.closest}" if row.closest else "")
        )
        step = f"{row.step} ({row.note})" if row.note else row.step
        rows.setdefault((step, verdict, row.word), []).append(row.soc)
    table = [
        (step, "all" if socs == every else ", ".join(socs), verdict, word)
        for (step, verdict, word), socs in rows.items()
    ]
    ui_compare.table(("step", "socs", "verdict", "flag"), table, out, numbers=False)
    for note in result.skipped:
        out.write(f"  not checked: {note}\n")
    bad = sum(1 for k in rows if k[1].startswith("UNKNOWN"))
    total = len(rows)
    out.write(f"{bad} of {total} flags UNKNOWN\n" if bad else f"all {total} flags accepted\n")


def _draft(frame: Frame, flags: Dict[str, FlagValue]) -> None:
    ref = text_of(flags, "ref")
    if not ref:
        raise UsageError(
            "recipe draft needs --ref.",
            "Run: cannbuild recipe draft --ref v9.0.1 (a release's tag or branch).",
        )
    if list_of(flags, "src"):
        raise UsageError("recipe draft does not take --src (it fetches the repositories).", None)
    release, train = draft.release_of(ref)
    options = frame.sandboxed(frame.options).options
    cwd = Path.cwd()
    start = text_of(flags, "from_")
    base = recipes.select_recipe(start, None, cwd) if start else draft.closest_recipe(train, cwd)
    given = text_of(flags, "manifest")
    release_manifest = manifest.read_manifest(Path(given)) if given else None
    out_flag = text_of(flags, "out")
    out = Path(out_flag) if out_flag else cwd / recipes.USER_RECIPE_DIR / f"{train}.toml"
    if out.exists():
        raise UsageError(
            f"{out} exists: a draft is never written over a recipe.",
            "Pass --out with a new file name, or move that file away first.",
        )
    if frame.dry_run:
        raise DryRun(
            f"would fetch the repositories of {base.path.name} at {ref} and write a draft of "
            f"the CANN {train} recipe to {out}"
        )
    build_session.check_replaceable_workspace(options)
    ws = workspace.Workspace(root=options.workspace)
    fetcher = fetch.Fetcher(
        mirrors=options.mirrors, offline=options.offline, retries=options.retries
    )
    request = draft.DraftRequest(
        ref=ref,
        base=base,
        ws=ws,
        fetcher=fetcher,
        manifest=release_manifest,
        repos=options.repos,
    )
    with locks.WorkspaceLock(ws, "cannbuild recipe draft", options.wait, ui.waiting):
        made = draft.draft_recipe(request)
    drafttoml.write_draft(made, out)
    if flags.get("json"):
        ui.print_json(
            {
                "out": str(out),
                "train": made.train,
                "release": release,
                "base": str(made.base),
                "refs": [
                    {"repo": r.repo, r.kind: r.value, "commit": r.commit, "source": r.cite}
                    for r in made.refs
                ],
                "read": list(made.read),
                "undecided": list(made.undecided),
            }
        )
        return
    sys.stdout.write(
        f"draft of the CANN {made.train} recipe written to {out} (from {made.base.name})\n"
    )
    for ref_choice in made.refs:
        sys.stdout.write(
            f"  {ref_choice.repo}: {ref_choice.kind} {ref_choice.value} = {ref_choice.commit[:12]} ({ref_choice.cite})\n"
        )
    sys.stdout.write(f"could not decide ({len(made.undecided)}; also at the top of the file):\n")
    for item in made.undecided:
        sys.stdout.write(f"  - {item}\n")
    sys.stdout.write(f"next: review it, then cannbuild recipe check {out}, then cannbuild lock\n")


TASKS = (recipe,)
