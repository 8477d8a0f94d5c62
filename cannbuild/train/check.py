"""`cannbuild recipe check`: every flag a recipe's steps hand to a repository's
`build.sh`, checked against the options that script accepts.

The commands are rendered by the plan walk (`build/plan.py:walk`), the way `plan` and
a run render them, once for each SoC the recipe lists; the validation's upstream
example too, and the `--ccache` a compile cache adds (`build/compile_cache.py`).  The
scripts are read where the checkouts are (the workspace's `src/<repo>` at its locked
commit, or a folder given per repo), through `recipes/optspec.py`.
"""

from __future__ import annotations

import os
import shlex
from pathlib import Path
from typing import Callable, Dict, Iterable, Iterator, List, Mapping, Optional, Sequence, Tuple

from msgspec import Struct, field

from ..bounded import BUILD_SH, CHECKOUT_RECORD, read_state, read_text
from ..build.compile_cache import ccache_words
from ..build.plan import StepContext, example_values, recipe_templates, render_command, walk
from ..build.session import BuildContext, CannFacts, repo_context
from ..decoded import to_plain
from ..errors import FetchError, UsageError
from ..host.toolkit import host_arch
from ..host.versions import parse_cann_version
from ..recipes import Recipe, render_ref
from ..recipes.optspec import (
    NoOptionLoop,
    OptionSpec,
    closest,
    judge,
    option_spec,
    sourced_scripts,
)
from ..recipes.selection import ops_by_repo, select_repos
from ..redact import redact
from ..sources.checkout import cache_path, checkout_marker, resolve_ref
from ..sources.fetch import Fetcher, GitFailed
from ..workspace import Workspace

SCRIPT = "build.sh"
# a repo's validation example runs in its own checkout (validate/__init__.py)
EXAMPLE_STEP = "[repos.{repo}.validate] example"
# what a run with a compile cache appends (compile_cache.with_cache), shown as its value
CCACHE_VALUE = "<ccache>"


class ScriptSpec(Struct, frozen=True, kw_only=True):
    """The option spec of one repo's build.sh, and where it was read."""

    repo: str
    path: str  # the script (or the file its spec was kept in)
    ref: str  # the commit it was read at, when known
    spec: OptionSpec


class StepCommand(Struct, frozen=True, kw_only=True):
    step: str
    soc: str
    repo: Optional[str]
    argv: Tuple[str, ...]
    note: str = ""  # "with a compile cache" for the --ccache variant
    # the words before this one (after build.sh) were checked in another row already
    added_from: int = 0


class FlagRow(Struct, frozen=True, kw_only=True):
    step: str
    soc: str
    repo: str
    word: str = field(name="flag")  # as rendered (its value redacted)
    accepted: bool
    option: str = ""  # the pattern that takes it (`--soc=*`, `--pkg`)
    line: int = 0  # of that pattern's arm in the script
    file: str = "build.sh"  # the script that arm is in (one build.sh sources, from 9.2)
    why: str = ""
    closest: Optional[str] = None
    note: str = ""


class RecipeCheck(Struct, frozen=True, kw_only=True):
    recipe: Path
    scripts: Tuple[ScriptSpec, ...]
    rows: Tuple[FlagRow, ...]
    skipped: Tuple[str, ...]  # steps that run no build.sh, or whose repo has no script here

    @property
    def unknown(self) -> Tuple[FlagRow, ...]:
        return tuple(r for r in self.rows if not r.accepted)

    def script(self, repo: str) -> Optional[ScriptSpec]:
        return next((s for s in self.scripts if s.repo == repo), None)

    def to_json(self) -> Dict[str, object]:
        return {
            "recipe": str(self.recipe),
            "scripts": [{"repo": s.repo, "path": s.path, "ref": s.ref} for s in self.scripts],
            "flags": to_plain(self.rows),
            "skipped": list(self.skipped),
        }


# --- reading the scripts ----------------------------------------------------------


def script_spec(repo: str, path: Path, ref: str = "") -> ScriptSpec:
    """The option spec of the build.sh at `path`."""

    def beside(name: str) -> Optional[str]:
        sourced = path.parent / name
        return read_text(sourced, BUILD_SH, errors="replace") if sourced.is_file() else None

    return text_spec(repo, read_text(path, BUILD_SH, errors="replace"), str(path), ref, beside)


def text_spec(
    repo: str,
    text: str,
    where: str,
    ref: str = "",
    read: Optional[Callable[[str], Optional[str]]] = None,
) -> ScriptSpec:
    """The option spec of a build.sh text (one paragraph, exit 2, where it has no option
    loop these rules read); `read` gives the scripts it sources (option_spec)."""
    try:
        spec = option_spec(text, read)
    except NoOptionLoop as exc:
        fix = (
            "Check the flags the recipe renders for it by hand against the script it sources "
            "that parses them, or check against a ref whose build.sh parses its own options."
            if sourced_scripts(text.splitlines())
            else "Point --src at the repository's own build.sh (REPO=DIR)."
        )
        raise UsageError(f"{where} ({repo}): {exc}, so its options cannot be read.", fix) from None
    return ScriptSpec(repo=repo, path=where, ref=ref, spec=spec)


