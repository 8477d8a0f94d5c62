"""Every command-line option, declared once: its help, kind, short form and env name.

A letter means the same in every task: there are no per-task short flags, and only
the few options below that have a `short` get one (none that write outside the
workspace or force work).  Options that feed `Options` read `CANNBUILD_<NAME>` too.
"""

from __future__ import annotations

import functools
import inspect
from typing import Callable, Dict, Iterable, List, Mapping, Optional, Tuple, TypeVar, Union

from invoke import Context, Exit
from msgspec import Struct
from msgspec.structs import replace

from .. import ui
from ..errors import (
    CannbuildError,
    DryRun,
    interrupted_line,
    path_error,
    signal_number,
    storage_error,
)
from ..host.socs import SOC_WORDS
from ..options import ENV_PREFIX, PATH_FIELDS, Options, check_path
from ._config import state_warnings
from ._frame import Frame

F = TypeVar("F", bound=Callable[..., None])

# what an option arrives as: a value, a switch, a repeated option's values, or unset
FlagValue = Union[None, bool, str, List[str]]


class Flag(Struct, frozen=True, kw_only=True):
    """An option: the table's below, or a task-only one (`cli_task`'s `extra`)."""

    name: str  # the Python name; the option is --name-with-dashes
    help: str
    kind: type = str  # str, bool or list (repeatable)
    short: Optional[str] = None
    # the Options field it sets (and CANNBUILD_<FIELD>) where that is not the field of its
    # own name (a flag named as an Options field sets it)
    sets: Optional[str] = None
    # a file or folder: checked against the kernel's limits (check_path); a field's is
    # known from its Options type (options.PATH_FIELDS)
    path: bool = False
    default: FlagValue = None  # a task's option: what it is when not given

    @property
    def field(self) -> Optional[str]:
        return self.sets or (self.name if self.name in Options.__struct_fields__ else None)

    @property
    def option(self) -> str:
        """`vendor_name` -> `--vendor-name`; `from_` (a Python keyword) -> `--from`, as
        invoke's parser spells it (invoke.parser.context.translate_underscores)."""
        return "--" + self.name.strip("_").replace("_", "-")

    @property
    def env(self) -> Optional[str]:
        return ENV_PREFIX + self.field.upper() if self.field else None

    @property
    def spellings(self) -> Tuple[str, ...]:
        """How the command line may name it: the long form, then the letter if it has one."""
        return (self.option, f"-{self.short}") if self.short else (self.option,)


