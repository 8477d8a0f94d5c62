"""Reproducible container builds: a build context rendered from the lock.

The Dockerfile's builder stage installs cannbuild and runs the same pinned,
incremental, validated pipeline (`cannbuild setup --locked`), with BuildKit cache
mounts for ccache and the source caches; the export stage holds only the .run
packages and the report, so `docker buildx build --output type=local` yields the
artifacts.  Mirror credentials go through `--secret`, never build args.  The
same lock renders byte-identical files (with --bundle, the wheels for an
air-gapped build are whatever the index serves that day).
"""

from __future__ import annotations

import hashlib
import os
import re
import shlex
import shutil
import sys
import tempfile
from importlib import metadata
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Set, Tuple

from msgspec import Struct
from msgspec.structs import replace
from packaging.markers import default_environment
from packaging.requirements import Requirement

from .. import __version__
from ..bounded import DATA_FILE, LOCK, RECIPE, read_text
from ..errors import DryRun, StepFailed, UsageError
from ..host.compat import image_oses
from ..host.published import releases
from ..host.socs import families
from ..host.versions import parse_cann_version
from ..options import Options
from ..ownership import MARKER, check_replaceable, check_writable, mark
from ..proc import run
from ..recipes import recipe_dirs
from ..recipes.model import USER_RECIPE_DIR
from ..render.grammars import check_cann, check_image, check_requirement, one_line
from ..render.templates import file_env
from ..resources import data_dir
from ..self_install import install_requirement, installed_wheel, source_files
from ..signals import deferred
from ..sources.lock import Lock, read_lock, write_lock
from .engine import CACHE_SECRET_ID, SECRET_ID, build_command, platform_of
from .engine import build as engine_build

IMAGE_REPO = "quay.io/ascend/cann"
CHIPS = {"A2": "910b", "A3": "a3"}  # the variant's word in the image tag
PYTHONS = ("3.10", "3.11", "3.12")
DEFAULT_PYTHON = "3.11"  # where no image of the release is known
SANDBOX_BASE = "python:3.11-slim-bookworm"
SANDBOX_PYTHON = "3.11"  # SANDBOX_BASE's
# What build.sh calls besides the compilers (gawk: ops-transformer pipes its log through it),
# and ccache for the cache mount.
BUILD_TOOLS = ("ccache", "dos2unix", "gawk", "patch", "pigz")
SANDBOX_TOOLS = ("cmake", "g++", "git", "make")
BUNDLE_NAME = "cannbuild-bundle.tar"  # a fixed name: the user's file name never reaches COPY
PLATFORM_FILE = "platform"  # the context's one line naming the BuildKit platform
WHEEL_DIR = "cannbuild-wheel"  # the wheel an installed cannbuild came from (a CI job's)
DIGEST = re.compile(r"sha256:[0-9a-f]{64}")
CONTEXT_KIND = "container-context"


class ContainerSpec(Struct, frozen=True, kw_only=True):
    variant: str = ""  # empty: the variant of the lock's SoC (make_container fills it in)
    cann: str = ""  # empty: the lock's toolkit version (make_container fills it in)
    os: str = "ubuntu22.04"
    python: str = ""  # empty: the Python of this CANN's published images (seen_python)
    base: Optional[str] = None
    sandbox: bool = False
    bundle: Optional[Path] = None
    base_digest: Optional[str] = None
    cannbuild_spec: Optional[str] = None  # how the image installs cannbuild (not from a checkout)


def seen_tags() -> Set[str]:
    """The image tags seen published (Ascend/cann-container-image, vllm-ascend Dockerfiles;
    each release's `images` in recipes/facts/*.toml); others follow the same grammar but
    are not known to exist."""
    return {tag for rel in releases().values() for tag in rel.images}


def seen_python(cann: str, variant: str, os_name: str) -> str:
    """The Python of this CANN's published image (this variant and OS first, then any of
    the release's: one release's images share it, 9.1.0's py3.12); else 3.11."""
    prefix = f"{cann.lower()}-"
    tags = sorted(t for t in seen_tags() if t.startswith(prefix))
    exact = f"{prefix}{CHIPS.get(variant, '')}-{os_name}-py"
    for tag in [t for t in tags if t.startswith(exact)] + tags:
        return tag.rsplit("-py", 1)[1]
    return DEFAULT_PYTHON


def _soc(variant: str) -> str:
    """The `--soc` of a variant's family (recipes/facts/hosts.toml)."""
    return next(f.soc for f in families() if f.variant == variant)


