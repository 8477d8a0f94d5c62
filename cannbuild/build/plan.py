"""The step plan: rendered commands, input hashes, stamps, and why a step must run.

A step's inputs are its source identity (commit, nested pins, third-party
hashes), its rendered command (with -j neutralised: more cores do not make a
new package), its own env entries, the toolkit version and path, the SoC when
the step uses it, the outputs of the steps it runs after, and the values of
compiler environment variables.  Same inputs and outputs still there: up to
date, skipped in milliseconds.
"""

from __future__ import annotations

import hashlib
import os
import shlex
from pathlib import Path
from typing import TYPE_CHECKING, Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple

from msgspec import Struct
from msgspec.structs import replace

from .. import proc
from ..decoded import JSONValue
from ..errors import UsageError
from ..lazy import lazy_module
from ..recipes import Recipe, StepSpec, template_dirs
from ..states import StepStatus
from ..workspace import Workspace
from .stamps import digest, outputs_gone, read_stamp

if TYPE_CHECKING:
    from .. import redact
    from ..render import templates
    from ..render.templates import Templates
else:  # doctor reads which steps run (`selected`), never a template
    templates = lazy_module("cannbuild.render.templates")
    redact = lazy_module("cannbuild.redact")  # a step's record and hash, not its selection

UP_TO_DATE = StepStatus.UP_TO_DATE
NEEDS_RUN = StepStatus.NEEDS_RUN
NOT_SELECTED = StepStatus.NOT_SELECTED
SELECT = "--with-step"  # (or CANNBUILD_OPTIONAL_STEPS, cannbuild.optional_steps)
# Compiler variables change the binaries without changing the command line; the sandbox's fault
# switch changes what its stand-in tools do.
HASHED_ENV = ("CC", "CXX", "CFLAGS", "CXXFLAGS", "LDFLAGS", "CANNBUILD_SANDBOX_FAULT")
# `-j` is rendered as this in the hashed command: more cores do not make a new package.
JOBS_PLACEHOLDER = "{jobs}"


class StepContext(Struct, frozen=True, kw_only=True):
    """Everything a step's templates and hash can depend on, as plain data."""

    values: Mapping[str, Any]  # template context (cann, soc, jobs, src, third_party, ...)
    sources: Mapping[str, Mapping[str, object]]  # repo -> identity (commit, nested, third_party)
    toolkit: Mapping[str, str]  # version, path
    hashed_env: Mapping[str, str]
    base_env: Mapping[str, str]  # what steps run under before the overlay
    overlay_env: Optional[Mapping[str, str]]  # after an overlay step (opbase installed)
    extra_env: Mapping[str, str]  # TMPDIR, mirror git config, offline proxies
    recipe: str = ""
    templates: Optional[Templates] = None
    # a plan over part of the recipe (a build variant, build/variant.py) walks only these
    # steps; the others are another plan's, their stamps read in `given`'s workspace
    walked: Optional[Tuple[str, ...]] = None
    given: Optional[Workspace] = None

    def stamps_of(self, ws: Workspace, step: str) -> Workspace:
        """Where `step`'s stamp is: this plan's workspace, or the one that built it."""
        if self.walked is None or step in self.walked or self.given is None:
            return ws
        return self.given


class PlannedStep(Struct, frozen=True, kw_only=True):
    spec: StepSpec
    command: str
    argv: Tuple[str, ...]
    cwd: Path
    env: Mapping[str, str]
    env_delta: Mapping[str, str]
    inputs: Mapping[str, JSONValue]  # what the stamp records
    input_hash: str = ""
    status: StepStatus = NEEDS_RUN
    reason: str = ""
    owner: Optional[str] = None  # the repo it belongs to (recipe.step_owner)

    @property
    def name(self) -> str:
        return self.spec.name

    def to_json(self) -> Dict[str, object]:
        return {
            "name": self.name,
            "repo": self.spec.repo,
            "phase": self.spec.phase,
            "command": redact.redact(self.command),
            "cwd": str(self.cwd),
            "env": dict(sorted(redact.redact_env(self.env_delta).items())),
            "status": self.status,
            "reason": self.reason,
        }


