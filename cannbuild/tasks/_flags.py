"""Every command-line option, declared once: its help, kind, short form and env name.

A letter means the same in every task: there are no per-task short flags, and only
the few options below that have a `short` get one (none that write outside the
workspace or force work).  Options that feed `Options` read `CANNBUILD_<NAME>` too.
"""

from __future__ import annotations

import functools
import inspect
import os
from typing import Any, Callable, Dict, Iterable, List, Mapping, Optional, Tuple, TypeVar

from msgspec import Struct

from ..errors import CannbuildError, path_error, signal_number, storage_error
from ..host.socs import SOC_WORDS
from ..options import ENV_PREFIX, Options, check_path, resolve_options

F = TypeVar("F", bound=Callable[..., Any])


class Flag(Struct, frozen=True):
    name: str  # the Python name; the option is --name-with-dashes
    help: str
    kind: type = str  # str, bool or list (repeatable)
    short: Optional[str] = None
    field: Optional[str] = None  # the Options field it sets (and CANNBUILD_<FIELD>)
    path: bool = False  # a file or folder: checked against the kernel's limits (check_path)

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def env(self) -> Optional[str]:
        return ENV_PREFIX + self.field.upper() if self.field else None


FLAGS: Dict[str, Flag] = {
    f.name: f
    for f in (
        Flag(
            "cann_path",
            "CANN toolkit folder (the one holding set_env.sh), e.g. /usr/local/Ascend/cann",
            field="cann_path",
            path=True,
        ),
        Flag(
            "sysroot",
            "read the host under this root instead of / (fixtures, sandbox)",
            field="sysroot",
            path=True,
        ),
        Flag(
            "workspace",
            "where sources, builds, logs and reports go (default ./.cannbuild)",
            short="w",
            field="workspace",
            path=True,
        ),
        Flag(
            "soc",
            f"SoC to build for (default: detected from PCI ids and npu-smi): {SOC_WORDS}",
            field="soc",
        ),
        Flag("jobs", "parallel compile jobs (default: CPUs available)", short="j", field="jobs"),
        Flag(
            "ops", "operators for the custom package (default flash_attention_score)", field="ops"
        ),
        Flag("vendor_name", "custom package vendor name (default custom)", field="vendor_name"),
        Flag(
            "recipe",
            "recipe: a CANN train (8.3, 8.5, 9.0) or a recipe .toml file; default: the toolkit's train",
            field="recipe",
        ),
        Flag(
            "lock_file",
            "lock file to read and write (default ./cannbuild.lock)",
            field="lock_file",
            path=True,
        ),
        Flag("locked", "fail if anything differs from the lock file", bool, field="locked"),
        Flag(
            "offline",
            "never touch the network; fail naming the URL if something would",
            bool,
            field="offline",
        ),
        Flag(
            "bundle",
            "offline bundle (from `cannbuild bundle`) to seed the caches from",
            field="bundle",
            path=True,
        ),
        Flag(
            "force",
            "rerun this step even if it is up to date (repeatable; `validate` re-validates)",
            list,
            field="force",
        ),
        Flag(
            "with_step",
            "also run this optional recipe step (repeatable), e.g. opbase-build on 9.0; "
            "`cannbuild plan` lists the optional steps",
            list,
            field="optional_steps",
        ),
        Flag(
            "install_into_toolkit",
            "install opbase into the real toolkit instead of a workspace overlay (writes outside "
            "the workspace)",
            bool,
            field="install_into_toolkit",
        ),
        Flag(
            "sandbox",
            "run against the emulated Ascend host under <workspace>/sandbox",
            bool,
            field="sandbox",
        ),
        Flag(
            "variant",
            "sandbox hardware: A2 (8 x 910B3) or A3 (8 x 910_93)",
            field="sandbox_variant",
        ),
        Flag("cann", "sandbox CANN version: 8.3.RC2, 8.5.0 or 9.0.0", field="sandbox_cann"),
        Flag(
            "wait", "wait for another run on this workspace instead of refusing", bool, field="wait"
        ),
        Flag("json", "print machine-readable JSON instead of tables", bool),
        Flag(
            "require_device",
            "treat SKIPPED (no NPU, no torch) as a failure (exit 5), for CI on NPU hosts",
            bool,
            field="require_device",
        ),
        Flag("cases", "only these validation cases (comma-separated)"),
        Flag(
            "verbose", "stream the running step's output (it is logged either way)", bool, short="v"
        ),
        Flag("dry_run", "show what would be done and change nothing", bool),
        Flag("phases", "build, install or both (default both)"),
        Flag("out", "where to write the output", path=True),
        Flag(
            "shapes", "bench: shapes instead of the default sweep, e.g. B1N8/2S1024D64,N8S512D128"
        ),
        Flag("causal", "bench: with a causal mask (half the FLOPs)", bool),
        Flag(
            "budget", "bench: seconds the sweep may take; larger shapes are left out (default 60)"
        ),
        Flag(
            "variants",
            "bench: a TOML file of build variants (patches or compile definitions)",
            path=True,
        ),
        Flag(
            "build_variant",
            "bench: one build variant, NAME=PATCH_FILE or NAME=DEFINE=VALUE[,DEFINE=VALUE] (repeatable)",
            list,
        ),
        Flag(
            "dtype",
            "attention input dtype: fp16, bf16 or fp32 (float16, bfloat16, float32); bench takes "
            "several, comma-separated (default fp32 on the sandbox, fp16 on an NPU)",
        ),
        Flag(
            "layout",
            "attention layout: BNSD, BSND, BSH or SBH; bench takes BNSD and/or BSH, "
            "comma-separated (default BNSD)",
        ),
        Flag(
            "package",
            "validate this built .run (installed into a scratch prefix under the workspace; "
            "its sha256 goes into the report) instead of the workspace's install",
            path=True,
        ),
        Flag(
            "cannbuild_spec",
            "the pip requirement the rendered files install cannbuild with (default: this "
            "checkout's wheel, written beside them)",
        ),
        Flag("batch", "attention batch size (B)"),
        Flag("heads", "query heads (N1, the headNum of FlashAttentionScore)"),
        Flag("kv_heads", "key/value heads (N2; default: --heads)"),
        Flag("seq_len", "sequence length (S)"),
        Flag("head_dim", "head dim (D)"),
        Flag(
            "profile",
            "a profiler output to check for unfused attention (what `profile` reads)",
            path=True,
        ),
    )
}