def _variant(soc: str) -> str:
    """The image variant of a lock's SoC; A2 where no image is made for it (the lock is
    then refused naming both)."""
    return next((f.variant for f in families() if f.soc == soc and f.variant in CHIPS), "A2")


def image_tag(cann: str, variant: str, os_name: str, python: str) -> str:
    """`<version lowercased>-<910b|a3>-<os>-py3.x`, e.g. 8.5.0-a3-ubuntu22.04-py3.11."""
    return f"{cann.lower()}-{CHIPS[variant]}-{os_name}-py{python}"


def cann_image(cann: str, variant: str, os_name: str, python: str) -> str:
    return f"{IMAGE_REPO}:{image_tag(cann, variant, os_name, python)}"


def with_python(spec: ContainerSpec) -> ContainerSpec:
    """The spec with its Python: --python, else the published image's (seen_python), or
    the sandbox base's whatever CANN its lock names."""
    if spec.python:
        return spec
    python = SANDBOX_PYTHON if spec.sandbox else seen_python(spec.cann, spec.variant, spec.os)
    return replace(spec, python=python)


def check_spec(spec: ContainerSpec) -> None:
    """Every flag value that reaches the Dockerfile, each against its grammar, before the
    lock is read or anything is written: a bad one is exit 2 naming the flag."""
    if spec.variant not in CHIPS:
        raise UsageError(
            f"--variant {spec.variant!r} has no CANN image.", "Use A2 (910B) or A3 (910_93)."
        )
    oses = [f"{o}{v}" for o, v in image_oses()]  # recipes/facts/hosts.toml
    if spec.os not in oses:
        raise UsageError(
            f"--os {spec.os!r} is not an OS the CANN images come in.",
            f"Use one of {', '.join(oses)}.",
        )
    if spec.python and spec.python not in PYTHONS:
        raise UsageError(
            f"--python {spec.python!r} is not a Python the CANN images ship.",
            f"Use one of {', '.join(PYTHONS)}.",
        )
    if spec.cann:
        check_cann(spec.cann)
    if spec.base is not None:
        check_image(spec.base)
    if spec.base_digest is not None and not DIGEST.fullmatch(spec.base_digest):
        raise UsageError(
            f"--base-digest {spec.base_digest!r} is not a sha256 digest.",
            "Pass sha256: and 64 hex digits, as `docker buildx imagetools inspect IMAGE` prints.",
        )
    if spec.cannbuild_spec is not None:
        check_requirement(spec.cannbuild_spec)
    if spec.bundle is not None and not spec.bundle.is_file():
        raise UsageError(
            f"--bundle {spec.bundle} is not a file.",
            "Make one with `cannbuild bundle --lock-file ... OUT.tar` and pass its path.",
        )
    # The CANN images install git wget gcc g++ make cmake ... (Ascend/cann-container-image,
    # cann-environment.md 5) but none of BUILD_TOOLS, and an air-gapped build cannot.
    if spec.bundle is not None and not spec.base and not spec.sandbox:
        raise UsageError(
            f"--bundle builds air-gapped, with the base image's own tools, and the CANN image "
            f"{IMAGE_REPO} has none of {', '.join(BUILD_TOOLS)}, which the builds call.",
            "Pass --base with an image that has them (one made FROM the CANN image with "
            f"`apt-get install {' '.join(BUILD_TOOLS)}`, pushed where the air-gapped builder "
            "pulls from).",
        )


def base_name(spec: ContainerSpec) -> str:
    """The base image by tag: --base, the sandbox's Debian Python, or the CANN image."""
    if spec.base:
        return spec.base.split("@")[0]
    if spec.sandbox:
        return SANDBOX_BASE
    spec = with_python(spec)
    return cann_image(spec.cann, spec.variant, spec.os, spec.python)


def base_reference(spec: ContainerSpec, lock: Lock) -> Tuple[str, str]:
    """(FROM reference, note): pinned by --base-digest or the lock's digest for this base."""
    spec = with_python(spec)
    base = base_name(spec)
    digest = spec.base_digest
    if digest is None and spec.base and "@" in spec.base:
        digest = spec.base.split("@", 1)[1]
    if digest is None and lock.container.get("base") == base:
        digest = lock.container.get("base_digest")
    notes = []
    if (
        not spec.base
        and not spec.sandbox
        and image_tag(spec.cann, spec.variant, spec.os, spec.python) not in seen_tags()
    ):
        notes.append(
            f"{base} follows the CANN image tag grammar but is not a tag cannbuild has seen "
            "published"
        )
    if digest is None:  # a tag moves: the build is reproducible once the lock pins it
        notes.append(
            f"FROM {base} is not pinned by digest: `cannbuild container --build` pins what it "
            "built from in the lock, or pass --base-digest; commit the lock"
        )
    return (f"{base}@{digest}" if digest else base), "; ".join(notes)