def recipe_templates(
    recipe: Recipe, cache: Optional[Path] = None, memo: Optional[Path] = None
) -> Templates:
    """A recipe's step templates, one per run: `cache` keeps compiled templates, `memo`
    rendered commands (see render.Templates)."""
    return templates.Templates(template_dirs(recipe.path), cache, memo)


def render_command(
    recipe: Recipe,
    template: str,
    values: Mapping[str, object],
    what: str,
    env: Optional[Templates] = None,
) -> str:
    """A recipe template rendered into one command line: the way a step's command (and the
    validation's upstream example) is made from the recipe, with a template error as a usage
    error that names the recipe file."""
    env = env or recipe_templates(recipe)
    try:
        text = env.render(template, values)
    except templates.TemplateFailure as exc:
        if exc.undefined:
            raise UsageError(
                f"recipe {recipe.path}: {what} uses a value the template context does not have ({exc}).",
                "Check the template's variables against the recipe's [vars] and the documented context.",
            ) from None
        raise UsageError(
            f"recipe {recipe.path}: {what} does not render: {exc}.", "Fix the template."
        ) from None
    # A template may wrap a long command over lines; it runs as one shell-style command line.
    return " ".join(line.strip() for line in text.strip().splitlines() if line.strip())


def example_values(
    values: Mapping[str, object], repo: str, example_op: Optional[str]
) -> Dict[str, object]:
    """The template values a repo's `--run_example` renders from: its own `{{ repo }}`,
    `{{ ops }}` and the operator whose examples it runs (`{{ example_op }}`)."""
    out = repo_values(values, repo)
    out["example_op"] = example_op or str(out.get("ops", "")).split(",")[0]
    return out


def repo_values(values: Mapping[str, object], repo: Optional[str]) -> Dict[str, object]:
    """One template serves every repo: a step sees its own repo as `{{ repo }}` and its
    own operators as `{{ ops }}` (session.build_context)."""
    record = (values.get("repos") or {}).get(repo or "")  # type: ignore[attr-defined]
    out = dict(values)
    if record is not None:
        out.update(repo=record, ops=record["ops"])
    return out


def _render_inline(recipe: Recipe, text: str, values: Mapping[str, object], what: str) -> str:
    return templates.render_value(text, values, f"recipe {recipe.path}: {what}")


class Upstream(Struct, frozen=True, kw_only=True):
    """What the steps a step runs after left in their stamps."""

    outputs: Dict[str, object]  # step -> outputs digest
    artifacts: Dict[str, str]  # step -> path of its first artifact (the package it built)
    missing: List[str]  # steps not built yet


def _upstream(ws: Workspace, spec: StepSpec, ctx: StepContext) -> Upstream:
    outputs: Dict[str, object] = {}
    artifacts: Dict[str, str] = {}
    missing: List[str] = []
    for dep in spec.after:
        stamp = read_stamp(ctx.stamps_of(ws, dep), dep)
        if stamp is None:
            missing.append(dep)
            continue
        # A step's inputs include the outputs of the steps it runs after, by digest: a rebuilt
        # opbase package reruns the ops-transformer steps that take it.
        outputs[dep] = stamp.get("outputs_digest")
        if stamp.get("artifacts"):
            # The first artifact is the package the step built, which an install template runs:
            # `bash {{ artifacts["opbase-build"] }} --full --quiet ...`
            # (templates/steps/opbase-install.j2).
            artifacts[dep] = stamp["artifacts"][0]["path"]
    return Upstream(outputs=outputs, artifacts=artifacts, missing=missing)


def check_force(recipe: Recipe, force: Sequence[str]) -> None:
    unknown = [f for f in force if f not in [s.name for s in recipe.steps]]
    if unknown:
        raise UsageError(
            f"--force {unknown[0]}: the recipe has no such step.",
            f"Steps: {', '.join(s.name for s in recipe.steps)}.",
        )


