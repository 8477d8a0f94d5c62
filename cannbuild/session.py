"""A build session: the host read once, the recipe chosen, and the typed build context
the step templates render from.

`open_session` refuses what makes a build impossible (a blocking doctor row, a recipe
requirement the host lacks) before anything is written; `with_sandbox` points the
options at the emulated host (made or reused, with the lease that keeps it in place).
"""

from __future__ import annotations

import os
import shutil
from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, List, Mapping, Optional, Sequence, Tuple

from msgspec import Struct
from msgspec.structs import replace

from .errors import DoctorBlocked, UsageError
from .host.check import FAIL, PASS, WARN, Check
from .host.doctor import HostReport, read_host
from .host.toolkit import Toolkit, host_arch
from .options import Options
from .plan import selected
from .recipes import Recipe, check_requirements, select_recipe
from .sources.fetch import Fetcher
from .workspace import Workspace

if TYPE_CHECKING:
    from .sandbox import SandboxInfo


class CannFacts(Struct, frozen=True):
    """The toolkit as templates see it: `{{ cann.release }}`, `{{ cann.home }}`."""

    version: str
    release: str
    train: str
    path: Path  # the toolkit folder found (a link such as /usr/local/Ascend/cann)
    home: Path  # ASCEND_HOME_PATH after sourcing set_env.sh
    layout: str  # "cann" (>= 8.5) or "ascend-toolkit" (<= 8.3)


class BuildContext(Struct, frozen=True):
    """Every value a step template may use, typed; `as_jinja()` is the one hand-off to
    the templates (paths as strings, the recipe's [vars] on top)."""

    cann: CannFacts
    arch: str
    soc: str
    jobs: int
    ops: str
    vendor_name: str
    workspace: Path
    src: Mapping[str, Path]  # repo -> checkout
    third_party: Mapping[str, Path]  # repo -> its third_party folder
    opp: Path
    stage: Path
    overlay: Path
    opbase_install_path: Path
    vars: Tuple[Tuple[str, Any], ...] = ()

    def as_jinja(self) -> Dict[str, Any]:
        values: Dict[str, Any] = {
            "cann": {
                "version": self.cann.version,
                "release": self.cann.release,
                "train": self.cann.train,
                "path": str(self.cann.path),
                "home": str(self.cann.home),
                "layout": self.cann.layout,
            },
            "arch": self.arch,
            "soc": self.soc,
            "jobs": self.jobs,
            "ops": self.ops,
            "vendor_name": self.vendor_name,
            "workspace": str(self.workspace),
            "src": {name: str(path) for name, path in self.src.items()},
            "third_party": {name: str(path) for name, path in self.third_party.items()},
            "opp": str(self.opp),
            "stage": str(self.stage),
            "overlay": str(self.overlay),
            "opbase_install_path": str(self.opbase_install_path),
            "artifacts": {},
        }
        values.update(dict(self.vars))
        return values


class Session(Struct, frozen=True):
    options: Options
    ws: Workspace
    host: HostReport
    recipe: Recipe
    toolkit: Toolkit
    soc: str
    context: BuildContext
    sandbox: Optional[SandboxInfo] = None
    sandbox_lease: Optional[Any] = None

    @property
    def fetcher(self) -> Fetcher:
        return Fetcher(
            mirrors=self.options.mirrors, offline=self.options.offline, retries=self.options.retries
        )

    @property
    def vendor_dir(self) -> Path:
        return self.ws.opp / "vendors" / f"{self.options.vendor_name}_transformer"

    @property
    def values(self) -> Dict[str, Any]:
        """The template values (`context.as_jinja()`)."""
        return self.context.as_jinja()


class Sandboxed(Struct, frozen=True):
    """The options pointed at the sandbox, its info, and the lease that keeps another run
    from replacing it while this one uses it (hold it as long as the sandbox is used)."""

    options: Options
    info: Optional[SandboxInfo] = None
    created: bool = False
    lease: Optional[Any] = None