def pinned(lock: Lock, base: str, digest: str) -> Lock:
    """The lock with `base` pinned to `digest` (what a build used, or --base-digest)."""
    return replace(lock, container={"base": base.split("@")[0], "base_digest": digest})


def check_lock(spec: ContainerSpec, lock: Lock, lock_file: Path) -> None:
    want_soc = _soc(spec.variant)
    if lock.sandbox and not spec.sandbox:
        raise UsageError(
            f"{lock_file} was made on cannbuild's emulated Ascend host (--sandbox): it is for "
            "the emulated toolkit and NPUs, and its sources are the sandbox's (the stand-ins, "
            "or what mirror rules served, with any stand-in archive it accepted), so no real "
            "image is built from it.",
            f"Make a lock of the real sources (no CANN needed: cannbuild lock --cann {spec.cann} "
            f"--soc {want_soc} --lock-file ...), or pass --sandbox for an image of the emulated "
            "host.",
        )
    if spec.sandbox and not lock.sandbox:
        raise UsageError(
            f"--sandbox renders an image of the emulated host, but {lock_file} pins real "
            "upstream commits, which the emulated host does not serve.",
            "Lock on the sandbox first (cannbuild lock --sandbox --variant ... --cann ...) and "
            "render from that lock (it is written in the workspace).",
        )
    if spec.sandbox:
        if lock.soc != want_soc:
            raise UsageError(
                f"{lock_file} was made on an emulated host with {lock.soc} NPUs; --variant "
                f"{spec.variant} would render an emulated host with {want_soc}.",
                "Drop --variant (the lock's SoC decides), or lock on that sandbox first.",
            )
        # the emulated host's image is SANDBOX_BASE with the lock's emulated CANN, whatever
        # --cann or --python would say of a CANN image
        for flag, given, own in (
            ("--cann", spec.cann, lock.toolkit_version),
            ("--python", spec.python, SANDBOX_PYTHON),
        ):
            if given and given.lower() != own.lower():
                raise UsageError(
                    f"{flag} {given}: --sandbox renders the emulated host, {SANDBOX_BASE} "
                    f"with the emulated CANN {lock.toolkit_version} of {lock_file} "
                    f"(Python {SANDBOX_PYTHON}).",
                    f"Drop {flag}, or lock on a sandbox of that CANN first (cannbuild lock "
                    "--sandbox --cann ...).",
                )
        return
    problems = []
    if lock.toolkit_version.lower() != spec.cann.lower():
        problems.append(f"it pins CANN {lock.toolkit_version}, the image has {spec.cann}")
    if lock.soc != want_soc:
        problems.append(f"it builds for {lock.soc}, --variant {spec.variant} needs {want_soc}")
    if problems:
        raise UsageError(
            f"{lock_file} does not fit this container: {'; '.join(problems)}.",
            f"Make a lock for it (no CANN needed: cannbuild lock --cann {spec.cann} --soc "
            f"{want_soc} --lock-file ...) and pass it with --lock-file.",
        )


def offline_wheels(
    root: Optional[Path], arch: str, python: str, into: Path, spec: Optional[str] = None
) -> None:
    """cannbuild and its dependencies as wheels for the image's Python and architecture,
    so an air-gapped build installs them with --no-index."""
    into.mkdir(parents=True, exist_ok=True)
    pip = [sys.executable, "-m", "pip", "--disable-pip-version-check"]
    wanted = _requirements(python, arch)
    assert root is not None or spec is not None
    steps = [
        [*pip, "download", "--quiet", "--dest", str(into), "--only-binary=:all:",
         "--python-version", python, "--platform", f"manylinux2014_{arch}", *wanted],
        [*pip, "wheel", "--quiet", "--no-deps", "--wheel-dir", str(into), str(root or spec)],
    ]  # fmt: skip
    for argv in steps:
        proc = run(argv)
        if proc.returncode != 0:
            tail = " ".join(proc.stderr.decode("utf-8", "replace").strip().splitlines()[-2:])
            raise UsageError(
                f"could not collect the wheels an air-gapped image needs ({tail}).",
                "Render the context with --bundle on a machine that reaches the package index.",
            )


