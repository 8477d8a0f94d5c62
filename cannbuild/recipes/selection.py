"""Which of a recipe's repositories a run builds (`--repos`), and which operators each
builds (`--ops op` or `repo:op`).

A selection narrows the recipe: it keeps the sources (opbase: not selectable, built or
pinned for whoever needs them) and the selected buildable repos, with their steps, in the
order given, which is the ASCEND_CUSTOM_OPP_PATH order (first wins).  Everything after
(plan, sources, lock, bundle, install, validation) sees only that narrowed recipe."""

from __future__ import annotations

from typing import TYPE_CHECKING, Callable, Dict, List, Optional, Sequence, Tuple

from msgspec.structs import replace

from ..errors import UsageError
from ..lazy import lazy_module
from .model import Recipe

if TYPE_CHECKING:
    import difflib
else:  # only a misspelt op needs a did-you-mean
    difflib = lazy_module("difflib")

OPS_FLAG = "--ops"
REPOS_FLAG = "--repos"


def select_repos(
    recipe: Recipe,
    names: Sequence[str],
    origin: str = REPOS_FLAG,
    elsewhere: Optional[Callable[[str], str]] = None,
) -> Recipe:
    """`recipe` narrowed to the buildable repos `names` (empty: its default_repos), in
    that order; `origin` is how the user gave them (a flag, a variable, a config key);
    `elsewhere(name)` says where a repo this recipe lacks is built (other trains)."""
    buildable = [r.name for r in recipe.buildable]
    if not names:
        return _narrow(recipe, recipe.default_repos)
    hint = (
        f"Recipe {recipe.name} ({recipe.path.name}) builds {', '.join(buildable)}; give one or "
        f"more of them, comma-separated, e.g. {REPOS_FLAG} {','.join(buildable[:2])}."
        if buildable
        else f"Recipe {recipe.name} ({recipe.path.name}) has no buildable repo (none has a "
        "vendor_suffix): drop the option."
    )
    seen: List[str] = []
    for name in names:
        if name not in buildable:
            what = (
                "a source the buildable repos take, not one to select"
                if any(r.name == name for r in recipe.repos)
                else "not a repository of the recipe"
            )
            where = elsewhere(name) if elsewhere and what.startswith("not") else ""
            close = difflib.get_close_matches(name, buildable, n=1) if not where else []
            near = f"Did you mean {close[0]}? " if close else ""
            raise UsageError(f"{origin} names {name!r}, which is {what}.", near + (where or hint))
        if name in seen:
            raise UsageError(f"{origin} names {name!r} twice.", hint)
        seen.append(name)
    return _narrow(recipe, tuple(seen))


def _narrow(recipe: Recipe, order: Tuple[str, ...]) -> Recipe:
    kept_repos = tuple(r for r in recipe.repos if not r.buildable or r.name in order)
    kept = {r.name for r in kept_repos}
    steps = tuple(s for s in recipe.steps if (recipe.step_owner(s) or "") in kept | {""})
    names = {s.name for s in steps}
    for step in steps:
        dropped = [d for d in step.after if d not in names]
        if dropped:
            owner = recipe.step_owner(next(s for s in recipe.steps if s.name == dropped[0]))
            raise UsageError(
                f"recipe {recipe.path}: step {step.name!r} runs after {dropped[0]!r}, a step of "
                f"{owner}, which this selection leaves out.",
                f"Add {owner} to {REPOS_FLAG}.",
            )
    return replace(
        recipe,
        repos=kept_repos,
        steps=steps,
        toolkit_files=tuple(f for f in recipe.toolkit_files if f.step in names),
        tools=tuple(t for t in recipe.tools if not t.repos or set(t.repos) & kept),
        order=order,
        unselected=tuple(r.name for r in recipe.buildable if r.name not in order),
        unselected_ops=tuple((r.name, r.ops) for r in recipe.buildable if r.name not in order),
    )


def for_host(recipe: Recipe, sandbox: bool) -> Recipe:
    """The recipe a host needs: a real toolkit has its host side installed, so the
    repositories that only make it (`toolkit = true`, no step builds or pins them) are
    fetched on the sandbox alone, which lays them out (sandbox/hostside.py)."""
    if sandbox:
        return recipe
    used = {s.repo for s in recipe.steps} | {p.repo for r in recipe.repos for p in r.pins}
    return replace(recipe, repos=tuple(r for r in recipe.repos if not r.toolkit or r.name in used))