def with_sandbox(options: Options) -> Sandboxed:
    """For --sandbox: create (or reuse) the emulated host and point the options at it."""
    if not options.sandbox:
        return Sandboxed(options)
    assert options.sandbox_dir is not None
    from .sandbox import create_sandbox, resolve_spec  # a real host never pays for it

    spec = resolve_spec(options.sandbox_dir, options.sandbox_variant, options.sandbox_cann)
    if options.workspace in spec.dir.parents:  # the sandbox lives in the workspace: claim it first
        from .ownership import claim

        claim(options.workspace, "workspace", "--workspace")
    result = create_sandbox(spec)
    info = result.info
    user_prefixes = {prefix for prefix, _ in options.mirrors}
    mirrors = list(options.mirrors) + [
        (p, r) for p, r in info.mirrors.items() if p not in user_prefixes
    ]
    pointed = options.with_(
        sysroot=info.sysroot,
        mirrors=tuple(sorted(mirrors, key=lambda kv: -len(kv[0]))),
        sandbox_variant=info.variant,
        sandbox_cann=info.cann,
    )
    return Sandboxed(pointed, info, result.created, result.lease)


def requirement_checks(
    recipe: Recipe, host: HostReport, options: Optional[Options] = None
) -> List[Check]:
    """What the recipe needs of this host, as doctor rows: the toolkit's share/info
    packages, the files its builds read from the toolkit (for the steps that will run),
    and the tools its builds call (gawk: every ops-transformer build.sh pipes its output
    through it and exits 127 without it)."""
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
                    "recipe.toolkit",
                    FAIL,
                    f"the toolkit at {toolkit.path} lacks what recipe {recipe.name} needs in "
                    f"share/info: {listed}",
                    f"Install the CANN {toolkit.version.release} packages that provide them, or "
                    "pick another recipe with --recipe.",
                    blocking=True,
                )
            )
        elif recipe.requires:
            checks.append(
                Check(
                    "recipe.toolkit",
                    PASS,
                    f"share/info has what recipe {recipe.name} needs "
                    f"({', '.join(pkg for pkg, _ in recipe.requires)})",
                )
            )
    path = (host.build_env or {}).get("PATH") or os.environ.get("PATH", os.defpath)
    for tool in recipe.tools:
        found = shutil.which(tool.name, path=path)
        if found:
            checks.append(Check(f"recipe.tool.{tool.name}", PASS, f"{tool.name} at {found}"))
        else:
            checks.append(
                Check(
                    f"recipe.tool.{tool.name}",
                    FAIL,
                    f"{tool.name} is not on PATH; recipe {recipe.name} needs it: {tool.why}",
                    f"Install it: {tool.install}.",
                    blocking=True,
                )
            )
    return checks


def _contents_checks(recipe: Recipe, host: HostReport, options: Options) -> List[Check]:
    """The files the recipe's builds read from the toolkit (recipe [[toolkit.files]]), and
    where ops-transformer looks for opbase's headers."""
    from .host.contents import contents_check

    tk = host.toolkit
    if tk is None or tk.version is None:
        return []
    steps = [s.name for s in recipe.steps if selected(s, options.optional_steps, options.force)]
    home = Path((host.build_env or {}).get("ASCEND_HOME_PATH") or tk.path)
    checks = [contents_check(recipe.toolkit_files, steps, home, host_arch(), recipe.name)]
    if recipe.opbase == "toolkit" and recipe.opbase_headers != "pkg_inc":
        checks.append(_opbase_headers_check(recipe, home, options.install_into_toolkit))
    return checks


