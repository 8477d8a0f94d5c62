"""Tasks that render containers and CI: container, container-run, ci."""

from __future__ import annotations

import os
import shlex
import sys
from pathlib import Path
from typing import TYPE_CHECKING, Optional

from .. import ui
from ..lazy import lazy_module
from ._flags import FlagValue, cli_task, text_of
from ._frame import Frame

if TYPE_CHECKING:
    from .. import ci as workflows
    from ..container import context as container_context
    from ..container import run as container_runner
else:  # only the task that runs loads its core (`cannbuild --help` loads every task module)
    workflows = lazy_module("cannbuild.ci")
    container_context = lazy_module("cannbuild.container.context")
    container_runner = lazy_module("cannbuild.container.run")


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
        "variant": "A2 (910B image) or A3 (default: the lock's SoC)",
        "cann": "CANN version of the base image (default: the lock's)",
        "bundle": "put this offline bundle in the context and build with --offline",
        "sandbox": "a container of the emulated host (for CI without CANN images)",
        "out": "the folder to write the build context to (default ./container)",
    },
    extra=[
        ("os", "ubuntu22.04", "ubuntu22.04, ubuntu24.04, openeuler22.03 or openeuler24.03"),
        (
            "python",
            None,
            "3.10, 3.11 or 3.12 (default: the Python of this CANN's published image, else 3.11)",
        ),
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
    frame: Frame,
    os: str = "ubuntu22.04",
    python: Optional[str] = None,
    base: Optional[str] = None,
    base_digest: Optional[str] = None,
    build: bool = False,
    **flags: FlagValue,
) -> None:
    """Render a reproducible build context (Dockerfile, .dockerignore, lock) from the lock."""
    options = frame.lock_to_read()
    bundle, out = text_of(flags, "bundle"), text_of(flags, "out")
    spec = container_context.ContainerSpec(
        variant=text_of(flags, "variant") or "",
        cann=text_of(flags, "cann") or "",
        os=os,
        python=python or "",
        base=base,
        base_digest=base_digest,
        sandbox=bool(flags.get("sandbox")),
        bundle=Path(bundle).resolve() if bundle else None,
        cannbuild_spec=text_of(flags, "cannbuild_spec"),
    )
    out_dir = Path(out) if out else None
    container_context.make_container(spec, options, ui.note, out_dir, build, frame.dry_run)


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
def container_run(
    frame: Frame, image: Optional[str] = None, exec: bool = False, **flags: FlagValue
) -> None:
    """Print (or --exec) the documented `docker run` line for the NPUs this host has."""
    # the host: the flags', else the workspace's remembered one (after setup --sandbox, the sandbox)
    options = frame.sandboxed(frame.target()).options
    argv = container_runner.host_run_line(
        options, os.environ, image, tty=not exec or sys.stdin.isatty()
    )
    if exec:
        container_runner.run_interactive(argv)
    else:
        print(" ".join(shlex.quote(a) for a in argv))


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
def ci(
    frame: Frame, provider: str = "github", npu_label: str = "ascend-npu", **flags: FlagValue
) -> None:
    """Render a CI workflow: a matrix over A2/A3 and the recipes' CANN versions.

    It is written at the top level of the git repository you are in (or to --out), and
    installs the cannbuild that rendered it: this checkout's wheel, written beside it
    and checked by sha256, or --cannbuild-spec."""
    out = text_of(flags, "out")
    request = workflows.CiRequest(
        provider=provider,
        out=Path(out) if out else None,
        npu_label=npu_label,
        sandbox=bool(flags.get("sandbox")),
        cannbuild_spec=text_of(flags, "cannbuild_spec"),
        dry_run=frame.dry_run,
    )
    workflows.write_ci(request, Path.cwd(), ui.note)


TASKS = (container, container_run, ci)