def workspace_scripts(
    recipe: Recipe, ws: Workspace, given: Mapping[str, Path]
) -> Dict[str, ScriptSpec]:
    """Each recipe repo's build.sh: in the folder `given` names for it, else in the
    workspace's checkout (at the commit its checkout marker records), else in the
    workspace's git cache at the ref the recipe names (what `recipe draft` fetched)."""
    names = [r.name for r in recipe.repos]
    for name in given:
        if name not in names:
            raise UsageError(
                f"--src {name}=...: recipe {recipe.name} has no repo {name!r}.",
                f"Its repos: {', '.join(names)}.",
            )
    scripts: Dict[str, ScriptSpec] = {}
    # a toolkit repo no step builds has no build.sh the recipe renders flags for
    built = {s.repo for s in recipe.steps}
    for name in (n for n in names if n in built or not recipe.repo(n).toolkit):
        folder = given.get(name) or ws.checkout(name)
        path = folder / SCRIPT
        if os.path.lexists(path):  # a FIFO or a device is refused by name, not missed
            marker = (
                read_state(checkout_marker(ws, name), CHECKOUT_RECORD)
                if name not in given
                else None
            )
            ref = str(marker.get("commit", "")) if isinstance(marker, dict) else ""
            scripts[name] = script_spec(name, path.resolve(), ref)
            continue
        cached = None if name in given else _cached(recipe, ws, name)
        if cached is None:
            raise UsageError(
                f"{path} does not exist: {name}'s build.sh is needed to check the flags "
                f"recipe {recipe.name} renders for it.",
                "Check out the sources first (cannbuild fetch or lock, with the same --recipe "
                f"and --workspace), or pass --src {name}=DIR, a checkout of {name} at its ref.",
            )
        scripts[name] = cached
    return scripts


def _cached(recipe: Recipe, ws: Workspace, name: str) -> Optional[ScriptSpec]:
    """build.sh at the recipe's ref (its release: the images' CANN) in the git cache."""
    cache = cache_path(ws, name)
    if not cache.is_dir():
        return None
    repo = recipe.repo(name)
    soc = recipe.socs[0] if recipe.socs else "ascend910b"
    ref = render_ref(repo, check_context(recipe, ws, soc, 1, "", "").as_jinja())
    fetcher = Fetcher(offline=True)  # the cache only: nothing is fetched
    try:
        commit, _ = resolve_ref(fetcher, cache, ref, repo.url)
        text = fetcher.git(["show", f"{commit}:{SCRIPT}"], cwd=cache)
    except (FetchError, GitFailed):
        return None

    def at_commit(path: str) -> Optional[str]:
        try:
            return fetcher.git(["show", f"{commit}:{path}"], cwd=cache)
        except (FetchError, GitFailed):
            return None

    return text_spec(name, text, f"{cache}:{commit[:12]}:{SCRIPT}", commit, at_commit)


def parse_src(values: Sequence[str]) -> Dict[str, Path]:
    """`--src REPO=DIR` (or `--src DIR`, named by its folder) as repo -> folder."""
    out: Dict[str, Path] = {}
    for value in values:
        name, eq, folder = value.partition("=")
        path = Path(folder if eq else value)
        out[name if eq else path.resolve().name] = path
    return out


# --- rendering ---------------------------------------------------------------------


def check_context(
    recipe: Recipe, ws: Workspace, soc: str, jobs: int, ops: str, vendor: str
) -> BuildContext:
    """The template context of a run of `recipe` for `soc` in `ws`, with no toolkit: the
    CANN release the recipe's images carry (else `<train>.0`), at a path that names it.
    A pre-release's sources are its own (`recipe draft --ref v9.1.0-beta.3` writes
    image_cann 9.1.0-beta.3): `{{ ops_release }}` keeps the suffix the release drops."""
    text = recipe.image_cann or f"{recipe.train}.0"
    ops_release = ""
    try:
        version = parse_cann_version(text)
        release, train, old = (
            version.release,
            version.train,
            (version.major, version.minor) < (8, 5),
        )
        ops_release = text if version.is_prerelease else ""
    except ValueError:
        release, train, old = text, recipe.train, False
    where = Path(f"/usr/local/Ascend/cann-{text}")
    names = [r.name for r in recipe.repos]
    repos = repo_context(recipe, vendor, ops_by_repo(recipe, ops))
    return BuildContext(
        cann=CannFacts(
            version=text,
            release=release,
            train=train,
            path=where,
            home=where,
            layout="ascend-toolkit" if old else "cann",
        ),
        arch=host_arch(),
        soc=soc,
        jobs=jobs,
        ops=next(iter(repos.values()))["ops"] if repos else ops,
        vendor_name=vendor,
        workspace=ws.root,
        src={n: ws.checkout(n) for n in names},
        third_party={n: ws.checkout(n) / "third_party" for n in names},
        opp=ws.opp,
        stage=ws.stage,
        overlay=ws.overlay,
        opbase_install_path=ws.stage / "opbase",
        vars=recipe.vars,
        ops_release=ops_release,
        repos=repos,
    )


