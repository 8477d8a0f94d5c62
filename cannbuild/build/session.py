"""A build session: the host read once, the recipe chosen, and the typed build context
the step templates render from.

`open_session` refuses what makes a build impossible (a blocking doctor row, a recipe
requirement the host lacks) before anything is written; `with_sandbox` points the
options at the emulated host (made or reused, with the lease that keeps it in place).
"""

from __future__ import annotations

from pathlib import Path
from typing import TYPE_CHECKING, Any, Dict, Mapping, Optional, Tuple

from msgspec import Struct
from msgspec.structs import replace

from ..decoded import JSONValue, to_plain
from ..errors import UsageError
from ..host.doctor import HostReport, read_host
from ..host.hardware import Hardware
from ..host.releases import OpsChoice, choose_ops
from ..host.socs import normalize_soc
from ..host.toolkit import Toolkit, host_arch, toolkit_home
from ..host.versions import CannVersion, parse_cann_version
from ..lazy import lazy_module
from ..options import DEFAULT_VENDOR, Options
from ..ownership import check_replaceable, claim
from ..phases import PhaseSink, no_phases
from ..recipes import Recipe, select_recipe, trains_building
from ..recipes.selection import for_host, select_repos
from ..workspace import Workspace
from .compile_cache import ccache_check
from .derived import ops_in_checkouts, refuse_blocking
from .overlay import overlay_env
from .plan import idle_repos
from .requirements import requirement_checks

if TYPE_CHECKING:
    from ..sandbox import SandboxInfo, create, third_party
    from ..sandbox.create import SandboxLease
    from ..sources.fetch import Fetcher
    from ..sources.request import SourceRequest
else:  # a real host never pays for it
    create = lazy_module("cannbuild.sandbox.create")
    third_party = lazy_module("cannbuild.sandbox.third_party")


class CannFacts(Struct, frozen=True, kw_only=True):
    """The toolkit as templates see it: `{{ cann.release }}`, `{{ cann.home }}`."""

    version: str
    release: str
    train: str
    path: Path  # the toolkit folder found (a link such as /usr/local/Ascend/cann)
    home: Path  # where the build looks for it (host.toolkit.toolkit_home)
    layout: str  # "cann" (>= 8.5) or "ascend-toolkit" (<= 8.3)


class BuildContext(Struct, frozen=True, kw_only=True):
    """Every value a step template may use, typed; `as_jinja()` is the one hand-off to
    the templates (paths as strings, the recipe's [vars] on top)."""

    cann: CannFacts
    arch: str
    soc: str
    jobs: int
    ops: str  # the first selected repo's (each step renders its own repo's: plan.plan_step)
    vendor_name: str
    workspace: Path
    src: Mapping[str, Path]  # repo -> checkout
    third_party: Mapping[str, Path]  # repo -> its third_party folder
    opp: Path
    stage: Path
    overlay: Path
    opbase_install_path: Path
    vars: Tuple[Tuple[str, JSONValue], ...] = ()  # the recipe's [vars], as TOML has them
    # the operator release the sources are of (`{{ ops_release }}`, its train
    # `{{ ops_train }}`): --ops-release, else (empty here) the toolkit's own release.  Not
    # `ops.release`: `{{ ops }}` is the --ops operator list.
    ops_release: str = ""
    ops_train: str = ""
    # buildable repo -> what its steps' templates see as `{{ repo }}` (name, vendor_suffix,
    # vendor_folder, ops), in the --repos order
    repos: Mapping[str, Mapping[str, str]] = {}

    def as_jinja(self) -> Dict[str, Any]:  # the template context: keys of several kinds
        values: Dict[str, Any] = to_plain(replace(self, vars=()))  # paths as strings
        del values["vars"]
        values.update(
            ops_release=self.ops_release or self.cann.release,
            ops_train=self.ops_train or self.cann.train,
            artifacts={},
        )
        values.update(dict(self.vars))
        return values


