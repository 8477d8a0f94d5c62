"""Reproducible container builds: a build context rendered from the lock.

The Dockerfile's builder stage installs cannbuild and runs the same pinned,
incremental, validated pipeline (`cannbuild setup --locked`), with BuildKit cache
mounts for ccache and the source caches; the export stage holds only the .run
packages and the report, so `docker buildx build --output type=local` yields the
artifacts.  Mirror credentials go through `--secret`, never build args.  The
same lock renders byte-identical files.
"""

from __future__ import annotations

import os
import shlex
import shutil
import subprocess
from dataclasses import dataclass, replace
from pathlib import Path
from typing import Dict, List, Mapping, Optional, Sequence, Tuple

from . import __version__
from .errors import NoContainerEngine, UsageError
from .lockfile import Lock
from .render import file_env
from .resources import data_dir

IMAGE_REPO = "quay.io/ascend/cann"
CHIPS = {"A2": "910b", "A3": "a3"}
SOCS = {"A2": "ascend910b", "A3": "ascend910_93"}
OSES = ("ubuntu22.04", "ubuntu24.04", "openeuler22.03", "openeuler24.03")
PYTHONS = ("3.10", "3.11", "3.12")
# Tags seen published (Ascend/cann-container-image, vllm-ascend Dockerfiles); others follow the
# same grammar but are not known to exist.
SEEN_TAGS = frozenset(
    {
        "8.1.rc1-910b-ubuntu22.04-py3.10",
        "8.2.rc1-a3-openeuler24.03-py3.11",
        "8.3.rc1-910b-ubuntu22.04-py3.11",
        "8.5.0-910b-ubuntu22.04-py3.11",
        "8.5.0-a3-ubuntu22.04-py3.11",
        "9.0.0-910b-ubuntu22.04-py3.11",
        "9.0.0-a3-ubuntu22.04-py3.11",
        "9.1.0-910b-ubuntu22.04-py3.12",
    }
)
SANDBOX_BASE = "python:3.11-slim-bookworm"
# What build.sh calls besides the compilers (gawk: ops-transformer pipes its log through it),
# and ccache for the cache mount.
BUILD_TOOLS = ("ccache", "dos2unix", "gawk", "patch", "pigz")
SANDBOX_TOOLS = ("cmake", "g++", "git", "make")
SECRET_ID = "cannbuild-mirrors"
CONTEXT_FILES = ("Dockerfile", ".dockerignore", ".hadolint.yaml", "cannbuild.lock")


@dataclass(frozen=True)
class ContainerSpec:
    variant: str
    cann: str
    os: str = "ubuntu22.04"
    python: str = "3.11"
    base: Optional[str] = None
    sandbox: bool = False
    bundle: Optional[Path] = None


def image_tag(cann: str, variant: str, os_name: str, python: str) -> str:
    """`<version lowercased>-<910b|a3>-<os>-py3.x`, e.g. 8.5.0-a3-ubuntu22.04-py3.11."""
    return f"{cann.lower()}-{CHIPS[variant]}-{os_name}-py{python}"


def check_spec(spec: ContainerSpec) -> None:
    if spec.variant not in CHIPS:
        raise UsageError(
            f"--variant {spec.variant!r} has no CANN image.", "Use A2 (910B) or A3 (910_93)."
        )
    if spec.os not in OSES:
        raise UsageError(
            f"--os {spec.os!r} is not an OS the CANN images come in.",
            f"Use one of {', '.join(OSES)}.",
        )
    if spec.python not in PYTHONS:
        raise UsageError(
            f"--python {spec.python!r} is not a Python the CANN images ship.",
            f"Use one of {', '.join(PYTHONS)}.",
        )


def base_reference(spec: ContainerSpec, lock: Lock) -> Tuple[str, str]:
    """(FROM reference, note): pinned by the lock's digest when it has one."""
    if spec.base:
        base = spec.base
    elif spec.sandbox:
        base = SANDBOX_BASE
    else:
        base = f"{IMAGE_REPO}:{image_tag(spec.cann, spec.variant, spec.os, spec.python)}"
    digest = lock.container.get("base_digest") if lock.container.get("base") == base else None
    note = ""
    if (
        not spec.base
        and not spec.sandbox
        and image_tag(spec.cann, spec.variant, spec.os, spec.python) not in SEEN_TAGS
    ):
        note = f"{base} follows the CANN image tag grammar but is not a tag cannbuild has seen published"
    return (f"{base}@{digest}" if digest else base), note