def check_selection(recipe: Recipe, optional_steps: Sequence[str]) -> None:
    """The optional steps asked for are optional steps of this recipe, nothing else."""
    optional = [s.name for s in recipe.steps if s.optional]
    hint = (
        f"Optional steps of recipe {recipe.name}: {', '.join(optional)}."
        if optional
        else f"Recipe {recipe.name} has no optional steps."
    )
    for name in optional_steps:
        if name in optional:
            continue
        if any(s.name == name for s in recipe.steps):
            raise UsageError(
                f"{SELECT} {name}: that step always runs in recipe {recipe.name}.", hint
            )
        raise UsageError(f"{SELECT} {name}: recipe {recipe.name} has no such step.", hint)


def selected(spec: StepSpec, optional_steps: Sequence[str], force: Sequence[str]) -> bool:
    """An optional step runs only when asked for by name (--with-step, or --force)."""
    return not spec.optional or spec.name in optional_steps or spec.name in force


def idle_repos(
    recipe: Recipe, optional_steps: Sequence[str], force: Sequence[str]
) -> Dict[str, str]:
    """The repos none of whose steps runs (each optional and not asked for), each with
    why: their third-party archives are neither fetched nor checked (sources/ready.py).
    A repo with no step at all keeps its archives, as before steps could be optional."""
    check_selection(recipe, optional_steps)
    idle: Dict[str, str] = {}
    for repo in recipe.repos:
        steps = [s for s in recipe.steps if s.repo == repo.name]
        if steps and not any(selected(s, optional_steps, force) for s in steps):
            names = ", ".join(s.name for s in steps)
            asks = " or ".join(f"{SELECT} {s.name}" for s in steps)
            idle[repo.name] = (
                f"no step of {repo.name} runs ({names}: optional, not selected; {asks} selects it)"
            )
    return idle


def not_selected_reason(spec: StepSpec) -> str:
    return (
        f"optional: runs only when asked for: --with-step {spec.name} (or "
        f"CANNBUILD_OPTIONAL_STEPS, cannbuild.optional_steps in invoke.yaml)"
    )


def plan_step(
    recipe: Recipe,
    spec: StepSpec,
    ctx: StepContext,
    ws: Workspace,
    use_overlay: bool,
    upstream_pending: Sequence[str],
    force: bool,
) -> PlannedStep:
    owner = recipe.step_owner(spec)
    values: Dict[str, Any] = repo_values(ctx.values, owner)
    upstream = _upstream(ws, spec, ctx)
    artifacts = {**values.get("artifacts", {}), **upstream.artifacts}
    for dep in spec.after:
        # Planned before its dependency ran, or before it runs again (a plan: what it made
        # last time is not what this step will take): a placeholder keeps the command
        # renderable, and names no old package (a moved workspace's stamps name its old path).
        if dep in upstream_pending:
            artifacts[dep] = f"<output of {dep}>"
        artifacts.setdefault(dep, f"<output of {dep}>")
    values["artifacts"] = artifacts
    command = render_command(recipe, spec.command, values, f"step {spec.name!r}", ctx.templates)
    # The same command with `{jobs}` for -j: that is what the input hash sees.
    hashed_command = render_command(
        recipe,
        spec.command,
        {**values, "jobs": JOBS_PLACEHOLDER},
        f"step {spec.name!r}",
        ctx.templates,
    )
    try:
        argv = tuple(shlex.split(command))
    except ValueError as exc:
        raise UsageError(
            f"recipe {recipe.path}: step {spec.name!r} renders an unparsable command: {exc}.", None
        ) from None
    if spec.cwd:
        cwd = Path(_render_inline(recipe, spec.cwd, values, f"step {spec.name!r} cwd"))
    elif spec.repo:
        cwd = Path(values["src"][spec.repo])
    else:
        cwd = ws.root
    step_env = {
        k: _render_inline(recipe, v, values, f"step {spec.name!r} env {k}")
        for k, v in sorted(spec.env.items())
    }
    # Steps after the overlay step build against the overlay (the toolkit with the staged opbase on
    # top, build/overlay.py); the ones before against the toolkit itself.
    base = ctx.overlay_env if (use_overlay and ctx.overlay_env is not None) else ctx.base_env
    env = {**base, **ctx.extra_env, **step_env}
    # Only what differs from cannbuild's own environment is shown and recorded.
    delta = {k: v for k, v in env.items() if os.environ.get(k) != v}

    inputs: Dict[str, object] = {
        "recipe": ctx.recipe,
        # a secret (by its name, or a credential in a URL) is kept as its hash: a changed
        # secret still rebuilds, and the stamp holds no secret
        "command": redact.fingerprint("", hashed_command),
        "env": redact.fingerprint_env(step_env),
        "env_mode": "overlay" if use_overlay else "toolkit",
        "toolkit": dict(ctx.toolkit),
        "source": _with_edits(ctx.sources.get(spec.repo, {}), Path(values["src"][spec.repo]))
        if spec.repo
        else {},
        "upstream": upstream.outputs,
        "hashed_env": redact.fingerprint_env(ctx.hashed_env),
    }
    # `soc`, `ops`, `vendor_name`: only a step that declares one is rebuilt when it changes.
    for name in spec.inputs:
        inputs[name] = values[name]
    input_hash = digest(inputs)

    status, reason = _status(
        ws, spec, inputs, input_hash, upstream.missing, upstream_pending, force
    )
    return PlannedStep(
        spec=spec,
        command=command,
        argv=argv,
        cwd=cwd,
        env=env,
        env_delta=delta,
        inputs=inputs,
        input_hash=input_hash,
        status=status,
        reason=reason,
        owner=owner,
    )