class Session(Struct, frozen=True, kw_only=True):
    options: Options
    ws: Workspace
    host: HostReport
    recipe: Recipe
    toolkit: Toolkit
    soc: str
    context: BuildContext
    sandbox: Optional[SandboxInfo] = None
    sandbox_lease: Optional[SandboxLease] = None

    @property
    def fetcher(self) -> Fetcher:
        from ..sources.fetch import Fetcher  # doctor's session fetches nothing (nor below)

        return Fetcher(
            mirrors=self.options.mirrors, offline=self.options.offline, retries=self.options.retries
        )

    def vendor_dir_of(self, repo: str) -> Path:
        """Where `repo`'s package installs: <ws>/opp/vendors/<vendor_name>_<vendor_suffix>."""
        return (
            self.ws.opp / "vendors" / self.recipe.repo(repo).vendor_folder(self.options.vendor_name)
        )

    @property
    def vendor_dirs(self) -> Dict[str, Path]:
        """Each selected repo's vendor folder, in the --repos order (first wins)."""
        return {r.name: self.vendor_dir_of(r.name) for r in self.recipe.selected}

    def repo_for_op(self, op: str, what: str) -> str:
        """The selected repo that ships `op` (bench, profile and diagnose judge
        FlashAttention: they ask for the repo that builds it), else a usage error."""
        found = self.recipe.repo_for_op(op)
        if found is not None:
            return found.name
        builders = [name for name, ops in self.recipe.unselected_ops if op in ops]
        if builders:
            added = ",".join((*self.recipe.order, builders[0]))
            hint = (
                f"Add {' or '.join(builders)}, which builds it, to --repos (e.g. --repos {added})."
            )
        elif self.recipe.unselected:
            hint = (
                f"Add the repo that builds it to --repos (recipe {self.recipe.name} also has: "
                f"{', '.join(self.recipe.unselected)})."
            )
        else:
            hint = f"Recipe {self.recipe.name} builds no {op}."
        raise UsageError(
            f"{what} needs {op}, which none of the repos this run builds "
            f"({', '.join(self.recipe.order) or 'none'}) lists among its ops.",
            hint,
        )

    @property
    def values(self) -> Dict[str, Any]:
        """The template values (`context.as_jinja()`)."""
        return self.context.as_jinja()

    def overlaid_env(self, base: Mapping[str, str]) -> Optional[Dict[str, str]]:
        """`base` pointed into the workspace's overlay, for recipes that put opbase into the
        toolkit (<= 8.5) and install it there unless --install-into-toolkit; else None."""
        if self.recipe.opbase != "toolkit" or self.options.install_into_toolkit:
            return None
        tk = self.toolkit
        return overlay_env(base, [self.context.cann.home, tk.path, tk.real_path], self.ws.overlay)

    def source_request(self) -> SourceRequest:
        """What the sources read of this session, and nothing else."""
        from ..sources.request import SourceRequest

        options = self.options
        return SourceRequest(
            recipe=self.recipe,
            values=self.values,
            toolkit_version=self.toolkit.version_text or "",
            soc=self.soc,
            sandbox=self.sandbox is not None,
            ops_release=self.context.ops_release or self.context.cann.release,
            ws=self.ws,
            fetcher=self.fetcher,
            lock_file=options.lock_file,
            locked=options.locked,
            offline=options.offline,
            bundle=options.bundle,
            idle=idle_repos(self.recipe, options.optional_steps, options.force),
            stand_ins=tuple(self.sandbox.mirrors.values()) if self.sandbox else (),
            build_repos=() if self.recipe.order == self.recipe.default_repos else self.recipe.order,
            with_steps=tuple(
                s.name for s in self.recipe.steps if s.optional and s.name in options.optional_steps
            ),
            vendor_name="" if options.vendor_name == DEFAULT_VENDOR else options.vendor_name,
            accept_stand_ins=options.accept_stand_ins if self.sandbox else (),
            # read only for an archive accepted by name (sources/ready.py): 8 archives made
            stand_in_sha256=stand_in_sha256() if self.sandbox and options.accept_stand_ins else {},
        )


def stand_in_sha256() -> Dict[str, str]:
    """The sha256 of each third-party stand-in the sandbox mirror serves, by upstream URL."""
    return {a.url: a.sha256 for a in third_party.standin_archives().values()}


class Sandboxed(Struct, frozen=True, kw_only=True):
    """The options pointed at the sandbox, its info, and the lease that keeps another run
    from replacing it while this one uses it (hold it as long as the sandbox is used)."""

    options: Options
    info: Optional[SandboxInfo] = None
    created: bool = False
    lease: Optional[SandboxLease] = None