# Task-only arguments (positional or `extra`) that name a file or folder; a positional
# named like a path flag (bundle's OUT) is one too.
PATH_ARGUMENTS = frozenset({"path", "dir"})


# The options every task that opens a build session takes, and those of the tasks that run steps.
SESSION_FLAGS = (
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
RUN_FLAGS = (*SESSION_FLAGS, "force", "with_step", "verbose", "dry_run")


def with_env(flag: Flag, text: str) -> str:
    return f"{text} [env {flag.env}]" if flag.env else text


class Option(Struct, frozen=True):
    """One option of one task: the table's `Flag` or a task-only one."""

    name: str
    kind: type  # str, bool or list
    default: Any
    help: str
    short: Optional[str] = None
    path: bool = False

    @property
    def option(self) -> str:
        return "--" + self.name.replace("_", "-")

    @property
    def takes_value(self) -> bool:
        return self.kind is not bool

    @property
    def spellings(self) -> Tuple[str, ...]:
        """How the command line may name it: the long form, then the letter if it has one."""
        return (self.option, f"-{self.short}") if self.short else (self.option,)


class TaskSpec(Struct, frozen=True):
    """A task as plain data: both front ends (the `cannbuild` script and `invoke` in a
    checkout) are made from it, so they cannot disagree on a name, letter or default."""

    name: str
    body: Callable[..., Any]
    positional: Tuple[Tuple[str, str], ...]
    options: Tuple[Option, ...]

    @property
    def doc(self) -> str:
        return inspect.getdoc(self.body) or ""

    @property
    def summary(self) -> str:
        return self.doc.split("\n\n", 1)[0].replace("\n", " ")


class TaskExit(Exception):
    """How a task ends with a code other than 0: the front end prints `message` (if any)
    and exits with `code`."""

    def __init__(self, message: Optional[str], code: int) -> None:
        super().__init__(message or "")
        self.message = message
        self.code = code


def _path_values(
    paths: Tuple[Tuple[Optional[int], str, str], ...], args: Tuple[Any, ...], kwargs: Any
) -> Iterable[Tuple[Any, str]]:
    """The given values of the path-valued arguments, each with its spelling."""
    for index, name, spelled in paths:
        if index is not None:
            value = args[index] if index < len(args) else kwargs.get(name)
        else:
            value = kwargs.get(name)
        for item in value if isinstance(value, (list, tuple)) else [value]:
            if item not in (None, "", False, True):
                yield item, spelled


def guarded(fn: F, paths: Tuple[Tuple[Optional[int], str, str], ...] = ()) -> F:
    """Turn cannbuild errors into one paragraph and their exit code.  `paths`: the
    (place, name, spelling) of each path-valued argument, checked before the task runs
    (check_path: exit 2 naming the flag, not a traceback where the kernel refuses it)."""

    @functools.wraps(fn)
    def wrapper(c: Any, *args: Any, **kwargs: Any) -> Any:
        try:
            for value, spelled in _path_values(paths, args, kwargs):
                check_path(value, spelled)
            return fn(c, *args, **kwargs)
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
    extra: Iterable[Tuple[str, Any, str]] = (),
) -> Callable[[Callable[..., Any]], TaskSpec]:
    """A task taking `positional` (name, help) arguments, the table's options `names`
    (help overridable per task) and task-only `extra` (name, default, help) options.

    The body is `fn(c, *positional, **values)`: every option arrives by name, `c.config`
    is the invoke-style config (its `cannbuild` key is read by `make_options`)."""
    help = dict(help or {})
    options: List[Option] = []
    for name in names:
        flag = FLAGS[name]
        default: Any = False if flag.kind is bool else [] if flag.kind is list else None
        text = with_env(flag, help.pop(name, flag.help))
        options.append(Option(name, flag.kind, default, text, flag.short, flag.path))
    for name, default, text in extra:
        kind = bool if isinstance(default, bool) else str
        options.append(Option(name, kind, default, text, path=name in PATH_ARGUMENTS))
    if help:
        raise ValueError(f"help given for options the task does not take: {sorted(help)}")

    places = tuple(positional)
    paths = tuple(
        (i, name, name.upper())
        for i, (name, _) in enumerate(places)
        if name in PATH_ARGUMENTS or (name in FLAGS and FLAGS[name].path)
    ) + tuple((None, o.name, o.option) for o in options if o.path)

    def decorate(fn: Callable[..., Any]) -> TaskSpec:
        return TaskSpec(fn.__name__.replace("_", "-"), guarded(fn, paths), places, tuple(options))

    return decorate


def make_options(c: Any, values: Mapping[str, Any]) -> Options:
    """`Options` from the given option values (those the user set), the environment and
    the `cannbuild` key of invoke.yaml."""
    config = c.config.get("cannbuild") or {}
    cli: Dict[str, Any] = {}
    for name, value in values.items():
        flag = FLAGS.get(name)
        if flag is None or flag.field is None or value in (None, False, [], ()):
            continue
        cli[flag.field] = value
    spelled = {f.field: f.option for f in FLAGS.values() if f.field}
    return resolve_options(cli, os.environ, config, spelled)


def lock_to_read(c: Any, values: Mapping[str, Any], options: Options) -> Options:
    """For tasks that read a lock: without --lock-file (or its env/config), ./cannbuild.lock,
    else the workspace's, where a --sandbox run writes its lock."""
    config = c.config.get("cannbuild") or {}
    given = (
        values.get("lock_file")
        or os.environ.get(ENV_PREFIX + "LOCK_FILE")
        or config.get("lock_file")
    )
    fallback = options.workspace / "cannbuild.lock"
    if given or options.lock_file.exists() or not fallback.is_file():
        return options
    return options.with_(lock_file=fallback)
