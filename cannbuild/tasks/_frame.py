"""The command frame: what runs around every task body, once.

`cli_task` declares a task from the option table (_flags.FLAGS); `guarded` makes its
`Frame` and runs the body in it.  The frame holds the one resolution of the options
(`resolve`: flag > environment > invoke config > the workspace's remembered target >
default, into the frozen `Options`), the session a task runs on (the sandbox made or
reused, the host read), and --dry-run: a dry run never makes a sandbox, and a body ends
one with `raise DryRun("would ...")`, said once here as "dry run: ...; nothing was
changed."  A body is `fn(run, *positional, **values)`.
"""

from __future__ import annotations

import functools
import os
import time
from pathlib import Path
from typing import (
    TYPE_CHECKING,
    Any,
    Callable,
    Dict,
    Iterable,
    List,
    Mapping,
    Optional,
    Tuple,
    TypeVar,
)

from msgspec import Struct

from .. import ui
from ..errors import CannbuildError, path_error, signal_number, storage_error
from ..lazy import lazy_module
from ..options import PATH_FIELDS, Options, check_path, options_from, sources
from ._config import Context, state_warnings
from ._flags import (
    FLAGS,
    PATH_ARGUMENTS,
    FlagValue,
    Option,
    TaskExit,
    TaskSpec,
    option_fields,
    spellings,
    with_env,
)

if TYPE_CHECKING:
    from .. import progress as progress_ui
    from .. import target as targets
    from ..build import session as build_session
    from ..build.session import Sandboxed, Session
    from ..sandbox import create
    from ..target import Target
else:  # `cannbuild --help` loads this module; a task pays for these when it runs
    progress_ui = lazy_module("cannbuild.progress")
    targets = lazy_module("cannbuild.target")
    build_session = lazy_module("cannbuild.build.session")
    create = lazy_module("cannbuild.sandbox.create")

F = TypeVar("F", bound=Callable[..., None])


class DryRun(Exception):
    """A dry run ends here; the message says what would have happened."""


class Resolved(Struct, frozen=True, kw_only=True):
    """The options a run takes, and what the lines about the remembered target need."""

    options: Options
    plain: Options  # the same without the record
    given: Mapping[str, str]  # field -> how the user set it (`--soc`, `environment ...`)
    target: Optional[Target] = None  # the workspace's record, when one was read
    found_sandbox: Optional[str] = None  # --cann-path named a sandbox's toolkit

    def notes(self, builds: bool) -> List[str]:
        """The lines saying where an explicit choice differs from the record; `builds`:
        the run builds for the target ("building for"), else it reads ("this run uses")."""
        lines = [self.found_sandbox] if self.found_sandbox else []
        if self.target is not None:
            lines += targets.choose(self.target, self.given, self.plain, builds).notes
        return lines


def resolve(
    config: object,
    flags: Mapping[str, FlagValue],
    env: Mapping[str, str],
    remembered: bool,
) -> Resolved:
    """The one resolution: flag > environment > invoke config (`config`, its `cannbuild`
    key) > the workspace's remembered target (target.py; only when `remembered`, for a
    task that targets a host) > default.  The sources are read and checked once; a
    `--cann-path` of a sandbox's toolkit is that sandbox."""
    found = sources(option_fields(flags), env, config, spellings())
    plain = options_from(found)
    if not remembered:
        return Resolved(options=plain, plain=plain, given=_spelled(found))
    said = None
    if plain.cann_path is not None and not plain.sandbox:
        info = targets.sandbox_of_toolkit(plain.cann_path)
        if info is not None:
            where = found["cann_path"][0]
            said = (
                f"{where} {plain.cann_path} is the toolkit of the sandbox at {info.dir} "
                f"({info.variant}, CANN {info.cann}): running on that emulated host, as "
                "--sandbox does"
            )
            found = {**found, "sandbox": (where, True), "sandbox_dir": (where, info.dir)}
            plain = options_from(found)
    given = _spelled(found)
    target = targets.read_target(plain.workspace)
    layer = targets.choose(target, given, plain, False).layer if target is not None else {}
    where = str(targets.target_file(plain.workspace))
    options = options_from(found, layer, where) if layer else plain
    return Resolved(options=options, plain=plain, given=given, target=target, found_sandbox=said)