def with_sandbox(options: Options, phases: PhaseSink = no_phases) -> Sandboxed:
    """For --sandbox: create (or reuse) the emulated host and point the options at it;
    `phases` hears the phases of a creation."""
    if not options.sandbox:
        return Sandboxed(options=options)
    assert options.sandbox_dir is not None
    spec = create.resolve_spec(options.sandbox_dir, options.sandbox_variant, options.sandbox_cann)
    if options.workspace in spec.dir.parents:  # the sandbox lives in the workspace: claim it first
        claim(options.workspace, "workspace", "--workspace")
    result = create.create_sandbox(spec, phases)
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
    return Sandboxed(options=pointed, info=info, created=result.created, lease=result.lease)


def open_session(
    options: Options,
    env: Mapping[str, str],
    cwd: Path,
    sandbox: Optional[SandboxInfo] = None,
    lease: Optional[SandboxLease] = None,
) -> Session:
    check_replaceable(options.workspace, "workspace", "--workspace")  # before any reading
    if options.accept_stand_ins and sandbox is None and not options.sandbox:
        raise UsageError(
            f"--accept-stand-in {','.join(options.accept_stand_ins)} names archives of the "
            "sandbox's stand-ins, and this run is not on the sandbox.",
            "Drop it: a real host fetches the real files (through cannbuild.mirrors or a bundle).",
        )
    host = read_host(options, env)
    refuse_blocking(host.checks)
    toolkit = host.toolkit
    assert toolkit is not None and toolkit.version is not None and host.soc is not None
    ops, recipe = _recipe_for(options, toolkit.version, cwd, sandbox is not None or options.sandbox)
    refuse_blocking(requirement_checks(recipe, host, options))
    if options.cache_remote:  # a remote no ccache can use stops the build before it starts
        refuse_blocking([ccache_check(options.cache_remote, host.build_env or env)])
    soc = host.soc.soc
    if recipe.socs and soc not in recipe.socs:
        raise _not_a_soc(soc, recipe, options.said("soc") if options.soc else "this host's SoC")
    ws = Workspace(root=options.workspace)
    context = build_context(options, ws, toolkit, soc, recipe, host, ops)
    if sandbox is not None:
        from ..sandbox.releases import check_refs  # the stand-ins' data, on the sandbox only

        served = [r.name for r in recipe.repos if _from_sandbox(r.url, options, sandbox)]
        check_refs(recipe, context.as_jinja(), served, cwd)
    return Session(
        options=options,
        ws=ws,
        host=host,
        recipe=recipe,
        toolkit=toolkit,
        soc=soc,
        context=context,
        sandbox=sandbox,
        sandbox_lease=lease,
    )


def _from_sandbox(url: str, options: Options, sandbox: SandboxInfo) -> bool:
    """The URL is fetched from the sandbox's stand-ins: its longest mirror rule is the
    sandbox's (a user's own rule for it sends it elsewhere)."""
    rules = options.mirror_map
    prefix = max((p for p in rules if url.startswith(p)), key=len, default="")
    return bool(prefix) and sandbox.mirrors.get(prefix) == rules[prefix]


def _recipe_for(
    options: Options, version: CannVersion, cwd: Path, sandbox: bool
) -> Tuple[OpsChoice, Recipe]:
    """The ops release and the recipe of its train, with the repos this run selects."""
    ops = choose_ops(options.ops_release, version)
    chosen = select_recipe(options.recipe, ops.train, cwd, _ops_origin(ops, options))
    repos = select_repos(
        chosen,
        options.repos,
        options.said("repos"),
        elsewhere=lambda name: _built_elsewhere(name, chosen, options, cwd),
    )
    return ops, for_host(repos, sandbox=sandbox)


def _not_a_soc(soc: str, recipe: Recipe, said: str) -> UsageError:
    """`said`: how the SoC was given (a flag, a variable, target.json) or found."""
    return UsageError(
        f"{said} {soc} is not a SoC recipe {recipe.name} ({recipe.path.name}) builds "
        f"{', '.join(recipe.order) or 'its repos'} for.",
        f"Use one of {', '.join(recipe.socs)}.",
    )