FLAGS: Dict[str, Flag] = {
    f.name: f
    for f in (
        Flag(
            name="cann_path",
            help="CANN toolkit folder (the one holding set_env.sh), e.g. /usr/local/Ascend/cann",
        ),
        Flag(name="sysroot", help="read the host under this root instead of / (fixtures, sandbox)"),
        Flag(
            name="workspace",
            help="where sources, builds, logs and reports go (default ./.cannbuild)",
            short="w",
        ),
        Flag(
            name="soc",
            help=f"SoC to build for (default: detected from PCI ids and npu-smi): {SOC_WORDS}",
        ),
        Flag(name="jobs", help="parallel compile jobs (default: CPUs available)", short="j"),
        Flag(
            name="repos",
            help="repositories to build, comma-separated (default: the recipe's default_repos), "
            "in the ASCEND_CUSTOM_OPP_PATH order the source line sets (first wins)",
        ),
        Flag(
            name="ops",
            help="operators for the custom packages, comma-separated, each `op` or `repo:op` "
            "(default: each repo's ops in the recipe, e.g. flash_attention_score)",
        ),
        Flag(name="vendor_name", help="custom package vendor name (default custom)"),
        Flag(
            name="recipe",
            help="recipe: a CANN train (recipes/<train>.toml, or yours in cannbuild-recipes/) or a "
            "recipe .toml file; default: the toolkit's train",
        ),
        Flag(
            name="ops_release",
            help="build the operator sources of this release (e.g. 9.0.1) instead of the "
            "toolkit's own: its train picks the recipe, it renders the tags; only where the "
            "release notes pair it with the toolkit (recipes/facts/*.toml)",
        ),
        Flag(
            name="lock_file",
            help="lock file to read and write (default ./cannbuild.lock; with --sandbox "
            "<workspace>/cannbuild.lock)",
        ),
        Flag(name="locked", help="fail if anything differs from the lock file", kind=bool),
        Flag(
            name="offline",
            help="never touch the network; fail naming the URL if something would",
            kind=bool,
        ),
        Flag(
            name="bundle",
            help="offline bundle (from `cannbuild bundle`) to seed the caches from",
        ),
        Flag(
            name="force",
            help="rerun this step even if it is up to date (repeatable; `validate` re-validates)",
            kind=list,
        ),
        Flag(
            name="with_step",
            help="also run this optional recipe step (repeatable), e.g. opbase-build on 9.0; "
            "`cannbuild plan` lists the optional steps",
            kind=list,
            sets="optional_steps",
        ),
        Flag(
            name="accept_stand_in",
            help="sandbox only: take the sandbox's stand-in of this third-party archive (or "
            "all) where the checkout declares the real file's hash, which the sandbox cannot "
            "serve (repeatable); the lock, the report and status name each one",
            kind=list,
            sets="accept_stand_ins",
        ),
        Flag(
            name="install_into_toolkit",
            help="install opbase into the real toolkit instead of a workspace overlay (writes outside "
            "the workspace)",
            kind=bool,
        ),
        Flag(
            name="sandbox",
            help="run against the emulated Ascend host under <workspace>/sandbox",
            kind=bool,
        ),
        Flag(
            name="variant",
            help="sandbox hardware: A2 (8 x 910B3) or A3 (8 x 910_93)",
            sets="sandbox_variant",
        ),
        Flag(
            name="cann",
            help="sandbox CANN version: a [release] of recipes/sandbox/*.toml or of your "
            "cannbuild-recipes/sandbox/*.toml (default 8.5.0)",
            sets="sandbox_cann",
        ),
        Flag(
            name="wait",
            help="wait for another run on this workspace instead of refusing",
            kind=bool,
        ),
        Flag(name="json", help="print machine-readable JSON instead of tables", kind=bool),
        Flag(
            name="require_device",
            help="treat SKIPPED (no NPU, no torch) as a failure (exit 5), for CI on NPU hosts",
            kind=bool,
        ),
        Flag(name="cases", help="only these validation cases (comma-separated)"),
        Flag(
            name="verbose",
            help="stream the running step's output (it is logged either way)",
            kind=bool,
            short="v",
        ),
        Flag(name="dry_run", help="show what would be done and change nothing", kind=bool),
        Flag(name="phases", help="build, install or both (default both)"),
        Flag(name="out", help="where to write the output", path=True),
        Flag(
            name="shapes",
            help="bench: shapes instead of the default sweep, e.g. B1N8/2S1024D64,N8S512D128",
        ),
        Flag(name="causal", help="bench: with a causal mask (half the FLOPs)", kind=bool),
        Flag(
            name="budget",
            help="bench: seconds the sweep may take; larger shapes are left out (default 60)",
        ),
        Flag(
            name="variants",
            help="bench: a TOML file of build variants (patches or compile definitions)",
            path=True,
        ),
        Flag(
            name="build_variant",
            help="bench: one build variant, NAME=PATCH_FILE or NAME=DEFINE=VALUE[,DEFINE=VALUE] (repeatable)",
            kind=list,
        ),
        Flag(
            name="dtype",
            help="attention input dtype: fp16, bf16 or fp32 (float16, bfloat16, float32); bench takes "
            "several, comma-separated (default fp32 on the sandbox, fp16 on an NPU)",
        ),
        Flag(
            name="layout",
            help="attention layout: BNSD, BSND, BSH or SBH; bench takes BNSD and/or BSH, "
            "comma-separated (default BNSD)",
        ),
        Flag(
            name="package",
            help="validate this built .run (installed into a scratch prefix under the workspace; "
            "its sha256 goes into the report) instead of the workspace's install",
            path=True,
        ),
        Flag(
            name="cannbuild_spec",
            help="the pip requirement the rendered files install cannbuild with (default: this "
            "checkout's wheel, written beside them)",
        ),
        Flag(name="batch", help="attention batch size (B)"),
        Flag(name="heads", help="query heads (N1, the headNum of FlashAttentionScore)"),
        Flag(name="kv_heads", help="key/value heads (N2; default: --heads)"),
        Flag(name="seq_len", help="sequence length (S)"),
        Flag(name="head_dim", help="head dim (D)"),
        Flag(
            name="src",
            help="recipe check: read REPO's build.sh from this folder, REPO=DIR (repeatable; "
            "default: the workspace's checkout of each repo)",
            kind=list,
            path=True,
        ),
        Flag(
            name="manifest",
            help="recipe draft: the release's cann.xml (hicann/manifest at its tag), whose "
            "revisions name each repository's ref",
            path=True,
        ),
        Flag(
            name="profile",
            help="a profiler output to check for unfused attention (what `profile` reads)",
            path=True,
        ),
    )
}

# Task-only arguments (positional or `extra`) that name a file or folder; a positional
# named like a path flag (bundle's OUT) is one too.
PATH_ARGUMENTS = frozenset({"path", "dir", "new", "compare"})


# The options every task that opens a build session takes, and those of the tasks that run steps.
SESSION_FLAGS = (
    "cann_path",
    "sysroot",
    "workspace",
    "soc",
    "jobs",
    "repos",
    "ops",
    "vendor_name",
    "recipe",
    "ops_release",
    "lock_file",
    "locked",
    "offline",
    "bundle",
    "install_into_toolkit",
    "sandbox",
    "variant",
    "cann",
    "wait",
    "accept_stand_in",
)
RUN_FLAGS = (*SESSION_FLAGS, "force", "with_step", "verbose", "dry_run")
# The options that name a workspace's target (target.py): what `status` compares with.
TARGET_FLAGS = ("sandbox", "variant", "cann", "sysroot", "cann_path", "soc", "ops_release")