def _with_edits(source: Mapping[str, object], checkout: Path) -> Dict[str, object]:
    """The checkout's identity and, when a user edited files git tracks there (builds
    leave them alone), a digest of those edits: an edited source rebuilds, and so does
    undoing the edit.  A variant's copy is not asked: its patch is in `source` already."""
    if not source or "patch" in source or not (checkout / ".git").exists():
        return dict(source)
    done = proc.run(["git", "diff", "HEAD", "--binary"], cwd=checkout, timeout=60)
    if done.returncode != 0 or not done.stdout:
        return dict(source)
    return {**source, "edits": hashlib.sha256(done.stdout).hexdigest()}


def _status(
    ws: Workspace,
    spec: StepSpec,
    inputs: Mapping[str, object],
    input_hash: str,
    missing: Sequence[str],
    upstream_pending: Sequence[str],
    force: bool,
) -> Tuple[StepStatus, str]:
    # Most specific reason first: a step whose upstream reruns or was never built must run whatever
    # its own stamp says.
    if force:
        return NEEDS_RUN, "forced (--force)"
    pending = [d for d in spec.after if d in upstream_pending]
    if pending:
        return NEEDS_RUN, f"runs after {', '.join(pending)}, which needs to run"
    if missing:
        return NEEDS_RUN, f"runs after {', '.join(missing)}, which has not been built"
    stamp = read_stamp(ws, spec.name)
    if stamp is None:
        return NEEDS_RUN, "never built in this workspace"
    if stamp.get("input_hash") != input_hash:
        return NEEDS_RUN, explain_change(stamp.get("inputs", {}), inputs)
    gone = outputs_gone(stamp)
    if gone:
        return NEEDS_RUN, gone
    return UP_TO_DATE, f"built {stamp.get('finished', '')}; inputs unchanged"