def _spelled(found: Mapping[str, Tuple[str, Any]]) -> Dict[str, str]:
    return {name: where for name, (where, _) in found.items()}


class Frame:
    """One task's run: its option values, its options resolved once, --dry-run, and
    the session it runs on."""

    def __init__(
        self,
        config: object,
        flags: Mapping[str, FlagValue],
        command: str,
        env: Mapping[str, str] = os.environ,
    ) -> None:
        self.config = config
        self.flags = flags
        self.command = command  # "cannbuild setup"
        self.env = env
        self.dry_run = bool(flags.get("dry_run"))

    @functools.cached_property
    def untargeted(self) -> Resolved:
        return resolve(self.config, self.flags, self.env, remembered=False)

    @functools.cached_property
    def targeted(self) -> Resolved:
        return resolve(self.config, self.flags, self.env, remembered=True)

    @property
    def options(self) -> Options:
        """For a task that targets no host (clean, bundle, container, recipe, sandbox)."""
        return self.untargeted.options

    def target(self, builds: bool = False) -> Options:
        """The options with the workspace's remembered target under the flags; each
        explicit value that differs from it says so in one line."""
        for line in self.targeted.notes(builds):
            ui.note(line)
        return self.targeted.options

    def lock_to_read(self, targeted: bool = False) -> Options:
        """The options of a task that reads a lock (`targeted`: with the remembered
        target, as `target`): without --lock-file (or its variable or config key),
        ./cannbuild.lock, else the workspace's, where a --sandbox run writes it."""
        resolved = self.targeted if targeted else self.untargeted
        options = self.target() if targeted else resolved.options
        fallback = options.workspace / "cannbuild.lock"
        if "lock_file" in resolved.given or options.lock_file.exists() or not fallback.is_file():
            return options
        return options.with_(lock_file=fallback)

    def sandboxed(self, options: Options) -> Sandboxed:
        """The options pointed at the sandbox (made or reused) when they name one.  A
        dry run never makes one: it ends, saying it would."""
        if not options.sandbox:
            return build_session.Sandboxed(options=options)
        if self.dry_run:
            assert options.sandbox_dir is not None
            spec = create.resolve_spec(
                options.sandbox_dir, options.sandbox_variant, options.sandbox_cann
            )
            plan = create.plan_sandbox(spec)
            if not plan.startswith("up to date"):
                raise DryRun(f"the sandbox: {plan}; then {self.command}")
        began = time.monotonic()
        # only a creation has phases; on a terminal they pass on the live line, summed up below
        with progress_ui.PhaseProgress("sandbox", lines=False) as phases:
            made = build_session.with_sandbox(options, phases)
        if made.created and made.info is not None:
            ui.note(
                f"sandbox created: {made.info.variant} host with CANN {made.info.cann} at "
                f"{made.info.dir} in {time.monotonic() - began:.1f}s "
                f"(log: {made.info.dir}/create.log)"
            )
        return made

    def session(self, builds: bool = False, options: Optional[Options] = None) -> Session:
        """The session the task runs on: the targeted options (or `options`, made from
        them), pointed at the sandbox when they name one, and the host read.  `builds`:
        the task builds for that target (its lines say "building for")."""
        made = self.sandboxed(options or self.target(builds))
        session = build_session.open_session(
            made.options, self.env, Path.cwd(), made.info, made.lease
        )
        for text in session.recipe.notes:  # an old recipe form, read as the new one
            ui.note(f"note: {text}")
        return session