def _opbase_headers_check(recipe: Recipe, home: Path, into_toolkit: bool) -> Check:
    """opbase installs op_common under pkg_inc; this recipe's ops-transformer looks elsewhere."""
    where = f"{host_arch()}-linux/{recipe.opbase_headers}"
    header = home / where / "op_common/op_host/util/opbase_export.h"
    if header.is_file():
        return Check(
            "recipe.opbase_headers",
            PASS,
            f"the toolkit ships {where}/op_common, where ops-transformer looks for opbase",
        )
    detail = (
        f"opbase at recipe {recipe.name}'s ref installs op_common under pkg_inc only, its "
        f"ops-transformer looks under {where}, and the toolkit has no {where}/op_common"
    )
    if into_toolkit:
        return Check(
            "recipe.opbase_headers",
            FAIL,
            detail + ": with --install-into-toolkit the build stops at 'Could NOT find OPBASE'",
            "Drop --install-into-toolkit: cannbuild's workspace overlay exposes opbase's "
            f"headers under both pkg_inc and {recipe.opbase_headers}.",
            blocking=True,
        )
    return Check(
        "recipe.opbase_headers",
        WARN,
        detail + "; the workspace overlay exposes them under both",
        "Nothing to do with the default overlay; a toolkit install of this opbase "
        "(--install-into-toolkit) would not build.",
    )


def doctor_report(options: Options, env: Mapping[str, str], cwd: Path) -> HostReport:
    """The host's rows, and (when a recipe can be chosen) what that recipe needs of it."""
    from .cache import cache_checks

    host = read_host(options, env)
    cache_rows = cache_checks(options.cache_remote, host.build_env or env)
    host = replace(host, checks=(*host.checks, *cache_rows))
    toolkit = host.toolkit
    if toolkit is None or toolkit.version is None:
        return host
    try:
        recipe = select_recipe(options.recipe, toolkit.version.train, cwd)
    except UsageError as exc:
        row = Check("recipe", WARN, exc.message.rstrip("."), exc.hint or "Pass --recipe.")
        return replace(host, checks=(*host.checks, row))
    extra = [
        Check("recipe", PASS, f"{recipe.name} ({recipe.path.name}) for CANN {toolkit.version}")
    ]
    extra += requirement_checks(recipe, host, options)
    needed = {c.id.rsplit(".", 1)[-1] for c in extra if c.id.startswith("recipe.tool.")}
    kept = tuple(c for c in host.checks if not (c.id.startswith("tool.") and c.id[5:] in needed))
    return replace(host, checks=(*kept, *extra))


def open_session(
    options: Options,
    env: Mapping[str, str],
    cwd: Path,
    sandbox: Optional[SandboxInfo] = None,
    lease: Optional[Any] = None,
) -> Session:
    from .ownership import check_replaceable

    check_replaceable(options.workspace, "workspace", "--workspace")  # before any reading
    host = read_host(options, env)
    _refuse_blocking(host.checks)
    toolkit = host.toolkit
    assert toolkit is not None and toolkit.version is not None and host.soc is not None
    recipe = select_recipe(options.recipe, toolkit.version.train, cwd)
    _refuse_blocking(requirement_checks(recipe, host, options))
    if options.cache_remote:  # a remote no ccache can use stops the build before it starts
        from .cache import ccache_check

        _refuse_blocking([ccache_check(options.cache_remote, host.build_env or env)])
    soc = host.soc.soc
    if recipe.socs and soc not in recipe.socs:
        raise UsageError(
            f"--soc {soc} is not a SoC ops-transformer builds for in recipe {recipe.name} ({recipe.path.name}).",
            f"Use one of {', '.join(recipe.socs)}.",
        )
    ws = Workspace(options.workspace)
    context = build_context(options, ws, toolkit, soc, recipe, host)
    return Session(options, ws, host, recipe, toolkit, soc, context, sandbox, lease)


def _refuse_blocking(checks: Sequence[Check]) -> None:
    blocking = [c for c in checks if c.status == FAIL and c.blocking]
    if blocking:
        first = blocking[0]
        raise DoctorBlocked(
            f"cannot build: doctor check {first.id} failed: {first.detail}.", first.hint
        )