def ops_by_repo(
    recipe: Recipe,
    ops: str,
    ships: Callable[[str, str], bool] = lambda repo, op: False,
    experimental: Callable[[str, str], bool] = lambda repo, op: False,
    said: Callable[[str], str] = lambda name: "--" + name,
    names: Callable[[str], Sequence[str]] = lambda repo: (),
) -> Dict[str, Tuple[str, ...]]:
    """Each selected repo's operators: the `repo:op` and bare ops of `ops` that are its,
    else its recipe default (`ops`).  A bare op goes to the selected repo whose default
    ops list it or whose checkout `ships` it, else whose checkout has it under
    experimental/ (where its derived row says what that takes); two such repos are a
    usage error asking for `repo:op`, as is a bare op no repo claims when several are
    selected.  `said` names how the user gave a field (Options.said): a flag, a
    variable, a config key; `names(repo)`: the operators its checkout has, for a
    did-you-mean."""
    ops_flag, repos_flag = said("ops"), said("repos")
    selected = [r.name for r in recipe.selected]
    given: Dict[str, List[str]] = {}
    for word in (w.strip() for w in ops.split(",")):
        if not word:
            continue
        if ":" in word:
            repo, _, op = word.partition(":")
            if repo not in selected:
                known = [*selected, *recipe.unselected]
                close = difflib.get_close_matches(repo, known, n=1)
                first = (
                    f"Add {repo} to {REPOS_FLAG}"
                    if repo in recipe.unselected
                    else (f"Did you mean {close[0]}:{op}? " if close else "")
                    + f"Name one of its buildable repos ({', '.join(known)})"
                )
                why = (
                    f"which {repos_flag} does not select (selected: {', '.join(selected)})"
                    if repo in recipe.unselected
                    else "which is not a buildable repo of recipe " + recipe.name
                )
                raise UsageError(
                    f"{ops_flag} {word}: names repo {repo!r}, {why}.",
                    f"{first}, or write the op as one of "
                    f"{', '.join(f'{r}:{op}' for r in selected)}.",
                )
        else:
            op = word
            claims = [r.name for r in recipe.selected if op in r.ops or ships(r.name, op)]
            claims = claims or [r.name for r in recipe.selected if experimental(r.name, op)]
            owner = next((r for r, listed in recipe.unselected_ops if op in listed), None)
            if not claims and owner is not None:
                raise UsageError(
                    f"{ops_flag} {op}: {op!r} is an operator of {owner} (recipe {recipe.name} "
                    f"lists it), which {repos_flag} does not select (selected: "
                    f"{', '.join(selected)}), so none of the selected repos would build it.",
                    f"Add {owner}: {REPOS_FLAG} {','.join([*selected, owner])}, or give an "
                    f"operator of {' or '.join(selected)}.",
                )
            if len(claims) > 1:
                raise UsageError(
                    f"{ops_flag} {op}: the selected repos {', '.join(claims)} each ship an "
                    f"operator {op!r}.",
                    f"Say whose: {OPS_FLAG} {claims[0]}:{op} (or {', '.join(f'{c}:{op}' for c in claims[1:])}).",
                )
            if not claims and len(selected) > 1:
                have = [(r, n) for r in selected for n in names(r)]
                close = difflib.get_close_matches(op, sorted({n for _, n in have}), n=2)
                near = [f"{r}:{n}" for n in close for r, m in have if m == n][:3]
                lead = f"Did you mean {OPS_FLAG} {' or '.join(near)}? Else name" if near else "Name"
                raise UsageError(
                    f"{ops_flag} {op}: none of the selected repos ({', '.join(selected)}) lists "
                    f"{op!r} among its ops or has it in its checkout, so cannbuild cannot tell "
                    "which builds it.",
                    f"{lead} the repo: {OPS_FLAG} <repo>:{op}, e.g. {selected[0]}:{op}.",
                )
            if not selected:
                raise UsageError(
                    f"{ops_flag} {op}: recipe {recipe.name} selects no buildable repo.",
                    f"Give {REPOS_FLAG} first.",
                )
            repo = claims[0] if claims else selected[0]
        given.setdefault(repo, [])
        if op not in given[repo]:
            given[repo].append(op)
    return {r.name: tuple(given.get(r.name, r.ops)) for r in recipe.selected}