class TaskSpec(Struct, frozen=True, kw_only=True):
    """A task as plain data: both front ends (the `cannbuild` script and `invoke` in a
    checkout) are made from it, so they cannot disagree on a name, letter or default."""

    name: str
    body: Callable[..., None]
    positional: Tuple[Tuple[str, str], ...]
    options: Tuple[Flag, ...]
    # trailing positional arguments that may be left out (`recipe draft` takes no RECIPE)
    optional: Tuple[str, ...] = ()

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.body) or ""

    @property
    def summary(self) -> str:
        return self.doc.split("\n\n", 1)[0].replace("\n", " ")


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


def _output_fails(exc: OSError) -> bool:
    """Whether a write error naming no file was the output's (`cannbuild status >
    /dev/full`): it was raised where the tasks print (a task, ui, progress, rich), not in
    the core, which writes files (and names them)."""
    if exc.filename:
        return False
    tb, where = exc.__traceback__, ""
    while tb is not None:
        where, tb = str(tb.tb_frame.f_globals.get("__name__", "")), tb.tb_next
    return where.startswith(PRINTING)


# the modules that write the output (tasks/ prints what the core returns, nothing else)
PRINTING = ("cannbuild.tasks", "cannbuild.ui", "cannbuild.progress", "rich.")


def guarded(fn: F, name: str, paths: Tuple[Tuple[Optional[int], str, str], ...] = ()) -> F:
    """Run the body in its `Frame` (_frame.py); turn cannbuild errors into one paragraph
    and their exit code, a `DryRun` into its line.  `paths`: the (place, name, spelling)
    of each path-valued argument, checked before the task runs (check_path: exit 2
    naming the flag, not a traceback where the kernel refuses it)."""

    @functools.wraps(fn)
    def wrapper(c: Context, *args: FlagValue, **kwargs: FlagValue) -> None:
        try:
            for value, spelled in _path_values(paths, args, kwargs):
                check_path(value, spelled)
            config = c.config.get("cannbuild") or {}
            fields, dry_run = option_fields(kwargs), bool(kwargs.get("dry_run"))
            frame = Frame(config, fields, spellings(), f"cannbuild {name}", dry_run)
            with state_warnings():  # a state file read as absent: one line on stderr
                return fn(frame, *args, **kwargs)
        except DryRun as done:
            ui.note(f"dry run: {done}; nothing was changed.")
            return None
        except CannbuildError as exc:
            text = exc.paragraph()
            raise Exit(f"cannbuild: {text}" if text else None, exc.exit_code) from None
        except OSError as exc:  # a full disk, a read-only folder, a path the kernel refuses
            known = storage_error(exc, output=_output_fails(exc)) or path_error(exc)
            if known is None:
                raise
            raise Exit(f"cannbuild: {known.paragraph()}", known.exit_code) from None
        except KeyboardInterrupt as exc:
            raise Exit(interrupted_line(exc), 128 + signal_number(exc)) from None

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

    The body is `fn(frame, *positional, **values)`: every option arrives by name, `frame`
    is its `_frame.Frame`.  `optional` names trailing positionals that may be left out
    (the body gives them a default)."""
    help = dict(help or {})
    options: List[Flag] = []
    for name in names:
        flag = FLAGS[name]
        default: FlagValue = False if flag.kind is bool else [] if flag.kind is list else None
        text = help.pop(name, flag.help) + (f" [env {flag.env}]" if flag.env else "")
        path = flag.path or flag.field in PATH_FIELDS
        options.append(replace(flag, help=text, default=default, path=path))
    for name, default, text in extra:
        kind = bool if isinstance(default, bool) else str
        path = name in PATH_ARGUMENTS
        options.append(Flag(name=name, kind=kind, default=default, help=text, path=path))
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


def text_of(flags: Mapping[str, FlagValue], name: str) -> Optional[str]:
    """The value of an option that takes one (None when it is not given)."""
    value = flags.get(name)
    if value is None or isinstance(value, str):
        return value
    raise TypeError(f"option {name} takes one value, got {value!r}")


def list_of(flags: Mapping[str, FlagValue], name: str) -> List[str]:
    """The values of an option that may be repeated (none when it is not given)."""
    value = flags.get(name) or []
    if isinstance(value, (list, tuple)):
        return list(value)
    raise TypeError(f"option {name} may be repeated, got {value!r}")


def option_fields(values: Mapping[str, FlagValue]) -> Dict[str, FlagValue]:
    """The Options fields the given option values set (those the user gave)."""
    cli: Dict[str, FlagValue] = {}
    for name, value in values.items():
        flag = FLAGS.get(name)
        if flag is None or flag.field is None or value in (None, False, [], ()):
            continue
        cli[flag.field] = value
    return cli


def spellings() -> Dict[str, str]:
    """How the command line spells each Options field's flag (sandbox_variant: --variant)."""
    return {f.field: f.option for f in FLAGS.values() if f.field}
