"""Invoke tasks: parse flags, build `Options`, call the core, render the result.

Task bodies stay thin; everything they call returns plain data.
"""

from __future__ import annotations

import contextlib
import functools
import inspect
import os
import sys
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, TypeVar

from invoke import Collection, Exit, task

from . import ui
from .errors import CannbuildError, StepFailed, UsageError
from .options import Options, resolve_options

F = TypeVar("F", bound=Callable[..., Any])

COMMON_HELP = {
    "cann_path": "CANN toolkit folder (the one holding set_env.sh), e.g. /usr/local/Ascend/cann",
    "sysroot": "read the host under this root instead of / (fixtures, sandbox)",
    "workspace": "where sources, builds, logs and reports go (default ./.cannbuild)",
    "soc": "SoC to build for: ascend910b (Atlas A2) or ascend910_93 (Atlas A3); default: detected",
    "jobs": "parallel compile jobs (default: CPUs available)",
    "ops": "operators for the custom package (default flash_attention_score)",
    "vendor_name": "custom package vendor name (default custom)",
    "recipe": "recipe: a CANN train (8.3, 8.5, 9.0) or a recipe .toml file; default: the toolkit's train",
    "lock_file": "lock file to read and write (default ./cannbuild.lock)",
    "locked": "fail if anything differs from the lock file",
    "offline": "never touch the network; fail naming the URL if something would",
    "bundle": "offline bundle (from `cannbuild bundle`) to seed the caches from",
    "force": "rerun this step even if it is up to date (repeatable)",
    "install_into_toolkit": "install opbase into the real toolkit instead of a workspace overlay",
    "sandbox": "run against the emulated Ascend host under <workspace>/sandbox",
    "variant": "sandbox hardware: A2 (8 x 910B3) or A3 (8 x 910_93)",
    "cann": "sandbox CANN version: 8.3.RC2, 8.5.0 or 9.0.0",
    "wait": "wait for another build on this workspace instead of refusing",
    "json": "print machine-readable JSON instead of a table",
    "require_device": "treat SKIPPED (no NPU) as a failure, for CI on NPU hosts",
}


def helps(*names: str, **extra: str) -> Dict[str, str]:
    """`--help` texts for the flags a task takes."""
    return {**{n: COMMON_HELP[n] for n in names}, **extra}