def _built_elsewhere(name: str, recipe: Recipe, options: Options, cwd: Path) -> str:
    """Where a repository this train's recipe lacks is built: the trains whose recipe has
    it, and on the sandbox the line that makes one of them (in another workspace: a
    workspace's sandbox keeps the CANN it was made with)."""
    trains = trains_building(name, cwd)
    if not trains:
        return ""
    said = (
        f"Recipe {recipe.name} ({recipe.path.name}, the train of this CANN) does not build "
        f"{name}; the recipes of {', '.join(trains)} do."
    )
    if not options.sandbox:
        return said + " Build it with a toolkit of one of those trains (--cann-path, or --cann)."
    from ..sandbox.releases import standins  # the sandbox's CANN versions

    known = standins(cwd).releases
    cann = max((v for v in known if v.startswith(trains[-1] + ".")), default=trains[-1])
    repos = ",".join(options.repos)
    return (
        f"{said} A workspace's sandbox keeps the CANN it was made with (this one's is "
        f"{options.sandbox_cann}), so build it in another workspace: cannbuild setup --sandbox "
        f"--cann {cann} --repos {repos} -w {options.workspace}-{trains[-1]}"
    )


def _ops_origin(ops: OpsChoice, options: Options) -> Optional[str]:
    """How a "no recipe" error names the train's source when --ops-release chose it."""
    return f"{options.said('ops_release')} {ops.release}" if ops.given else None


def build_context(
    options: Options,
    ws: Workspace,
    tk: Toolkit,
    soc: str,
    recipe: Recipe,
    host: HostReport,
    ops: Optional[OpsChoice] = None,
) -> BuildContext:
    assert tk.version is not None
    ops = ops or choose_ops(None, tk.version)
    names = [r.name for r in recipe.repos]
    repos = repo_context(
        recipe, options.vendor_name, ops_in_checkouts(recipe, options.ops, ws, options.said)
    )
    first = next(iter(repos.values()), None)
    return BuildContext(
        cann=CannFacts(
            version=tk.version.text,
            release=tk.version.release,
            train=tk.version.train,
            path=tk.path,
            home=toolkit_home(tk, host.build_env),
            layout=tk.layout,
        ),
        arch=host_arch(),
        soc=soc,
        jobs=options.jobs,
        ops=first["ops"] if first else options.ops,
        vendor_name=options.vendor_name,
        workspace=ws.root,
        src={n: ws.checkout(n) for n in names},
        third_party={n: ws.checkout(n) / "third_party" for n in names},
        opp=ws.opp,
        stage=ws.stage,
        overlay=ws.overlay,
        opbase_install_path=_opbase_install_path(options, ws, tk),
        vars=recipe.vars,
        ops_release=ops.release,
        ops_train=ops.train,
        repos=repos,
    )


def repo_context(
    recipe: Recipe, vendor: str, ops: Mapping[str, Tuple[str, ...]]
) -> Dict[str, Dict[str, str]]:
    """Each selected repo as its steps' templates see `{{ repo }}` (name, vendor_suffix,
    vendor_folder, ops), in the --repos order: BuildContext.repos."""
    return {
        r.name: {
            "name": r.name,
            "vendor_suffix": r.vendor_suffix or "",
            "vendor_folder": r.vendor_folder(vendor),
            "ops": ",".join(ops[r.name]),
        }
        for r in recipe.selected
    }


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
    ops, recipe = _recipe_for(options, version, cwd, options.sandbox)
    if recipe.socs and options.soc not in recipe.socs:
        raise _not_a_soc(options.soc, recipe, options.said("soc"))
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
    hardware = Hardware(
        source="none",
        family=family,
        chip=None,
        npu_count=0,
        chip_count=0,
        pci_counts={},
        npu_smi=None,
        npu_smi_version=None,
    )
    host = HostReport(
        facts={"cann": {"version": version.text, "path": None}, "soc": family.soc},
        checks=(),
        toolkit=toolkit,
        hardware=hardware,
        soc=family,
        build_env=dict(env),
    )
    ws = Workspace(root=options.workspace)
    context = build_context(options, ws, toolkit, family.soc, recipe, host, ops)
    return Session(
        options=options,
        ws=ws,
        host=host,
        recipe=recipe,
        toolkit=toolkit,
        soc=family.soc,
        context=context,
    )


def check_replaceable_workspace(options: Options) -> None:
    check_replaceable(options.workspace, "workspace", "--workspace")