def check_lock(spec: ContainerSpec, lock: Lock, lock_file: Path) -> None:
    want_soc = SOCS[spec.variant]
    if spec.sandbox:
        return
    problems = []
    if lock.toolkit_version.lower() != spec.cann.lower():
        problems.append(f"it pins CANN {lock.toolkit_version}, the image has {spec.cann}")
    if lock.soc != want_soc:
        problems.append(f"it builds for {lock.soc}, --variant {spec.variant} needs {want_soc}")
    if problems:
        raise UsageError(
            f"{lock_file} does not fit this container: {'; '.join(problems)}.",
            f"Make a lock for it (cannbuild lock --cann-path <CANN {spec.cann}> --soc {want_soc} "
            "--lock-file ...) and pass it with --lock-file.",
        )


def source_files(root: Path) -> List[Path]:
    """cannbuild's own sources, as git tracks them in the checkout it runs from."""
    if not (root / "pyproject.toml").is_file():
        raise UsageError(
            "rendering a container copies cannbuild's sources into the image, but this cannbuild is "
            f"not running from a checkout ({root} has no pyproject.toml).",
            "Install it with `pip install -e <checkout>` and render from there.",
        )
    try:
        out = subprocess.run(
            ["git", "ls-files", "-z", "--cached", "--others", "--exclude-standard"],
            cwd=root,
            capture_output=True,
            check=True,
        ).stdout
        files = [root / p for p in out.decode().split("\0") if p]
    except (OSError, subprocess.CalledProcessError):
        files = [
            p
            for d in ("cannbuild", "templates", "kernels", "recipes")
            for p in (root / d).rglob("*")
            if p.is_file()
        ]
        files += [root / n for n in ("pyproject.toml", "README.md", "tasks.py")]
    keep = ("cannbuild/", "templates/", "kernels/", "recipes/")
    names = {"pyproject.toml", "README.md", "tasks.py"}
    return sorted(
        p
        for p in files
        if p.is_file()
        and (str(p.relative_to(root)).startswith(keep) or p.name in names)
        and "__pycache__" not in p.parts
    )


def render_context(
    spec: ContainerSpec, lock: Lock, lock_file: Path, out: Path
) -> Dict[str, object]:
    """Write the build context into `out`; returns what was rendered."""
    check_spec(spec)
    check_lock(spec, lock, lock_file)
    base, note = base_reference(spec, lock)
    revision = ",".join(f"{r.name}@{r.commit[:12]}" for r in lock.repos)
    source = next(
        (r.url for r in lock.repos if r.name == "ops-transformer"),
        lock.repos[0].url if lock.repos else "",
    )
    templates = file_env(data_dir("templates") / "container")
    soc = lock.soc if spec.sandbox else SOCS[spec.variant]
    extra: List[str] = []
    if spec.sandbox:
        extra += ["--sandbox", "--variant", spec.variant, "--cann", lock.toolkit_version]
    if spec.bundle is not None:
        extra += ["--offline", "--bundle", f"/build/{spec.bundle.name}"]
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
        "bundle": spec.bundle.name if spec.bundle else None,
        "package_manager": "yum"
        if spec.os.startswith("openeuler") and not spec.sandbox
        else "apt-get",
        "packages": sorted(BUILD_TOOLS + (SANDBOX_TOOLS if spec.sandbox else ())),
        "setup_args": " ".join(shlex.quote(a) for a in ["--locked", "--soc", soc, *extra]),
        "secret_id": SECRET_ID,
    }
    out.mkdir(parents=True, exist_ok=True)
    files = {
        "Dockerfile": templates.get_template("Dockerfile.j2").render(**values),
        ".dockerignore": templates.get_template("dockerignore.j2").render(**values),
        ".hadolint.yaml": (data_dir("templates") / "container" / "hadolint.yaml").read_text(),
        "cannbuild.lock": lock_file.read_text(),
    }
    for name, text in files.items():
        (out / name).write_text(text, encoding="utf-8")
    src_out = out / "cannbuild-src"
    if src_out.exists():
        shutil.rmtree(src_out)
    root = data_dir("templates").parent
    for path in source_files(root):
        target = src_out / path.relative_to(root)
        target.parent.mkdir(parents=True, exist_ok=True)
        shutil.copy(path, target)  # keeps the executable bits
        os.utime(target, (lock.source_date_epoch, lock.source_date_epoch))
    if spec.bundle is not None:
        shutil.copyfile(spec.bundle, out / spec.bundle.name)
    return {"dir": str(out), "base": base, "note": note, "command": build_command("docker", out)}