def _requirements(python: str, arch: str) -> List[str]:
    """cannbuild's dependencies as the image's Python sees them (pip would judge the
    markers by the Python rendering the context)."""
    env: Dict[str, Any] = {
        **default_environment(),
        "python_version": python,
        "python_full_version": f"{python}.0",
        "platform_machine": arch,
        "sys_platform": "linux",
        "platform_system": "Linux",
        "extra": "",
    }
    try:
        declared = metadata.requires("cannbuild") or []
    except metadata.PackageNotFoundError:
        declared = []
    wanted = []
    for text in declared:
        req = Requirement(text)
        if req.marker is None or req.marker.evaluate(env):
            wanted.append(f"{req.name}{req.specifier}")
    return wanted


def lock_recipe(lock: Lock, cwd: Path) -> Optional[Path]:
    """The recipe file, the project's cannbuild-recipes/ first then the shipped ones (as
    `lock` looked), whose text the lock was made with; None for a lock from before digests
    were kept.  Refused where there is none: the image's `setup --locked` could not find it
    (a lock made with --recipe FILE from elsewhere)."""
    if not lock.recipe_digest:
        return None
    for path in (p for folder in recipe_dirs(cwd) for p in sorted(folder.glob("*.toml"))):
        if hashlib.sha256(read_text(path, RECIPE).encode()).hexdigest() == lock.recipe_digest:
            return path
    raise UsageError(
        f"the lock was made with recipe {lock.recipe}, which is neither one cannbuild ships "
        f"nor one in {cwd / USER_RECIPE_DIR}: the image's `setup --locked` could not find "
        "it.",
        f"Copy that recipe file to {USER_RECIPE_DIR}/<train>.toml here (the image takes that "
        "folder) and render again.",
    )


def _recipe_args(lock: Lock, recipe: Optional[Path]) -> List[str]:
    """`--recipe TRAIN` where the lock was made with another train's recipe than the one
    the image's toolkit (or --ops-release) picks, which `setup --locked` would refuse as
    drift."""
    picked = parse_cann_version(lock.ops_release or lock.toolkit_version).train
    return [] if recipe is None or recipe.stem == picked else ["--recipe", recipe.stem]


