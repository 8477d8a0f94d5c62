"""One frozen `Options`, resolved once: CLI flags > environment > invoke config > the
workspace's remembered target > defaults.

Environment variables are `CANNBUILD_<NAME>`; the invoke config key is
`cannbuild` (in `invoke.yaml`).  Unknown config keys are an error with a
"did you mean" hint, so a typo never silently falls back to a default.  The
remembered target (`<workspace>/target.json`, target.py) fills only the target's
fields (the sandbox, the toolkit, the SoC, the ops release) that none of the others set.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Sequence, Tuple

from msgspec import Struct, field
from msgspec.structs import replace

from .decoded import JSONValue
from .errors import UsageError
from .host.socs import normalize_soc
from .host.versions import parse_cann_version
from .lazy import lazy_module

if TYPE_CHECKING:
    import difflib
else:  # only a mistake pays for it
    difflib = lazy_module("difflib")

ENV_PREFIX = "CANNBUILD_"
# The vendor name becomes `opp/vendors/<name>_<suffix>` (the repo's vendor_suffix) and the
# package file name (`cann-ops-math-<name>_linux-<arch>.run`), and build.sh passes it to CMake as
# VENDOR_NAME: a word, no path or shell characters.
_VENDOR_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9_]{0,63}")
DEFAULT_VENDOR = "custom"
SANDBOX_VARIANTS = ("A2", "A3")


def default_jobs() -> int:
    try:
        # The CPUs this process may run on (taskset or a cpuset may allow fewer than the machine
        # has).
        return max(len(os.sched_getaffinity(0)), 1)
    except AttributeError:  # pragma: no cover - non-Linux
        return os.cpu_count() or 1


class Options(Struct, frozen=True, kw_only=True):
    cann_path: Optional[Path] = None
    sysroot: Path = Path("/")
    workspace: Path = Path(".cannbuild")
    soc: Optional[str] = None
    jobs: int = field(default_factory=default_jobs)
    # the buildable repos to build, in ASCEND_CUSTOM_OPP_PATH order (first wins); empty: the
    # recipe's default_repos (checked against the recipe when the session opens)
    repos: Tuple[str, ...] = ()
    # operators, `op` or `repo:op`, comma-separated; empty: each repo's recipe default
    ops: str = ""
    vendor_name: str = DEFAULT_VENDOR
    recipe: Optional[str] = None
    # the operator release to build (its train picks the recipe, its refs render from it);
    # None: the toolkit's own.  Checked against host/releases.py when the session opens.
    ops_release: Optional[str] = None
    lock_file: Path = Path("cannbuild.lock")
    locked: bool = False
    offline: bool = False
    bundle: Optional[Path] = None
    force: Tuple[str, ...] = ()
    # optional recipe steps to run too (e.g. 9.0's opbase-build): --with-step
    optional_steps: Tuple[str, ...] = ()
    # sandbox only: third-party archives (or "all") whose stand-in may be taken where the
    # checkout declares the real file's hash: --accept-stand-in
    accept_stand_ins: Tuple[str, ...] = ()
    mirrors: Tuple[Tuple[str, str], ...] = ()
    install_into_toolkit: bool = False
    sandbox: bool = False
    sandbox_dir: Optional[Path] = None
    sandbox_variant: Optional[str] = None  # None: the existing sandbox's, else A2
    sandbox_cann: Optional[str] = None  # None: the existing sandbox's, else 8.5.0
    require_device: bool = False
    wait: bool = False
    retries: int = 3
    # the shared ccache storage (redis://, rediss://, http(s)://), config key cache.remote
    cache_remote: Optional[str] = None  # may hold a password
    # how each field set was given (`--repos`, `environment variable CANNBUILD_REPOS`, ...):
    # a value judged later (against the recipe) is named as the user gave it
    given_as: Tuple[Tuple[str, str], ...] = ()

    def __repr__(self) -> str:
        """Every field but cache_remote's value: a redis:// or https:// URL may hold a
        password, and a repr lands in tracebacks and debug logs."""
        shown = [
            f"{name}={'<set>' if name == 'cache_remote' else repr(getattr(self, name))}"
            for name in self.__struct_fields__
            if name != "cache_remote" or self.cache_remote is not None
        ]
        return f"Options({', '.join(shown)})"

    @property
    def mirror_map(self) -> Dict[str, str]:
        return dict(self.mirrors)

    def _values(self) -> Tuple[object, ...]:
        return tuple(getattr(self, name) for name in FIELDS)

    def __eq__(self, other: object) -> bool:
        """The same values are the same options, however they were given."""
        return isinstance(other, Options) and self._values() == other._values()

    def __hash__(self) -> int:
        return hash(self._values())

    def said(self, name: str) -> str:
        """How field `name` was given, for a message about its value (default: its flag)."""
        return dict(self.given_as).get(name) or "--" + name.replace("_", "-")

    def with_(self, **changes: object) -> Options:
        return replace(self, **changes)


# the fields a user sets (flag, variable, config key, target.json), in their order
FIELDS = tuple(name for name in Options.__struct_fields__ if name != "given_as")

# Linux's limits on a path handed to the kernel: a longer one fails deep inside a task
# (ENAMETOOLONG) instead of naming the flag.
NAME_MAX = 255
PATH_MAX = 4095


def check_path(value: object, origin: str) -> str:
    """`value` as a path string, refused (exit 2, naming `origin`: the flag, variable or
    config key) when the kernel could not take it: a NUL byte, a name over NAME_MAX
    bytes or a path over PATH_MAX bytes, as given or made absolute."""
    text = os.fspath(value) if isinstance(value, os.PathLike) else str(value)
    if "\0" in text:
        raise UsageError(f"{origin} holds a NUL byte; a path cannot.", "Pass the path without it.")
    check_utf8(text, origin)
    for form in (text, os.path.abspath(os.path.expanduser(text))):
        raw = os.fsencode(form)
        if len(raw) > PATH_MAX:
            raise UsageError(
                f"{origin} is a path of {len(raw)} bytes{'' if form == text else ' made absolute'};"
                f" a path is at most {PATH_MAX} bytes.",
                f"Pass a shorter path as {origin}.",
            )
        long_name = next((n for n in raw.split(b"/") if len(n) > NAME_MAX), None)
        if long_name is not None:
            raise UsageError(
                f"{origin} has a name of {len(long_name)} bytes "
                f"({os.fsdecode(long_name[:40])}...); a file or folder name is at most "
                f"{NAME_MAX} bytes.",
                f"Pass a path with shorter names as {origin}.",
            )
    return text


# Each field's kind, read off its annotation (a string here): a new field needs no list.
_KINDS = Options.__annotations__
PATH_FIELDS = frozenset(n for n, t in _KINDS.items() if t in ("Path", "Optional[Path]"))
_BOOL_FIELDS = frozenset(n for n, t in _KINDS.items() if t == "bool")
_INT_FIELDS = frozenset(n for n, t in _KINDS.items() if t == "int")
# a repository name of a recipe ([repos.<name>]), an operator name
_REPO_NAME = re.compile(r"[A-Za-z0-9][A-Za-z0-9._-]{0,99}")
_OP_NAME = re.compile(r"[A-Za-z0-9_]+")
# --jobs reaches build.sh as -jN (make, ninja): past the cores of any host it only starves
# the machine of memory, and 10**20 is a typo
MAX_JOBS = 4096
# values that reach a build script or a folder name as one word (an example of each): a
# newline or a tab in one is a paste gone wrong, never a SoC or an operator
_WORD_FIELDS = {
    "soc": "A2",
    "ops": "flash_attention_score",
    "vendor_name": "custom",
    "sandbox_variant": "A2",
    "sandbox_cann": "8.5.0",
    "ops_release": "9.0.1",
}


def _shown(value: object) -> str:
    """A value in an error paragraph, at most a line of it (--jobs 99999...9)."""
    text = repr(value)
    return text if len(text) <= 40 else text[:37] + "..."


# Nested config sections: `cannbuild: {cache: {remote: URL}}` sets the field cache_remote
# (env CANNBUILD_CACHE_REMOTE).
_SECTIONS = {"cache": ("remote",)}
CACHE_SCHEMES = ("redis://", "rediss://", "http://", "https://")


def _flatten(config: Mapping[str, JSONValue]) -> Dict[str, JSONValue]:
    """`cache: {remote: X}` -> `cache_remote: X`; an unknown key inside a section is an error."""
    flat: Dict[str, JSONValue] = {}
    for key, value in config.items():
        if key not in _SECTIONS:
            flat[key] = value
            continue
        if value is None:
            continue
        if not isinstance(value, Mapping):
            raise UsageError(
                f"invoke config key cannbuild.{key} is a {type(value).__name__} ({value!r}); "
                "expected a map.",
                f"Write `{key}:` then indented keys: {', '.join(_SECTIONS[key])}.",
            )
        for sub, item in value.items():
            _known_key(str(sub), _SECTIONS[key], f"{key}.")
            flat[f"{key}_{sub}"] = item
    return flat


def _known_key(key: str, known: Sequence[str], section: str = "") -> None:
    """Refuse a config key that is not a cannbuild option, with a did-you-mean."""
    if key in known:
        return
    close = difflib.get_close_matches(key, known, n=1)
    raise UsageError(
        f"invoke config key cannbuild.{section}{key} is not a cannbuild option.",
        f"Did you mean cannbuild.{section}{close[0]}?"
        if close
        else f"Known keys: {', '.join(section + k for k in known)}.",
    )


def _config_name(name: str) -> str:
    """How the invoke config spells a field: cache_remote is cannbuild.cache.remote."""
    for section, keys in _SECTIONS.items():
        for key in keys:
            if name == f"{section}_{key}":
                return f"{section}.{key}"
    return name


def _coerce(name: str, value: object, origin: str) -> Any:  # the field's type
    if value is None:
        return None
    scalar = (
        (str, os.PathLike, int, float) if name in _INT_FIELDS | _BOOL_FIELDS else (str, os.PathLike)
    )
    # A TOML or YAML config may give a list or a table where one value belongs; say so, not a
    # confusing error further on.
    lists = ("force", "optional_steps", "accept_stand_ins", "mirrors", "repos")
    numeric = isinstance(value, (int, float)) and not isinstance(value, bool)
    if name not in lists and numeric and not isinstance(value, scalar):
        # YAML and TOML read an unquoted `9.0` as a number (and `9.10` as 9.1)
        key = origin.split()[-1].removeprefix("cannbuild.")
        raise UsageError(
            f"{origin} is a number in the file (read as {value!r}), and it takes text.",
            f'Quote it as you meant it: {key}: "9.0", not {key}: 9.0 (unquoted, 9.10 reads '
            "as 9.1).",
        )
    if name not in lists and (
        (isinstance(value, bool) and name not in _BOOL_FIELDS) or not isinstance(value, scalar)
    ):
        raise UsageError(
            f"{origin} has value {value!r} ({type(value).__name__}); expected a single value.",
            f"Give {origin.split()[-1]} one word, number or path.",
        )
    if name in PATH_FIELDS and not str(value).strip():
        raise UsageError(
            f"{origin} is empty, and it names a folder or file.",
            f"Give {origin.split()[-1]} a path, or leave it out for its default.",
        )
    if name in PATH_FIELDS:
        path = os.path.abspath(os.path.expanduser(check_path(value, origin)))
        return Path(_one_spelling(path) if name == "workspace" else path)
    if name in _BOOL_FIELDS:
        if isinstance(value, bool):
            return value
        text = str(value).strip().lower()
        # The spellings YAML, TOML and shell variables use for yes and no.
        if text in ("1", "true", "yes", "on"):
            return True
        if text in ("0", "false", "no", "off", ""):
            return False
        raise UsageError(
            f"{origin} has value {value!r}, which is not a yes/no value.",
            "Use true or false (1/0 also work).",
        )
    if name in _INT_FIELDS:
        try:
            number = int(str(value).strip())
        except ValueError:
            number = -1
        if name == "jobs" and not 1 <= number <= MAX_JOBS:
            raise UsageError(
                f"{origin} has value {_shown(value)}; expected a whole number from 1 to {MAX_JOBS}.",
                f"For example {_spelled_value(origin, '8')}.",
            )
        if number < 0:
            raise UsageError(
                f"{origin} has value {_shown(value)}; expected a whole number of at least 0."
            )
        return number
    if name in ("force", "optional_steps", "accept_stand_ins"):
        if isinstance(value, str):
            # `CANNBUILD_FORCE=opbase-build,ops-transformer-build` in the environment.
            return tuple(v for v in (s.strip() for s in value.split(",")) if v)
        if not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
            raise UsageError(
                f"{origin} has value {value!r}; expected step names.",
                "Write a list of step names, e.g. force: [ops-transformer-build], or a "
                "comma-separated string.",
            )
        return tuple(value)
    if name == "repos":
        return _coerce_repos(value, origin)
    if name == "mirrors":
        return _coerce_mirrors(value, origin)
    if name in _WORD_FIELDS and any(ord(ch) < 32 or ord(ch) == 127 for ch in str(value)):
        raise UsageError(
            f"{origin} has value {value!r}, which holds a control character (a newline, a tab).",
            f"Give {origin.split()[-1]} as one word, e.g. {_WORD_FIELDS[name]}.",
        )
    if name == "ops":
        _check_ops(str(value), origin)
    if name == "soc":
        return normalize_soc(str(value), flag=origin).soc
    if name == "vendor_name" and not _VENDOR_NAME.fullmatch(str(value)):
        raise UsageError(
            f"{origin} {value!r} is not a vendor name: it becomes the folder "
            "opp/vendors/<name>_<repo suffix> and the package's name.",
            "Use letters, digits and underscores (for example mycompany); no '/', '.' or '-'.",
        )
    if name == "ops_release":
        return _check_ops_release(str(value).strip(), origin)
    if name in ("sandbox_variant", "sandbox_cann") and not isinstance(value, str):
        raise UsageError(f"{origin} has value {value!r}; expected a word such as A2 or 8.5.0.")
    if name == "cache_remote":
        return _check_cache_remote(str(value).strip(), origin)
    if name == "sandbox_variant":
        text = str(value).strip().upper()
        if text not in SANDBOX_VARIANTS:
            raise UsageError(
                f"{origin} {value!r} is not a sandbox variant.", "Use A2 (910B) or A3 (910_93)."
            )
        return text
    return str(value)


def _spelled_value(origin: str, value: str) -> str:
    """`value` as the place `origin` names takes it: `--jobs 8`, `CANNBUILD_JOBS=8`, or
    `jobs: 8` for the invoke config key `cannbuild.jobs`."""
    word = origin.split()[-1]
    if origin.startswith("environment variable "):
        return f"{word}={value}"
    if origin.startswith("invoke config "):
        return f"{word.rpartition('.')[2]}: {value} (under cannbuild: in invoke.yaml)"
    return f"{word} {value}"


def _check_ops(text: str, origin: str) -> None:
    """`op` or `repo:op` words, comma-separated (a bare op's repo: recipes/selection.py)."""
    for word in (w.strip() for w in text.split(",")):
        repo, colon, op = word.rpartition(":")
        if not _OP_NAME.fullmatch(op) or (colon and not _REPO_NAME.fullmatch(repo)):
            raise UsageError(
                f"{origin} has value {text!r}; expected operator names separated by commas, "
                f"each `op` or `repo:op` ({word!r} is neither).",
                f"For example {_spelled_value(origin, 'flash_attention_score')} or "
                f"{_spelled_value(origin, 'ops-math:segsum,ops-transformer:flash_attention_score')}.",
            )


def _coerce_repos(value: object, origin: str) -> Tuple[str, ...]:
    """Repository names: `a,b` (a flag, a variable) or a list (the config)."""
    if isinstance(value, str):
        names = [n.strip() for n in value.split(",") if n.strip()]
    elif not isinstance(value, (list, tuple)) or not all(isinstance(v, str) for v in value):
        raise UsageError(
            f"{origin} has value {value!r}; expected repository names.",
            "Write them comma-separated (ops-transformer,ops-math) or, in invoke.yaml, as a list.",
        )
    else:
        names = [str(v).strip() for v in value]
    for name in names or [str(value)]:  # `--repos ''` or `,,` names no repo: not the default
        if not _REPO_NAME.fullmatch(name):
            raise UsageError(
                f"{origin} has value {value!r}; {name!r} is not a repository name.",
                f"Name the recipe's repos, comma-separated, e.g. {origin.split()[-1]} "
                "ops-transformer,ops-math.",
            )
    return tuple(names)


def _check_ops_release(text: str, origin: str) -> Optional[str]:
    """A CANN release (`9.0.1`, `9.2.0-beta.1`); whether it goes with the toolkit is the
    session's question (host/releases.py), once the toolkit is known."""
    if not text:
        return None
    try:
        parse_cann_version(text)
    except ValueError:
        raise UsageError(
            f"{origin} {text!r} is not a CANN release.",
            f"Give an ops release as the release notes spell it, e.g. {origin.split()[-1]} 9.0.1.",
        ) from None
    return text


def _check_cache_remote(url: str, origin: str) -> Optional[str]:
    if not url:
        return None
    if not url.startswith(CACHE_SCHEMES) or any(c.isspace() or ord(c) < 32 for c in url):
        from .redact import redact  # a URL refused: the only use, so every run need not load it

        raise UsageError(
            f"{origin} {redact(url)!r} is not a ccache remote storage URL.",
            "Use redis://HOST:PORT, rediss://HOST:PORT or http(s)://HOST/PATH, with credentials "
            "in the URL as ccache reads them (redis://PASSWORD@HOST:6379, redis://USER:PASSWORD@HOST).",
        )
    return url


def _one_spelling(path: str) -> str:
    """The workspace by the real path of its parent: stamps and install records keep
    absolute paths, so one folder reached as /data/ws and as /mnt/data/ws rebuilt every
    step, and `status` by the other spelling found nothing installed.  Its own name is
    not followed: a workspace that is itself a link is refused (ownership.py)."""
    head, name = os.path.split(path)
    return os.path.join(os.path.realpath(head), name)


def _coerce_mirrors(value: object, origin: str) -> Tuple[Tuple[str, str], ...]:
    example = "https://gitcode.com/=https://git.example.com/gitcode/"
    if isinstance(value, Mapping):
        items = list(value.items())
    elif isinstance(value, str):
        items = []
        # `CANNBUILD_MIRRORS=https://gitcode.com/=https://git.example.com/gitcode/,...` form.
        for part in value.split(","):
            if not part.strip():
                continue
            if "=" not in part:
                raise UsageError(
                    f"{origin} entry {part!r} is not PREFIX=REPLACEMENT.",
                    "Example: https://gitcode.com/cann/=https://git.example.com/cann-mirror/",
                )
            key, _, repl = part.partition("=")
            items.append((key.strip(), repl.strip()))
    elif isinstance(value, (list, tuple)) and all(
        isinstance(pair, (list, tuple)) and len(pair) == 2 for pair in value
    ):
        items = [tuple(pair) for pair in value]
    else:
        raise UsageError(
            f"{origin} has value {value!r}; expected a map of URL prefix to replacement.",
            f"In invoke.yaml: mirrors: {{'https://gitcode.com/': 'https://git.example.com/gitcode/'}}; "
            f"in the environment: {example}.",
        )
    for key, repl in items:
        if not isinstance(key, str) or not isinstance(repl, str) or not key or not repl:
            raise UsageError(
                f"{origin} maps {key!r} to {repl!r}; both must be non-empty URL prefixes.",
                f"For example {example}.",
            )
        if any(ord(ch) < 32 or ord(ch) == 127 for ch in key + repl):
            raise UsageError(
                f"{origin} maps {key!r} to {repl!r}; URL prefixes hold no newlines or control "
                "characters.",
                f"For example {example}.",
            )
        if not _URL_START.match(key):
            shown = re.sub(r"^[^/@]*@", "***@", key)  # user:password@ without a scheme too
            raise UsageError(
                f"{origin} maps {shown!r}, which is no URL prefix: it is compared with the "
                "start of each repository's URL (https://gitcode.com/cann/opbase.git), so it "
                "would never match.",
                f"Begin it with the scheme, e.g. https://{shown.lstrip('/')}; for example "
                f"{example}.",
            )
    # longest prefix first, so the most specific rule wins
    return tuple(sorted(((str(k), str(v)) for k, v in items), key=lambda kv: -len(kv[0])))


# how a repository URL begins: a scheme (https://, file://, ssh://) or git's scp-like
# user@host: form
_URL_START = re.compile(r"[A-Za-z][A-Za-z0-9+.-]*://|[^/@\s]+@[^/:\s]+:")


def _checked_config(config: Mapping[str, JSONValue]) -> Dict[str, JSONValue]:
    """The `cannbuild` config key, flattened; an unknown key is an error."""
    # the names only: msgspec.structs.fields() resolves every annotation on each call
    config = _flatten(config)
    for key in config:
        _known_key(key, FIELDS)
    return config


def _given(
    name: str,
    cli: Mapping[str, object],
    env: Mapping[str, str],
    config: Mapping[str, JSONValue],
    spelled: Optional[Mapping[str, str]],
) -> Optional[Tuple[str, object]]:
    """Where the user set field `name` (flag, variable, config key: the first that does)
    and its raw value, or None."""
    env_name = ENV_PREFIX + name.upper()
    if cli.get(name) is not None and cli.get(name) != ():
        return (spelled or {}).get(name) or "--" + name.replace("_", "-"), cli[name]
    if env.get(env_name) not in (None, ""):
        return f"environment variable {env_name}", env[env_name]
    if config.get(name) is not None:
        return f"invoke config cannbuild.{_config_name(name)}", config[name]
    return None


def _config_map(config: object) -> Mapping[str, JSONValue]:
    if not isinstance(config, Mapping):
        raise UsageError(
            f"invoke config key cannbuild is a {type(config).__name__} ({config!r}); expected a "
            "map of option names to values.",
            "In invoke.yaml write `cannbuild:` then indented lines such as `  jobs: 8`.",
        )
    return config


def sources(
    cli: Mapping[str, object],
    env: Mapping[str, str],
    config: object,
    spelled: Optional[Mapping[str, str]] = None,
) -> Dict[str, Tuple[str, Any]]:
    """Each field the user set (`cli`: the flags given, then `env`, then `config`): how
    it was spelled (`--variant`, `environment variable CANNBUILD_SOC`; `spelled` holds
    the flags not named as their field) and its value, checked."""
    checked = _checked_config(_config_map(config))
    found: Dict[str, Tuple[str, Any]] = {}
    for name in FIELDS:
        where = _given(name, cli, env, checked, spelled)
        if where is not None:
            found[name] = (where[0], _coerce(name, where[1], where[0]))
    if "sysroot" in found and not found["sysroot"][1].is_dir():
        said, root = found["sysroot"]
        raise UsageError(
            f"{said} {root} is not a folder: the host it names would be read as one with "
            "nothing installed.",
            "Pass the root of a host tree (a sandbox's sysroot, a mounted image), or leave "
            "it out to read this machine.",
        )
    return found


def options_from(
    given: Mapping[str, Tuple[str, Any]],
    remembered: Optional[Mapping[str, object]] = None,
    remembered_in: str = "the workspace's target.json",
) -> Options:
    """The frozen `Options`: the `given` values (`sources`), then the workspace's
    remembered target where none is, then the defaults (a sandbox's in the workspace)."""
    values = {name: value for name, (_, value) in given.items()}
    said = {name: where for name, (where, _) in given.items()}
    for name, value in (remembered or {}).items():
        if name not in values and value is not None:
            said[name] = f"{remembered_in} key {name}"
            values[name] = _coerce(name, value, said[name])
    options = Options(**values, given_as=tuple(sorted(said.items())))
    if "workspace" not in values:
        options = replace(options, workspace=Path(os.path.abspath(options.workspace)))
    if "lock_file" not in values:
        # a sandbox lock pins stand-in commits: it stays in the workspace, not in a project
        default = options.workspace / "cannbuild.lock" if options.sandbox else options.lock_file
        options = replace(options, lock_file=Path(os.path.abspath(default)))
    if options.sandbox and options.sandbox_dir is None:
        options = replace(options, sandbox_dir=options.workspace / "sandbox")
    if options.sandbox and "sysroot" not in values:
        assert options.sandbox_dir is not None
        options = replace(options, sysroot=options.sandbox_dir / "sysroot")
    for name, origin in _DEFAULT_ORIGIN.items():  # those given were checked (check_path)
        path = getattr(options, name)
        if name not in values and path is not None:
            check_utf8(str(path), origin)
    return options


# The paths a default makes from the folder the user runs in.
_DEFAULT_ORIGIN = {
    "workspace": "the workspace (by default .cannbuild in the folder you run in)",
    "lock_file": "the lock file (by default in the workspace or the folder you run in)",
    "sandbox_dir": "the sandbox folder (by default <workspace>/sandbox)",
    "sysroot": "the sandbox's sysroot",
}


def check_utf8(text: str, origin: str) -> None:
    """A path whose bytes are not UTF-8 (a folder named in another encoding: Python keeps
    those bytes as surrogates) is refused naming it: cannbuild writes its paths into
    UTF-8 records (stamps, lock, reports, JSON), and cmake and build.sh are handed them."""
    try:
        text.encode("utf-8")
    except UnicodeEncodeError:
        shown = os.fsencode(text).decode("utf-8", "backslashreplace")
        raise UsageError(
            f"{origin} {shown} is not UTF-8 text: a name on the way is in another "
            "encoding, and cannbuild records its paths (stamps, lock, reports) as UTF-8.",
            "Use a path whose every name is UTF-8: rename that folder (convmv does it), or "
            "run in or pass another.",
        ) from None


def resolve_options(
    cli: Mapping[str, object],
    env: Mapping[str, str],
    config: object,
    spelled: Optional[Mapping[str, str]] = None,
    remembered: Optional[Mapping[str, object]] = None,
) -> Options:
    """The whole order at once (the command frame, tasks/_frame.py, keeps the sources)."""
    return options_from(sources(cli, env, config, spelled), remembered)