def build_context(
    options: Options, ws: Workspace, tk: Toolkit, soc: str, recipe: Recipe, host: HostReport
) -> BuildContext:
    assert tk.version is not None
    names = [r.name for r in recipe.repos]
    home = (host.build_env or {}).get("ASCEND_HOME_PATH", str(tk.path))
    return BuildContext(
        cann=CannFacts(
            version=tk.version.text,
            release=tk.version.release,
            train=tk.version.train,
            path=tk.path,
            home=Path(home),
            layout=tk.layout,
        ),
        arch=host_arch(),
        soc=soc,
        jobs=options.jobs,
        ops=options.ops,
        vendor_name=options.vendor_name,
        workspace=ws.root,
        src={n: ws.checkout(n) for n in names},
        third_party={n: ws.checkout(n) / "third_party" for n in names},
        opp=ws.opp,
        stage=ws.stage,
        overlay=ws.overlay,
        opbase_install_path=_opbase_install_path(options, ws, tk),
        vars=recipe.vars,
    )


def _opbase_install_path(options: Options, ws: Workspace, tk: Toolkit) -> Path:
    if not options.install_into_toolkit:
        return ws.stage
    if (tk.real_path / "share" / "info").is_dir():
        return tk.real_path
    raise UsageError(
        f"--install-into-toolkit: {tk.real_path} has no share/info folder for opbase's installer to merge into.",
        "Use the default workspace overlay (drop --install-into-toolkit).",
    )


def locking_session(options: Options, env: Mapping[str, str], cwd: Path, cann: str) -> Session:
    """A session for `cannbuild lock --cann V --soc S` where CANN V is not installed: a lock
    needs only the recipe, the version, the SoC and the remote refs (and the third-party
    archives they download); `setup --locked` checks the toolkit on the build host."""
    from .host.hardware import Hardware
    from .host.socs import normalize_soc
    from .host.versions import parse_cann_version

    check_replaceable_workspace(options)
    try:
        version = parse_cann_version(cann)
    except ValueError:
        raise UsageError(
            f"--cann {cann!r} is not a CANN version.",
            "Give the version the build hosts have, e.g. --cann 9.0.0 or --cann 8.3.RC1.",
        ) from None
    if options.soc is None:
        raise UsageError(
            "--cann without a toolkit needs --soc: the lock names the SoC it builds for.",
            "Add --soc ascend910b (Atlas A2) or --soc ascend910_93 (Atlas A3).",
        )
    recipe = select_recipe(options.recipe, version.train, cwd)
    if recipe.socs and options.soc not in recipe.socs:
        raise UsageError(
            f"--soc {options.soc} is not a SoC ops-transformer builds for in recipe "
            f"{recipe.name} ({recipe.path.name}).",
            f"Use one of {', '.join(recipe.socs)}.",
        )
    family = normalize_soc(options.soc)
    where = Path(f"/nonexistent/CANN-{version.text}-not-installed-here")
    toolkit = Toolkit(
        path=where,
        real_path=where,
        found_by="--cann (no toolkit: lock only)",
        layout="cann" if (version.major, version.minor) >= (8, 5) else "ascend-toolkit",
        arch=host_arch(),
        version=version,
        version_text=version.text,
        version_source="--cann",
        set_env=None,
    )
    hardware = Hardware("none", family, None, 0, 0, {}, None, None)
    host = HostReport(
        facts={"cann": {"version": version.text, "path": None}, "soc": family.soc},
        checks=(),
        toolkit=toolkit,
        hardware=hardware,
        soc=family,
        build_env=dict(env),
    )
    ws = Workspace(options.workspace)
    context = build_context(options, ws, toolkit, family.soc, recipe, host)
    return Session(options, ws, host, recipe, toolkit, family.soc, context)


def check_replaceable_workspace(options: Options) -> None:
    from .ownership import check_replaceable

    check_replaceable(options.workspace, "workspace", "--workspace")