def render_context(
    spec: ContainerSpec, lock: Lock, lock_file: Path, out: Path, cache_remote: bool = False
) -> Dict[str, Any]:
    """Write the build context into `out` (all or nothing); returns what was rendered."""
    spec = with_python(spec)
    check_spec(spec)
    check_lock(spec, lock, lock_file)
    base, note = base_reference(spec, lock)
    revision = ",".join(f"{r.name}@{r.commit[:12]}" for r in lock.repos)
    source = next(
        (r.url for r in lock.repos if r.name == "ops-transformer"),
        lock.repos[0].url if lock.repos else "",
    )
    templates = file_env(data_dir("templates") / "container")
    root = data_dir("templates").parent
    # --cannbuild-spec, where given, even in a checkout; else the checkout's own sources;
    # an installed cannbuild: the wheel it was installed from (a CI job's committed
    # wheel), else the VCS requirement pip recorded, else nothing
    sources = source_files(root) if spec.cannbuild_spec is None else None
    wheel = installed_wheel() if sources is None and spec.cannbuild_spec is None else None
    install = (
        install_requirement(spec.cannbuild_spec) if sources is None and wheel is None else None
    )
    check_image(base, f"the base image (--base, --base-digest or {lock_file} [container])")
    for label, value in (("source", source), ("revision", revision)):
        if not one_line(value) or '"' in value or "\\" in value:
            raise UsageError(
                f"{lock_file}: the image {label} {value!r} (its repos' urls and names) cannot "
                "stand in a Dockerfile LABEL: it holds a quote, a backslash or a newline.",
                "Restore the lock from version control, or delete it and run `cannbuild lock`.",
            )
    recipe = lock_recipe(lock, Path.cwd())
    # a project's recipe: the image has only the shipped ones, and its `setup --locked`
    # would find no recipe for a new train or refuse a changed one as drift
    project = Path.cwd() / USER_RECIPE_DIR
    recipes = project if recipe is not None and recipe.parent == project else None
    soc = lock.soc if spec.sandbox else _soc(spec.variant)
    offline = spec.bundle is not None
    extra: List[str] = []
    if spec.sandbox:
        extra += ["--sandbox", "--variant", spec.variant, "--cann", lock.toolkit_version]
    if lock.other_ops_release:  # `setup --locked` renders the refs from the same release
        extra += ["--ops-release", lock.ops_release]
    if lock.build_repos:  # and builds the repos the lock was made for, in that order
        extra += ["--repos", ",".join(lock.build_repos)]
    if lock.vendor_name:  # and names its packages as the lock was made for
        extra += ["--vendor-name", lock.vendor_name]
    for step in lock.with_steps:  # with the optional steps it was made with
        extra += ["--with-step", step]
    extra += _recipe_args(lock, recipe)
    if offline:
        extra += ["--offline", "--bundle", f"/build/{BUNDLE_NAME}"]
    # the lock COPY'd beside the workspace (a --sandbox run would look in the workspace)
    extra += ["--lock-file", "cannbuild.lock"]
    values = {
        "version": __version__,
        "base": base,
        "epoch": lock.source_date_epoch,
        "source": source,
        "revision": revision,
        "cann": lock.toolkit_version,
        "soc": soc,
        "recipe": lock.recipe,
        "sandbox": spec.sandbox,
        # also: an air-gapped Dockerfile has no `# syntax=` line, whose frontend image
        # BuildKit would pull from docker.io (the builder's own frontend reads RUN --mount)
        "bundle": BUNDLE_NAME if offline else None,
        "from_checkout": sources is not None,
        "wheel": wheel.name if wheel else None,
        # an air-gapped build cannot reach apt/yum: it uses the tools the base image has
        "install_tools": spec.sandbox or not offline,
        "package_manager": "yum"
        if spec.os.startswith("openeuler") and not spec.sandbox
        else "apt-get",
        "packages": sorted(BUILD_TOOLS + (SANDBOX_TOOLS if spec.sandbox else ())),
        "setup_args": " ".join(shlex.quote(a) for a in ["--locked", "--soc", soc, *extra]),
        "secret_id": SECRET_ID,
        "cache_secret_id": CACHE_SECRET_ID,
        "cannbuild_spec": shlex.quote(install) if install else "",
        "recipes": USER_RECIPE_DIR if recipes else None,
    }
    check_replaceable(out, CONTEXT_KIND, "--out")
    out.parent.mkdir(parents=True, exist_ok=True)
    staging = Path(tempfile.mkdtemp(prefix=f".{out.name}.", dir=str(out.parent)))
    try:
        files = {
            "Dockerfile": templates.get_template("Dockerfile.j2").render(**values),
            ".dockerignore": templates.get_template("dockerignore.j2").render(**values),
            ".hadolint.yaml": read_text(
                data_dir("templates") / "container" / "hadolint.yaml", DATA_FILE
            ),
            # the lock's arch as BuildKit names it, for a CI job to pass as --platform (a lock
            # made on a Kunpeng host builds aarch64 packages); .dockerignore keeps it out
            PLATFORM_FILE: platform_of(lock.arch) + "\n",
            "cannbuild.lock": read_text(lock_file, LOCK),
        }
        for name, text in files.items():
            (staging / name).write_text(text, encoding="utf-8")
        for path in sources or []:
            target = staging / "cannbuild-src" / path.relative_to(root)
            target.parent.mkdir(parents=True, exist_ok=True)
            shutil.copy(path, target)  # keeps the executable bits
            os.utime(target, (lock.source_date_epoch, lock.source_date_epoch))
        if wheel is not None:
            copied = staging / WHEEL_DIR / wheel.name
            copied.parent.mkdir()
            shutil.copyfile(wheel, copied)
            os.utime(copied, (lock.source_date_epoch, lock.source_date_epoch))
        if recipes is not None:
            shutil.copytree(recipes, staging / USER_RECIPE_DIR, symlinks=True)
        if spec.bundle is not None:
            shutil.copyfile(spec.bundle, staging / BUNDLE_NAME)
            offline_wheels(
                root if sources is not None else None,
                lock.arch,
                spec.python,
                staging / "wheels",
                install or (str(wheel) if wheel else None),
            )
        # the image's workspace, marked as cannbuild's before the cache mounts land in it
        workspace = staging / "workspace"
        workspace.mkdir()
        mark(workspace, "workspace")
        for path in (workspace / MARKER, workspace):
            os.utime(path, (lock.source_date_epoch, lock.source_date_epoch))
        staging.chmod(0o755)
        mark(staging, CONTEXT_KIND)
        _swap_into_place(staging, out)
    finally:
        if staging.exists():
            shutil.rmtree(staging)
    return {
        "dir": str(out),
        "base": base,
        "note": note,
        "command": build_command("docker", out, lock.arch, cache_remote=cache_remote),
    }