def guarded(fn: F) -> F:
    """Turn cannbuild errors into one paragraph and their exit code."""

    @functools.wraps(fn)
    def wrapper(c: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            return fn(c, *args, **kwargs)
        except CannbuildError as exc:
            raise Exit(f"cannbuild: {exc.paragraph()}", code=exc.exit_code) from None
        except KeyboardInterrupt:
            raise Exit("cannbuild: interrupted", code=130) from None

    return wrapper  # type: ignore[return-value]


_BOOL_FLAGS = {
    "locked",
    "offline",
    "install_into_toolkit",
    "sandbox",
    "wait",
    "json",
    "require_device",
}


def with_flags(*names: str) -> Callable[[F], F]:
    """Give a task with **flags an explicit signature, so invoke makes a --flag of each name."""

    def decorate(fn: F) -> F:
        sig = inspect.signature(fn)
        params = [p for p in sig.parameters.values() if p.kind is not inspect.Parameter.VAR_KEYWORD]
        for name in names:
            default = False if name in _BOOL_FLAGS else None
            params.append(inspect.Parameter(name, inspect.Parameter.KEYWORD_ONLY, default=default))
        fn.__signature__ = sig.replace(parameters=params)  # type: ignore[attr-defined]
        return fn

    return decorate


def make_options(c: Any, **flags: Any) -> Options:
    config = c.config.get("cannbuild") or {}
    renames = {"variant": "sandbox_variant", "cann": "sandbox_cann"}
    cli: Dict[str, Any] = {}
    for key, value in flags.items():
        if value in (None, False, [], ()):
            continue
        cli[renames.get(key, key)] = value
    return resolve_options(cli, os.environ, dict(config))


BUILD_FLAGS = (
    "cann_path",
    "sysroot",
    "workspace",
    "soc",
    "jobs",
    "ops",
    "vendor_name",
    "recipe",
    "lock_file",
    "locked",
    "offline",
    "bundle",
    "install_into_toolkit",
    "sandbox",
    "variant",
    "cann",
    "wait",
)


@task(help=helps("cann_path", "sysroot", "workspace", "soc", "sandbox", "variant", "cann", "json"))
@guarded
def doctor(
    c: Any,
    cann_path: Optional[str] = None,
    sysroot: Optional[str] = None,
    workspace: Optional[str] = None,
    soc: Optional[str] = None,
    sandbox: bool = False,
    variant: Optional[str] = None,
    cann: Optional[str] = None,
    json: bool = False,
) -> None:
    """Check the host: toolkit, NPUs, driver, tools, torch. Exit 1 if a check fails."""
    from .host.doctor import read_host

    options = make_options(
        c,
        cann_path=cann_path,
        sysroot=sysroot,
        workspace=workspace,
        soc=soc,
        sandbox=sandbox,
        variant=variant,
        cann=cann,
    )
    options = _on_sandbox(options)
    report = read_host(options, os.environ)
    if json:
        ui.print_json(report.to_json())
    else:
        out = ui.console()
        out.print(ui.checks_table(report.checks, title="cannbuild doctor"))
        out.print(ui.summary_line(report.checks))
    if report.failed:
        raise Exit(code=1)


def _on_sandbox(options: Options) -> Options:
    """Point read-only tasks at the sandbox; the pipeline import is paid only with --sandbox."""
    if not options.sandbox:
        return options
    from .pipeline import with_sandbox

    return with_sandbox(options)[0]


def _session(c: Any, flags: Dict[str, Any]) -> Any:
    from .pipeline import open_session, with_sandbox

    options = make_options(c, **flags)
    options, info, created = with_sandbox(options)
    if created and info is not None:
        ui.note(f"sandbox created: {info.variant} host with CANN {info.cann} at {info.dir}")
    return open_session(options, os.environ, Path.cwd(), info)


@task(help=helps(*BUILD_FLAGS, "json", phases="build, install or both (default both)"))
@with_flags(*BUILD_FLAGS)
@guarded
def plan(c: Any, json: bool = False, phases: str = "build,install", **flags: Any) -> None:
    """Show each step: its rendered command, cwd, env, and whether it must run (and why)."""
    from .pipeline import make_plan, sources_from_lock

    session = _session(c, flags)
    sources = sources_from_lock(session)
    steps = make_plan(session, sources, os.environ, _phases(phases))
    if sources is None:
        steps = [_unfetched(s) for s in steps]
    if json:
        ui.print_json({"recipe": session.recipe.name, "steps": [s.to_json() for s in steps]})
        return
    ui.print_plan(session, steps)


def _unfetched(step: Any) -> Any:
    from dataclasses import replace

    from .plan import NOT_SELECTED

    if step.status == NOT_SELECTED:  # it would not run either way
        return step
    return replace(
        step, status="needs run", reason="sources not fetched or not locked yet (cannbuild fetch)"
    )


def _phases(text: str) -> List[str]:
    phases = [p.strip() for p in text.split(",") if p.strip()]
    for p in phases:
        if p not in ("build", "install"):
            raise UsageError(
                f"--phases {p!r} is not build or install.", "Example: --phases build,install"
            )
    return phases


def _sync(c: Any, flags: Dict[str, Any], command: str, **how: bool) -> None:
    from .sync import sync_sources
    from .workspace import WorkspaceLock

    session = _session(c, flags)
    with WorkspaceLock(session.ws, command, session.options.wait, ui.waiting):
        state = sync_sources(session, **how)
    ui.print_sources(state, session.options.lock_file)


@task(help=helps(*BUILD_FLAGS))
@with_flags(*BUILD_FLAGS)
@guarded
def fetch(c: Any, **flags: Any) -> None:
    """Clone or update every source at its pinned commit (writes cannbuild.lock if needed)."""
    _sync(c, flags, "cannbuild fetch", refresh=True)


@task(help=helps(*BUILD_FLAGS))
@with_flags(*BUILD_FLAGS)
@guarded
def lock(c: Any, **flags: Any) -> None:
    """Resolve every tag/branch to a commit and hash every archive into cannbuild.lock."""
    _sync(c, flags, "cannbuild lock", update_lock=True)


def _run(
    c: Any,
    flags: Dict[str, Any],
    phases: Sequence[str],
    command: str,
    then: Optional[Callable[[Any, Any], int]] = None,
    show_host: bool = False,
) -> None:
    """Sync sources and run the steps under the workspace lock; `then(session, result)`
    runs under the same lock after the steps succeed and returns an exit code."""
    from .pipeline import run_steps
    from .progress import ConsoleProgress
    from .sync import syncing_sources
    from .workspace import WorkspaceLock

    session = _session(c, flags)
    if show_host:
        ui.print_doctor_summary(session.host)
    progress = ConsoleProgress()
    code = 0
    with WorkspaceLock(session.ws, command, session.options.wait, ui.waiting):
        with syncing_sources(session) as sources:
            for note in sources.notes:
                progress.note(note)
            result = run_steps(session, sources, os.environ, phases, progress)
            state = None
            if result.failed is not None:
                ui.print_digest(result.failed)
                # the lock is still written if every repo resolves; a fetch error
                # here would hide the step's own failure, and the next run meets it
                with contextlib.suppress(CannbuildError):
                    state = sources.finish()
            else:
                state = sources.finish()
        for note in state.notes[len(sources.notes) :] if state else ():
            progress.note(note)  # what resolving found: a moved tag, an updated lock
        if result.failed is not None:
            raise Exit(code=StepFailed.exit_code)
        if then is not None:
            code = then(session, result)
    if code:
        raise Exit(code=code)


@task(iterable=["force"], help=helps(*BUILD_FLAGS, "force"))
@with_flags(*BUILD_FLAGS)
@guarded
def build(c: Any, force: Optional[List[str]] = None, **flags: Any) -> None:
    """Build opbase, then the ops-transformer package (skipping what is up to date)."""
    _run(c, {**flags, "force": force}, ("build",), "cannbuild build")


@task(iterable=["force"], help=helps(*BUILD_FLAGS, "force"))
@with_flags(*BUILD_FLAGS)
@guarded
def install(c: Any, force: Optional[List[str]] = None, **flags: Any) -> None:
    """Build if needed, then install the package under <workspace>/opp."""
    _run(c, {**flags, "force": force}, ("build", "install"), "cannbuild install")


@task(help=helps("workspace", "lock_file", "sandbox"))
@guarded
def bundle(
    c: Any,
    out: str,
    workspace: Optional[str] = None,
    lock_file: Optional[str] = None,
    sandbox: bool = False,
) -> None:
    """Pack the locked sources and archives into OUT.tar for an offline build."""
    from .bundle import make_bundle
    from .workspace import Workspace

    options = make_options(c, workspace=workspace, lock_file=lock_file, sandbox=sandbox)
    summary = make_bundle(Workspace(options.workspace), options.lock_file, Path(out).resolve())
    ui.note(
        f"bundle written: {summary['path']} ({summary['files']} files, {summary['bytes'] / 1e6:.1f} MB)"
    )


@task(positional=["action"], help=helps("variant", "cann", dir="where to create the emulated host"))
@guarded
def sandbox(
    c: Any,
    action: str,
    dir: str = ".cannbuild/sandbox",
    variant: str = "A2",
    cann: str = "8.5.0",
) -> None:
    """`sandbox create --dir D --variant A2|A3 --cann VERSION`: an emulated Ascend host."""
    from .sandbox import SandboxSpec, create_sandbox

    if action != "create":
        raise UsageError(
            f"sandbox {action!r}: the only action is create.",
            "Run: cannbuild sandbox create --dir D",
        )
    options = make_options(c, variant=variant)
    result = create_sandbox(SandboxSpec(Path(dir).resolve(), options.sandbox_variant, cann))
    info = result.info
    state = "created" if result.created else "already up to date"
    ui.note(
        f"sandbox {state}: {info.variant} ({info.chip}) with CANN {info.cann}\n"
        f"  sysroot   {info.sysroot}\n  set_env   {info.set_env}\n  mirror    {info.mirror}\n"
        f"  try: cannbuild doctor --sysroot {info.sysroot}"
    )


def _case_names(cases: str) -> List[str]:
    """--cases a,b: checked now, so a typo fails before any build, not after it."""
    from .validate.cases import select

    names = [n.strip() for n in cases.split(",") if n.strip()]
    select(names)
    return names


def _validate(
    session: Any,
    outcomes: Optional[Sequence[Any]],
    names: Sequence[str],
    json_out: bool,
    require_device: bool,
    run_id: Optional[str] = None,
    reuse: bool = False,
) -> int:
    from .pipeline import validate_and_report
    from .validate import exit_code

    run = validate_and_report(session, os.environ, names, outcomes, run_id, reuse)
    if json_out:
        ui.print_json(run.validation)
    elif run.report is not None:
        ui.print_validation(run.report, run.directory)
    else:
        ui.note(
            f"validation: PASS reused from run {run.reused_from} (nothing it checks has changed)"
        )
        ui.note(f"report: {run.directory}/report.md")
    return exit_code(run.validation["status"], require_device)


@task(
    help=helps(
        *BUILD_FLAGS,
        "json",
        "require_device",
        cases="only these validation cases (comma-separated)",
    )
)
@with_flags(*BUILD_FLAGS)
@guarded
def validate(
    c: Any, json: bool = False, require_device: bool = False, cases: str = "", **flags: Any
) -> None:
    """Check the installed package: library, FlashAttention through the C API, the repo's example."""
    from .workspace import WorkspaceLock

    names = _case_names(cases)
    session = _session(c, flags)
    with WorkspaceLock(session.ws, "cannbuild validate", session.options.wait, ui.waiting):
        code = _validate(session, None, names, json, require_device)
    if code:
        raise Exit(code=code)


@task(
    iterable=["force"],
    help=helps(*BUILD_FLAGS, "force", "require_device", cases="only these validation cases"),
)
@with_flags(*BUILD_FLAGS)
@guarded
def setup(
    c: Any,
    force: Optional[List[str]] = None,
    require_device: bool = False,
    cases: str = "",
    **flags: Any,
) -> None:
    """doctor -> fetch -> build -> install -> validate -> report, stopping at the first blocker."""
    names = _case_names(cases)
    force = list(force or [])
    revalidate = "validate" in force
    _run(
        c,
        {**flags, "force": [f for f in force if f != "validate"]},
        ("build", "install"),
        "cannbuild setup",
        show_host=True,
        then=lambda session, result: _validate(
            session,
            result.outcomes,
            names,
            False,
            require_device,
            result.run_id,
            reuse=not revalidate,
        ),
    )


@task(
    help={
        "variant": "A2 (910B image) or A3",
        "cann": "CANN version of the base image (default: the lock's)",
        "os": "ubuntu22.04, ubuntu24.04, openeuler22.03 or openeuler24.03",
        "python": "3.10, 3.11 or 3.12",
        "out": "where to write the build context (default ./container)",
        "base": "use this base image instead of quay.io/ascend/cann:<tag>",
        "base_digest": "record this sha256 digest of the base image in the lock (pins FROM)",
        "lock_file": COMMON_HELP["lock_file"],
        "bundle": "put this offline bundle in the context and build with --offline",
        "sandbox": "a container of the emulated host (for CI without CANN images)",
        "build": "build it with docker buildx or podman when one answers",
    }
)
@guarded
def container(
    c: Any,
    variant: str = "A2",
    cann: Optional[str] = None,
    os: str = "ubuntu22.04",
    python: str = "3.11",
    out: str = "container",
    base: Optional[str] = None,
    base_digest: Optional[str] = None,
    lock_file: Optional[str] = None,
    bundle: Optional[str] = None,
    sandbox: bool = False,
    build: bool = False,
) -> None:
    """Render a reproducible build context (Dockerfile, .dockerignore, lock) from the lock."""
    from .container import ContainerSpec, base_name, check_lock, check_spec, pinned, render_context
    from .container import build as engine_build
    from .lockfile import Lock, read_lock, write_lock

    options = make_options(c, lock_file=lock_file)
    lock = read_lock(options.lock_file)
    if lock is None:
        raise UsageError(
            f"{options.lock_file} does not exist: the container is rendered from the lock.",
            "Run `cannbuild lock` on a host (or sandbox) with this CANN, or pass --lock-file.",
        )
    spec = ContainerSpec(
        variant=variant.upper(),
        cann=cann or lock.toolkit_version,
        os=os,
        python=python,
        base=base,
        sandbox=sandbox,
        bundle=Path(bundle).resolve() if bundle else None,
        base_digest=base_digest,
    )
    check_spec(spec)
    check_lock(spec, lock, options.lock_file)

    def pin_base(digest: str) -> Lock:
        new = pinned(lock, base_name(spec), digest)
        write_lock(options.lock_file, new)
        ui.note(f"{options.lock_file}: base image pinned to {base_name(spec)}@{digest}")
        return new

    if base_digest:
        lock = pin_base(base_digest)
    rendered = render_context(spec, lock, options.lock_file, Path(out).resolve())
    ui.note(f"build context written to {rendered['dir']} (FROM {rendered['base']})")
    if rendered["note"]:
        ui.note(f"note: {rendered['note']}")
    if not build:
        ui.note("build it with: " + " ".join(rendered["command"]))
        return
    result = engine_build(Path(str(rendered["dir"])), str(rendered["base"]), lock.arch)
    if result.returncode:
        raise Exit(
            f"cannbuild: {result.engine} build failed (exit {result.returncode})",
            code=StepFailed.exit_code,
        )
    if result.base_digest:
        pin_base(result.base_digest)
    ui.note(f"built with {result.engine}; packages and report in {rendered['dir']}/artifacts")


@task(
    help={
        "image": "image to run (default: the CANN image for this host's CANN and variant)",
        "exec": "run it instead of printing it",
        "sysroot": COMMON_HELP["sysroot"],
        "sandbox": COMMON_HELP["sandbox"],
        "variant": COMMON_HELP["variant"],
        "cann": COMMON_HELP["cann"],
    }
)
@guarded
def container_run(
    c: Any,
    image: Optional[str] = None,
    exec: bool = False,
    sysroot: Optional[str] = None,
    sandbox: bool = False,
    variant: Optional[str] = None,
    cann: Optional[str] = None,
) -> None:
    """Print (or --exec) the documented `docker run` line for the NPUs this host has."""
    import shlex
    import subprocess

    from .container import find_engine, image_for_host, run_line
    from .errors import NoContainerEngine
    from .host.doctor import read_host
    from .host.sysroot import Sysroot

    options = _on_sandbox(
        make_options(c, sysroot=sysroot, sandbox=sandbox, variant=variant, cann=cann)
    )
    host = read_host(options, os.environ)
    chosen = image or image_for_host(host.facts)
    if chosen is None:
        raise UsageError(
            "no image for this host: its CANN version or NPU variant is unknown.", "Pass --image."
        )
    root = Sysroot.at(options.sysroot)
    driver = host.facts["driver"]["path"]
    argv = run_line(
        root.root,
        chosen,
        root.display(Path(driver)) if driver else "/usr/local/Ascend",
        tty=not exec or sys.stdin.isatty(),
    )
    if not exec:
        print(" ".join(shlex.quote(a) for a in argv))
        return
    engine = find_engine()
    if engine is None:
        raise NoContainerEngine(
            "no container engine answers here; the command is:\n  "
            + " ".join(shlex.quote(a) for a in argv),
            "Run it where Docker or Podman works.",
        )
    raise Exit(code=subprocess.run([engine, *argv[1:]], check=False).returncode)


@task(
    help={
        "provider": "github or gitlab",
        "out": "file to write (default: the provider's usual path)",
        "npu_label": "runner label of NPU hosts",
    }
)
@guarded
def ci(
    c: Any, provider: str = "github", out: Optional[str] = None, npu_label: str = "ascend-npu"
) -> None:
    """Render a CI workflow: a matrix over A2/A3 and the recipes' CANN versions."""
    from .ci import render_ci
    from .workspace import write_atomic

    rendered = render_ci(provider, Path.cwd(), npu_label=npu_label)
    target = Path(out or rendered["path"])
    write_atomic(target, rendered["text"].encode())
    ui.note(f"{provider} workflow written to {target}")
    for name, text in rendered["extras"].items():
        if out is not None:
            ui.note(f"with --out, {name} is not written; for actionlint it should say:\n{text}")
            continue
        if Path(name).exists():
            ui.note(f"{name} exists, left as it is; it should list the runner label {npu_label}")
        else:
            write_atomic(Path(name), text.encode())
            ui.note(f"{name} written")


ns = Collection(
    doctor,
    plan,
    fetch,
    lock,
    build,
    install,
    validate,
    setup,
    bundle,
    sandbox,
    container,
    container_run,
    ci,
)