def build_command(engine: str, context: Path) -> List[str]:
    dest = str(context / "artifacts")
    if engine == "podman":
        return [
            "podman", "build", "--format", "docker", "--target", "export", "--output", f"type=local,dest={dest}",
            "--secret", f"id={SECRET_ID},env=CANNBUILD_MIRRORS", str(context),
        ]  # fmt: skip
    return [
        "docker", "buildx", "build", "--target", "export", "--output", f"type=local,dest={dest}",
        "--secret", f"id={SECRET_ID},env=CANNBUILD_MIRRORS", str(context),
    ]  # fmt: skip


def _answers(argv: Sequence[str]) -> bool:
    try:
        return (
            subprocess.run(list(argv), capture_output=True, timeout=15, check=False).returncode == 0
        )
    except (OSError, subprocess.TimeoutExpired):
        return False


def find_engine() -> Optional[str]:
    """A container engine that actually answers: a docker client alone is not enough."""
    if (
        shutil.which("docker")
        and _answers(["docker", "buildx", "version"])
        and _answers(["docker", "info"])
    ):
        return "docker"
    if shutil.which("podman") and _answers(["podman", "info"]):
        return "podman"
    return None


def base_digest(engine: str, base: str) -> Optional[str]:
    """The digest the engine pulled for `base`, once a build has pulled it."""
    try:
        out = subprocess.run(
            [
                engine,
                "image",
                "inspect",
                "--format",
                "{{index .RepoDigests 0}}",
                base.split("@")[0],
            ],
            capture_output=True,
            text=True,
            timeout=30,
            check=False,
        ).stdout.strip()
    except (OSError, subprocess.TimeoutExpired):
        return None
    return out.split("@", 1)[1] if "@sha256:" in out else None


def pin_base(engine: str, base: str, lock: Lock) -> Optional[Lock]:
    """The lock with the base digest the build pulled, or None if already pinned or unknown."""
    if "@sha256:" in base:
        return None
    digest = base_digest(engine, base)
    if digest is None:
        return None
    return replace(lock, container={"base": base, "base_digest": digest})


def build(context: Path) -> Tuple[str, int]:
    engine = find_engine()
    if engine is None:
        command = " ".join(shlex.quote(a) for a in build_command("docker", context))
        raise NoContainerEngine(
            "no container engine answers here (docker needs a running daemon with buildx; podman "
            f"needs `podman info` to work). The build command is:\n  {command}",
            "Run it on a machine with Docker (BuildKit) or Podman; the context is self-contained.",
        )
    proc = subprocess.run(build_command(engine, context), check=False)
    return engine, proc.returncode


# --- docker run for this host -------------------------------------------------------


def run_line(sysroot: Path, image: str, driver_path: str = "/usr/local/Ascend") -> List[str]:
    """The documented `docker run` for the NPUs this host actually has."""

    def present(path: str) -> bool:
        return (sysroot / path.lstrip("/")).exists()

    def index(path: Path) -> int:
        tail = path.name[len("davinci") :]
        return int(tail) if tail.isdigit() else -1

    argv = ["docker", "run", "--rm", "-it"]
    nodes = sorted((p for p in (sysroot / "dev").glob("davinci*") if index(p) >= 0), key=index)
    for node in nodes:
        argv += ["--device", f"/dev/{node.name}"]
    for node in ("davinci_manager", "devmm_svm", "hisi_hdc"):
        if present(f"/dev/{node}"):
            argv += ["--device", f"/dev/{node}"]
    mounts: List[Tuple[str, str]] = []
    if present("/usr/local/dcmi"):
        mounts.append(("/usr/local/dcmi", "/usr/local/dcmi"))
    for smi in ("/usr/local/bin/npu-smi", "/usr/local/sbin/npu-smi"):
        if present(smi):
            mounts.append((smi, "/usr/local/bin/npu-smi"))
            break
    driver = driver_path.rstrip("/") + "/driver"
    if present(f"{driver}/lib64"):
        mounts.append((f"{driver}/lib64/", f"{driver}/lib64/"))
    if present(f"{driver}/version.info"):
        mounts.append((f"{driver}/version.info", f"{driver}/version.info"))
    if present("/etc/ascend_install.info"):
        mounts.append(("/etc/ascend_install.info", "/etc/ascend_install.info"))
    for src, dst in mounts:
        argv += ["-v", f"{src}:{dst}"]
    return [*argv, image, "bash"]


def image_for_host(
    facts: Mapping[str, object], python: str = "3.11", os_name: str = "ubuntu22.04"
) -> Optional[str]:
    cann = (facts.get("cann") or {}).get("version")  # type: ignore[union-attr]
    variant = facts.get("variant")
    if not cann or variant not in CHIPS:
        return None
    return f"{IMAGE_REPO}:{image_tag(str(cann), str(variant), os_name, python)}"