def _swap_into_place(staging: Path, out: Path) -> None:
    """Replace `out` by `staging` with renames, so no reader sees a half-written context.
    Signals wait for the swap and the old context's removal: a SIGTERM between them would
    leave `out` missing, or a half-removed `.<out>.old-<pid>` beside it."""
    if not out.exists():
        staging.rename(out)
        return
    check_replaceable(out, CONTEXT_KIND, "--out")  # again: it may have changed meanwhile
    old = out.with_name(f".{out.name}.old-{os.getpid()}")
    with deferred():
        out.rename(old)
        staging.rename(out)
        shutil.rmtree(old, ignore_errors=True)


def image_for_host(facts: Mapping[str, object]) -> Optional[str]:
    cann_facts: Any = facts.get("cann") or {}
    cann = cann_facts.get("version")
    variant = facts.get("variant")
    if not cann or variant not in CHIPS:
        return None
    os_name = "ubuntu22.04"  # the container task's default (ContainerSpec.os)
    return cann_image(
        str(cann), str(variant), os_name, seen_python(str(cann), str(variant), os_name)
    )


# --- the container task -----------------------------------------------------------


def make_container(
    spec: ContainerSpec,
    options: Options,
    note: Callable[[str], None],
    out: Optional[Path] = None,
    build: bool = False,
    dry_run: bool = False,
) -> Dict[str, Any]:
    """Render the build context from the lock into `out` (and `build` it with an engine
    that answers, pinning the base image's digest in the lock); a dry run ends in DryRun.
    `note` hears what was done, in order (a build's own output goes to the terminal in
    between)."""
    spec = replace(spec, variant=spec.variant.upper())
    if spec.variant:
        check_spec(spec)
    lock_file = options.lock_file
    lock = read_lock(lock_file)
    if lock is None:
        raise UsageError(
            f"{lock_file} does not exist: the container is rendered from the lock.",
            "Run `cannbuild lock` (no CANN needed: --cann <version> --soc <soc>), or pass "
            "--lock-file.",
        )
    spec = with_python(
        replace(
            spec, cann=spec.cann or lock.toolkit_version, variant=spec.variant or _variant(lock.soc)
        )
    )
    check_spec(spec)
    check_lock(spec, lock, lock_file)
    out = Path(os.path.abspath(out or "container"))  # a link there is refused
    if "," in str(out):
        raise UsageError(
            f"--out {out}: the build's `--output type=local,dest=...` takes comma-separated "
            "fields, so its folder cannot hold a comma (the engine would split it there).",
            "Pass --out a folder whose path has no comma.",
        )
    if dry_run:
        reference, _ = base_reference(spec, lock)
        raise DryRun(
            f"would write the build context {out} (Dockerfile, .dockerignore, .hadolint.yaml, "
            f"cannbuild.lock, cannbuild's sources) FROM {reference}"
            + (", then build it" if build else "")
        )

    def pin_base(current: Lock, digest: str) -> Lock:
        new = pinned(current, base_name(spec), digest)
        write_lock(lock_file, new)
        note(f"{lock_file}: base image pinned to {base_name(spec)}@{digest}")
        return new

    check_writable(out, "--out")
    if spec.base_digest:
        check_writable(lock_file, "--lock-file")
        lock = pin_base(lock, spec.base_digest)
    remote = options.cache_remote
    rendered = render_context(spec, lock, lock_file, out, cache_remote=bool(remote))
    note(f"build context written to {rendered['dir']} (FROM {rendered['base']})")
    if rendered["note"]:
        note(f"note: {rendered['note']}")
    if not build:
        # shell-quoted: a pasted command must build this context, spaces in its path and all
        note("build it with: " + shlex.join(rendered["command"]))
        return rendered
    result = engine_build(Path(str(rendered["dir"])), str(rendered["base"]), lock.arch, remote)
    if result.returncode:
        raise StepFailed(f"{result.engine} build failed (exit {result.returncode}).")
    if result.base_digest:
        pin_base(lock, result.base_digest)
    note(f"built with {result.engine}; packages and report in {rendered['dir']}/artifacts")
    return rendered