def explain_change(old: Mapping[str, JSONValue], new: Mapping[str, JSONValue]) -> str:
    """Which input changed, in the words a CANN engineer would use."""
    # The order asks the questions a CANN engineer would: toolkit, SoC, op list, sources, then the
    # steps before it, the command, the environment, the recipe.
    if old.get("toolkit") != new.get("toolkit"):
        o, n = old.get("toolkit", {}), new.get("toolkit", {})
        return f"toolkit changed: CANN {o.get('version')} at {o.get('path')} -> {n.get('version')} at {n.get('path')}"
    if old.get("soc") != new.get("soc"):
        return f"soc changed: {old.get('soc')} -> {new.get('soc')}"
    for key in ("ops", "vendor_name"):
        if old.get(key) != new.get(key):
            return f"{key} changed: {old.get(key)} -> {new.get(key)}"
    if old.get("source") != new.get("source"):
        o, n = old.get("source", {}), new.get("source", {})
        if o.get("commit") != n.get("commit"):
            return (
                f"source commit changed: {str(o.get('commit'))[:12]} -> {str(n.get('commit'))[:12]}"
            )
        if o.get("nested") != n.get("nested"):
            return "pinned opbase source changed"
        if o.get("patch") != n.get("patch"):
            return "patch changed"
        if o.get("edits") != n.get("edits"):
            return "files edited in the checkout" if n.get("edits") else "checkout edits undone"
        return "third-party archives changed"
    if old.get("upstream") != new.get("upstream"):
        changed = sorted(
            k
            for k in new.get("upstream", {})
            if old.get("upstream", {}).get(k) != new["upstream"][k]
        )
        return f"output of {', '.join(changed) or 'an earlier step'} changed"
    if old.get("command") != new.get("command"):
        return "command changed"
    if old.get("hashed_env") != new.get("hashed_env"):
        keys = sorted(
            k
            for k in set(old.get("hashed_env", {})) | set(new.get("hashed_env", {}))
            if old.get("hashed_env", {}).get(k) != new.get("hashed_env", {}).get(k)
        )
        return f"environment changed: {', '.join(keys)}"
    if old.get("env") != new.get("env") or old.get("env_mode") != new.get("env_mode"):
        return "step environment changed"
    if old.get("recipe") != new.get("recipe"):
        return "recipe changed"
    return "inputs changed"


def walk(
    recipe: Recipe,
    ctx: StepContext,
    ws: Workspace,
    phases: Sequence[str],
    force: Sequence[str] = (),
    optional_steps: Sequence[str] = (),
    source_of: Optional[Callable[[StepSpec], Mapping[str, object]]] = None,
    visit: Optional[Callable[[PlannedStep], bool]] = None,
) -> List[PlannedStep]:
    """The one walk over a recipe's steps, in order, each planned when it is reached.

    A plan (no `visit`): a step that needs a run makes the steps after it need one too,
    and nothing is written (`ctx.walked`: only those steps; the others are taken as
    built).  A run: each planned step is handed to `visit`, which runs
    it (or not) and says whether to go on; the steps after it are planned only then,
    from the stamps it left.  `source_of` gives a repo's checkout identity when a step
    of that repo is reached (a run waits there for its fetch)."""
    check_force(recipe, force)
    check_selection(recipe, optional_steps)
    planned: List[PlannedStep] = []
    pending: List[str] = []
    use_overlay = False
    for spec in recipe.steps:
        if spec.phase not in phases:
            continue
        chosen = selected(spec, optional_steps, force)
        if ctx.walked is None or spec.name in ctx.walked:  # a variant takes the rest as built
            if source_of is not None and spec.repo and spec.repo not in ctx.sources:
                ctx = replace(ctx, sources={**ctx.sources, spec.repo: source_of(spec)})
            step = plan_step(recipe, spec, ctx, ws, use_overlay, pending, spec.name in force)
            if not chosen:
                step = replace(step, status=NOT_SELECTED, reason=not_selected_reason(spec))
            planned.append(step)
            if visit is not None:
                if not visit(step):
                    break
            # In a plan nothing runs, so a step that needs a run makes its dependents need one too.
            elif step.status == NEEDS_RUN:
                pending.append(spec.name)
        if chosen and switches_to_overlay(spec) and ctx.overlay_env is not None:
            use_overlay = True
    return planned


def pattern_folder(pattern: Path) -> Path:
    """The fixed folder of a `produces` pattern: `build_out/cann-opbase_*.run` -> `build_out`."""
    fixed = Path(*[p for p in pattern.parts if not any(c in p for c in "*?[")])
    return fixed.parent if fixed == pattern else fixed


def switches_to_overlay(spec: StepSpec) -> bool:
    """After opbase's installer (the overlay action), steps run under the overlay."""
    return spec.action == "overlay"


def hashed_env_values(env: Mapping[str, str]) -> Dict[str, str]:
    return {k: env[k] for k in HASHED_ENV if env.get(k)}
