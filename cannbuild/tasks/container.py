"""Tasks that render containers and CI: container, container-run, ci."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import Any, Optional

from invoke import Collection

from .. import ui
from ..errors import NoContainerEngine, StepFailed, UsageError
from ..ownership import check_writable
from ._flags import cli_task, lock_to_read, make_options
from ._session import on_sandbox

RENDERED_HEADER = "# Rendered by cannbuild"


@cli_task(
    "variant",
    "cann",
    "lock_file",
    "bundle",
    "sandbox",
    "out",
    "dry_run",
    "cannbuild_spec",
    help={
        "variant": "A2 (910B image) or A3 (default A2)",
        "cann": "CANN version of the base image (default: the lock's)",
        "bundle": "put this offline bundle in the context and build with --offline",
        "sandbox": "a container of the emulated host (for CI without CANN images)",
        "out": "the folder to write the build context to (default ./container)",
    },
    extra=[
        ("os", "ubuntu22.04", "ubuntu22.04, ubuntu24.04, openeuler22.03 or openeuler24.03"),
        ("python", "3.11", "3.10, 3.11 or 3.12"),
        ("base", None, "use this base image instead of quay.io/ascend/cann:<tag>"),
        (
            "base_digest",
            None,
            "record this sha256 digest of the base image in the lock (pins FROM)",
        ),
        ("build", False, "build it with docker buildx or podman when one answers"),
    ],
)
def container(
    c: Any,
    os: str = "ubuntu22.04",
    python: str = "3.11",
    base: Optional[str] = None,
    base_digest: Optional[str] = None,
    build: bool = False,
    **flags: Any,
) -> None:
    """Render a reproducible build context (Dockerfile, .dockerignore, lock) from the lock."""
    from ..container import (
        ContainerSpec,
        base_name,
        base_reference,
        check_lock,
        check_spec,
        pinned,
        render_context,
    )
    from ..container import build as engine_build
    from ..sources.lock import Lock, read_lock, write_lock

    options = lock_to_read(c, flags, make_options(c, flags))
    lock = read_lock(options.lock_file)
    if lock is None:
        raise UsageError(
            f"{options.lock_file} does not exist: the container is rendered from the lock.",
            "Run `cannbuild lock` on a host (or sandbox) with this CANN, or pass --lock-file.",
        )
    bundle = flags.get("bundle")
    spec = ContainerSpec(
        variant=(flags.get("variant") or "A2").upper(),
        cann=flags.get("cann") or lock.toolkit_version,
        os=os,
        python=python,
        base=base,
        sandbox=bool(flags.get("sandbox")),
        bundle=Path(bundle).resolve() if bundle else None,
        base_digest=base_digest,
        cannbuild_spec=flags.get("cannbuild_spec"),
    )
    check_spec(spec)
    check_lock(spec, lock, options.lock_file)
    out = Path(flags.get("out") or "container").resolve()
    if flags.get("dry_run"):
        reference, _note = base_reference(spec, lock)
        ui.note(
            f"dry run: would write the build context {out} (Dockerfile, .dockerignore, "
            f".hadolint.yaml, cannbuild.lock, cannbuild's sources) FROM {reference}"
            + ("" if not build else ", then build it")
            + "; nothing was changed."
        )
        return

    def pin_base(digest: str) -> Lock:
        assert lock is not None
        new = pinned(lock, base_name(spec), digest)
        write_lock(options.lock_file, new)
        ui.note(f"{options.lock_file}: base image pinned to {base_name(spec)}@{digest}")
        return new

    check_writable(out, "--out")
    if base_digest:
        check_writable(options.lock_file, "--lock-file")
        lock = pin_base(base_digest)
    remote = options.cache_remote
    rendered = render_context(spec, lock, options.lock_file, out, cache_remote=bool(remote))
    ui.note(f"build context written to {rendered['dir']} (FROM {rendered['base']})")
    if rendered["note"]:
        ui.note(f"note: {rendered['note']}")
    if not build:
        ui.note("build it with: " + " ".join(rendered["command"]))
        return
    result = engine_build(Path(str(rendered["dir"])), str(rendered["base"]), lock.arch, remote)
    if result.returncode:
        raise StepFailed(f"{result.engine} build failed (exit {result.returncode}).")
    if result.base_digest:
        pin_base(result.base_digest)
    ui.note(f"built with {result.engine}; packages and report in {rendered['dir']}/artifacts")


@cli_task(
    "sysroot",
    "sandbox",
    "variant",
    "cann",
    extra=[
        ("image", None, "image to run (default: the CANN image for this host's CANN and variant)"),
        ("exec", False, "run it instead of printing it"),
    ],
)
def container_run(c: Any, image: Optional[str] = None, exec: bool = False, **flags: Any) -> None:
    """Print (or --exec) the documented `docker run` line for the NPUs this host has."""
    import subprocess

    from ..container import find_engine, image_for_host, run_line
    from ..host.doctor import read_host
    from ..host.sysroot import Sysroot

    options = on_sandbox(make_options(c, flags), dry_run=False)
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
    code = subprocess.run([engine, *argv[1:]], check=False).returncode
    if code:
        raise StepFailed(f"{engine} run exited {code}.")


@cli_task(
    "out",
    "dry_run",
    "sandbox",
    "cannbuild_spec",
    help={
        "out": "file to write (default: the provider's usual path at the git top level)",
        "sandbox": "render for images of the emulated host (locks made with --sandbox; no NPU job)",
    },
    extra=[
        ("provider", "github", "github or gitlab"),
        ("npu_label", "ascend-npu", "runner label of NPU hosts"),
    ],
)
def ci(c: Any, provider: str = "github", npu_label: str = "ascend-npu", **flags: Any) -> None:
    """Render a CI workflow: a matrix over A2/A3 and the recipes' CANN versions.

    It is written at the top level of the git repository you are in (or to --out), and
    installs the cannbuild that rendered it: this checkout's wheel, written beside it
    and checked by sha256, or --cannbuild-spec."""
    from ..ci import (
        PROVIDERS,
        WHEEL_DIRS,
        Install,
        build_own_wheel,
        git_toplevel,
        installed_spec,
        no_install_source,
        render_ci,
        sandbox_locks,
        sha256_of,
    )
    from ..container import source_files
    from ..resources import data_dir
    from ..workspace import write_atomic

    if provider not in PROVIDERS:
        raise UsageError(
            f"--provider {provider!r} is not supported.", f"Use one of {', '.join(PROVIDERS)}."
        )
    out = flags.get("out")
    if out:
        target = Path(out).resolve()
        root = git_toplevel(target.parent) or target.parent
    else:
        found = git_toplevel(Path.cwd())
        if found is None:
            raise UsageError(
                f"{Path.cwd()} is not inside a git repository, so there is no top level to "
                f"write {PROVIDERS[provider][1]} at.",
                "Run it inside the repository the workflow is for, or pass --out FILE.",
            )
        root = found
        target = root / PROVIDERS[provider][1]
    sandbox = bool(flags.get("sandbox"))
    made_on_sandbox = sandbox_locks(root)
    if made_on_sandbox and not sandbox:
        raise UsageError(
            f"{made_on_sandbox[0]} was made on cannbuild's emulated Ascend host (--sandbox): "
            "its commits are the stand-in repositories', which no real image can build.",
            "Replace it with a lock of the real sources (cannbuild lock --cann <version> --soc "
            "<soc> --lock-file ..., no CANN needed), or pass --sandbox for a workflow that "
            "builds images of the emulated host.",
        )
    spec = flags.get("cannbuild_spec")
    checkout = data_dir("templates").parent
    wheel_dir = root / WHEEL_DIRS[provider]
    if spec:
        install = Install(spec=spec)
    elif source_files(checkout) is not None:
        install = Install(wheel=f"{WHEEL_DIRS[provider]}/cannbuild-<built on render>.whl")
    elif installed_spec():
        install = Install(spec=installed_spec())
    else:
        raise no_install_source()
    if flags.get("dry_run"):
        rendered = render_ci(provider, Path.cwd(), install, npu_label=npu_label, sandbox=sandbox)
        extras = "" if out else " and " + ", ".join(str(root / e) for e in rendered["extras"])
        also = f", cannbuild's wheel into {wheel_dir}" if install.wheel else ""
        ui.note(f"dry run: would write {target}{extras}{also}; nothing was changed.")
        return
    refuse_foreign_file(target, "--out" if out else "the workflow path")
    check_writable(target, "--out" if out else "the workflow path")
    if install.wheel:
        check_writable(wheel_dir, "the wheel folder")
        wheel = build_own_wheel(checkout, wheel_dir)
        for old in wheel_dir.glob("cannbuild-*.whl"):  # an older render's wheel
            if old != wheel:
                old.unlink()
        install = Install(
            wheel=str(wheel.relative_to(root)) if wheel.is_relative_to(root) else str(wheel),
            sha256=sha256_of(wheel),
        )
        ui.note(f"cannbuild's wheel written to {wheel} (commit it with the workflow)")
    rendered = render_ci(provider, Path.cwd(), install, npu_label=npu_label, sandbox=sandbox)
    write_atomic(target, rendered["text"].encode())
    ui.note(f"{provider} workflow written to {target}")
    for name, text in rendered["extras"].items():
        if out is not None:
            ui.note(f"with --out, {name} is not written; for actionlint it should say:\n{text}")
            continue
        if (root / name).exists():
            ui.note(f"{name} exists, left as it is; it should list the runner label {npu_label}")
        else:
            write_atomic(root / name, text.encode())
            ui.note(f"{root / name} written")


def refuse_foreign_file(target: Path, what: str) -> None:
    """A file cannbuild renders replaces only a file it rendered before (its first line
    says so), never one a user wrote."""
    try:
        with open(target, encoding="utf-8", errors="replace") as fh:
            first = fh.readline()
    except FileNotFoundError:
        return
    except OSError as exc:
        raise UsageError(f"{what} {target} cannot be read ({exc.strerror}).") from None
    if not first.startswith(RENDERED_HEADER):
        raise UsageError(
            f"{what} {target} exists and was not rendered by cannbuild (its first line is not "
            f"'{RENDERED_HEADER} ...'); it is left as it is.",
            "Pass --out with another file, or move that file away first.",
        )


collection = Collection(container, container_run, ci)