def rendered_commands(
    recipe: Recipe,
    ws: Workspace,
    jobs: int = 8,
    ops: str = "",
    vendor: str = "custom",
) -> Iterator[StepCommand]:
    """Every step's command (optional steps too) of every buildable repo for each SoC the
    recipe lists, each repo's validation example, and the ccache variant of the steps a
    compile cache changes.  `ops`: as --ops takes them (empty: each repo's own)."""
    recipe = select_repos(recipe, [r.name for r in recipe.buildable])
    templates = recipe_templates(recipe)
    for soc in recipe.socs or ("ascend910b",):
        values = check_context(recipe, ws, soc, jobs, ops, vendor).as_jinja()
        ctx = StepContext(
            values=values,
            sources={},
            toolkit={},
            hashed_env={},
            base_env={},
            overlay_env=None,
            extra_env={},
            recipe=recipe.name,
            templates=templates,
        )
        for step in walk(recipe, ctx, ws, ("build", "install")):
            yield StepCommand(step=step.name, soc=soc, repo=step.spec.repo, argv=step.argv)
            words = ccache_words(step, recipe, CCACHE_VALUE)
            if words and step.spec.action is None:
                yield StepCommand(
                    step=step.name,
                    soc=soc,
                    repo=step.spec.repo,
                    argv=(*step.argv, *words),
                    note="with a compile cache",
                    added_from=len(step.argv) - 2,
                )
        for repo in recipe.validated:
            assert repo.validate is not None
            if not repo.validate.example:
                continue
            name = EXAMPLE_STEP.format(repo=repo.name)
            command = render_command(
                recipe,
                repo.validate.example,
                example_values(values, repo.name, repo.validate.example_op),
                name,
                templates,
            )
            yield StepCommand(step=name, soc=soc, repo=repo.name, argv=tuple(shlex.split(command)))


def script_index(argv: Sequence[str]) -> Optional[int]:
    """Where `build.sh` is in a command line (`bash build.sh ...`, `./build.sh ...`)."""
    return next((i for i, word in enumerate(argv[:2]) if Path(word).name == SCRIPT), None)


# --- checking ------------------------------------------------------------------------


def check_commands(
    recipe: Recipe, commands: Iterable[StepCommand], scripts: Mapping[str, ScriptSpec]
) -> RecipeCheck:
    rows: List[FlagRow] = []
    skipped: List[str] = []
    for cmd in commands:
        at = script_index(cmd.argv)
        script = scripts.get(cmd.repo or "")
        if at is None or script is None:
            why = "runs no build.sh" if at is None else f"no build.sh of {cmd.repo} given"
            note = f"{cmd.step}: {why}"
            if note not in skipped:
                skipped.append(note)
            continue
        for verdict in judge(script.spec, cmd.argv[at + 1 :]):
            if verdict.at < cmd.added_from:
                continue
            option = verdict.option
            file, line = script.spec.located(option.line) if option else ("build.sh", 0)
            rows.append(
                FlagRow(
                    step=cmd.step,
                    soc=cmd.soc,
                    repo=script.repo,
                    word=redact(verdict.word),
                    accepted=verdict.accepted,
                    option=option.pattern if option else "",
                    file=file,
                    line=line,
                    why=verdict.why,
                    closest=None if verdict.accepted else closest(script.spec, verdict.word),
                    note=cmd.note,
                )
            )
    return RecipeCheck(
        recipe=recipe.path,
        scripts=tuple(scripts[name] for name in sorted(scripts)),
        rows=tuple(rows),
        skipped=tuple(skipped),
    )


def check_recipe(
    recipe: Recipe,
    ws: Workspace,
    scripts: Mapping[str, ScriptSpec],
    jobs: int = 8,
    ops: str = "",
    vendor: str = "custom",
) -> RecipeCheck:
    return check_commands(recipe, rendered_commands(recipe, ws, jobs, ops, vendor), scripts)


def refusal(check: RecipeCheck) -> UsageError:
    """The paragraph for a recipe that renders a flag its build.sh does not take."""
    unknown = check.unknown
    first = unknown[0]
    script = check.script(first.repo)
    where = (script.path + (f" at {script.ref[:12]}" if script.ref else "")) if script else "?"
    others = sorted({(r.step, r.word) for r in unknown} - {(first.step, first.word)})
    more = f" {len(others)} more: {', '.join(f'{s} {w}' for s, w in others)}." if others else ""
    near = f" The closest option it accepts is {first.closest}." if first.closest else ""
    return UsageError(
        f"recipe {check.recipe}: step {first.step!r} (soc {first.soc}{', ' + first.note if first.note else ''}) "
        f"renders {first.word}, which {first.repo}'s build.sh ({where}) does not accept: "
        f"{first.why}.{near}{more}",
        "Change the step's template or the recipe's [vars] for this ref (see `cannbuild plan`), "
        "or check against the build.sh of the ref the recipe locks (cannbuild fetch, or --src).",
    )