def _path_values(
    paths: Tuple[Tuple[Optional[int], str, str], ...],
    args: Tuple[FlagValue, ...],
    kwargs: Mapping[str, FlagValue],
) -> Iterable[Tuple[object, str]]:
    """The given values of the path-valued arguments, each with its spelling."""
    for index, name, spelled in paths:
        value = args[index] if index is not None and index < len(args) else kwargs.get(name)
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if item not in (None, "", False, True):
                yield item, spelled


def guarded(fn: F, name: str, paths: Tuple[Tuple[Optional[int], str, str], ...] = ()) -> F:
    """Run the body in its frame; turn cannbuild errors into one paragraph and their
    exit code.  `paths`: the (place, name, spelling) of each path-valued argument,
    checked before the task runs (check_path: exit 2 naming the flag, not a traceback
    where the kernel refuses it)."""

    @functools.wraps(fn)
    def wrapper(c: Context, *args: FlagValue, **kwargs: FlagValue) -> None:
        try:
            for value, spelled in _path_values(paths, args, kwargs):
                check_path(value, spelled)
            run = Frame(c.config.get("cannbuild") or {}, kwargs, f"cannbuild {name}")
            with state_warnings():  # a state file read as absent: one line on stderr
                return fn(run, *args, **kwargs)
        except DryRun as done:
            ui.note(f"dry run: {done}; nothing was changed.")
            return None
        except CannbuildError as exc:
            text = exc.paragraph()
            raise TaskExit(f"cannbuild: {text}" if text else None, exc.exit_code) from None
        except OSError as exc:  # a full disk, a read-only folder, a path the kernel refuses
            known = storage_error(exc) or path_error(exc)
            if known is None:
                raise
            raise TaskExit(f"cannbuild: {known.paragraph()}", known.exit_code) from None
        except KeyboardInterrupt as exc:
            raise TaskExit("cannbuild: interrupted", 128 + signal_number(exc)) from None

    return wrapper  # type: ignore[return-value]


def cli_task(
    *names: str,
    positional: Iterable[Tuple[str, str]] = (),
    help: Optional[Mapping[str, str]] = None,
    extra: Iterable[Tuple[str, FlagValue, str]] = (),
    optional: Iterable[str] = (),
) -> Callable[[Callable[..., None]], TaskSpec]:
    """A task taking `positional` (name, help) arguments, the table's options `names`
    (help overridable per task) and task-only `extra` (name, default, help) options.

    The body is `fn(run, *positional, **values)`: every option arrives by name, `run`
    is its `Frame`.  `optional` names trailing positionals that may be left out (the
    body gives them a default)."""
    help = dict(help or {})
    options: List[Option] = []
    for name in names:
        flag = FLAGS[name]
        default: FlagValue = False if flag.kind is bool else [] if flag.kind is list else None
        options.append(
            Option(
                name=name,
                kind=flag.kind,
                default=default,
                help=with_env(flag, help.pop(name, flag.help)),
                short=flag.short,
                path=flag.path or flag.field in PATH_FIELDS,
            )
        )
    for name, default, text in extra:
        kind = bool if isinstance(default, bool) else str
        options.append(
            Option(name=name, kind=kind, default=default, help=text, path=name in PATH_ARGUMENTS)
        )
    if help:
        raise ValueError(f"help given for options the task does not take: {sorted(help)}")

    places = tuple(positional)
    paths = tuple(
        (i, name, name.upper())
        for i, (name, _) in enumerate(places)
        if name in PATH_ARGUMENTS or (name in FLAGS and FLAGS[name].path)
    ) + tuple((None, o.name, o.option) for o in options if o.path)

    def decorate(fn: Callable[..., None]) -> TaskSpec:
        name = fn.__name__.replace("_", "-")
        return TaskSpec(
            name=name,
            body=guarded(fn, name, paths),
            positional=places,
            options=tuple(options),
            optional=tuple(optional),
        )

    return decorate
