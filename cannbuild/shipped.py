"""Validate what is shipped: a built .run package, installed into a scratch prefix.

The NPU job of the rendered CI validates the very package the build job uploaded, not
a rebuild: `cannbuild validate --package X.run` installs X (as the install step does,
`--quiet --install-path=`) under <workspace>/validate/package/, and validates that
install with the host's toolkit.  Its sha256 goes into the report.  The repository's
own example is not run: it compiles from the source tree, which a package does not
carry.
"""

from __future__ import annotations

import subprocess
from pathlib import Path
from typing import Dict, Tuple

from msgspec.structs import replace

from . import safefs
from .build.session import Session
from .errors import UsageError, ValidationFailed
from .proc import run
from .recipes.selection import select_repos
from .sources.fetch import sha256_file
from .workspace import Workspace

INSTALL_TIMEOUT_S = 1800


def install_package(session: Session, package: Path) -> Tuple[Session, Dict[str, str]]:
    """Install `package` into a scratch prefix; the session that validates it, and the
    report's record of it."""
    package = package.resolve()
    problem = (
        "does not exist"
        if not package.exists()
        else "is not a .run file"
        if not package.is_file() or package.suffix != ".run"
        else "is empty"
        if package.stat().st_size == 0
        else ""
    )
    if problem:
        raise UsageError(
            f"--package {package} {problem}.",
            "Pass the custom operator package a build made (a build_out/*.run: `cannbuild "
            "status` lists them).",
        )
    digest = sha256_file(package)
    what = "the package's scratch prefix"
    scratch = safefs.fresh(session.ws.root, session.ws.validate / "package", what)
    prefix = safefs.make_dirs(session.ws.root, scratch / "opp", what)
    argv = ["bash", str(package), "--quiet", f"--install-path={prefix}"]
    try:
        proc = run(
            argv,
            cwd=scratch,
            env={**(session.host.build_env or {}), "TMPDIR": str(scratch)},
            timeout=INSTALL_TIMEOUT_S,
            merge_stderr=True,
        )
    except (OSError, subprocess.TimeoutExpired) as exc:
        raise ValidationFailed(f"--package {package} could not be installed: {exc}.") from None
    output = proc.stdout.decode("utf-8", "replace").strip().splitlines()
    found = sorted((prefix / "vendors").glob("*")) if proc.returncode == 0 else []
    vendors = [p for p in found if p.is_dir()]
    if proc.returncode != 0 or len(vendors) != 1:
        what = (
            f"exited {proc.returncode}"
            if proc.returncode
            else f"installed {len(vendors)} vendor folders under {prefix}/vendors (expected one)"
        )
        raise ValidationFailed(
            f"--package {package} (sha256 {digest}) does not install into a scratch prefix: "
            f"`{' '.join(argv)}` {what}: {' | '.join(output[-3:])}.",
            "Check that it is a custom operator package of "
            f"{', '.join(session.recipe.order) or 'the recipe'} for this host's architecture and CANN.",
        )
    recipe = session.recipe
    repo = next(
        (r for r in recipe.validated if vendors[0].name.endswith(f"_{r.vendor_suffix}")), None
    )
    if repo is None:
        suffixes = ", ".join(f"<vendor>_{r.vendor_suffix} ({r.name})" for r in recipe.validated)
        raise ValidationFailed(
            f"--package {package} installs {vendors[0].name}, which is none of the vendor folders "
            f"of the repos this run validates ({suffixes or 'none'}).",
            "Pass --repos with the repository that built it.",
        )
    vendor_name = vendors[0].name[: -len(f"_{repo.vendor_suffix}")]
    assert repo.validate is not None
    only = select_repos(recipe, [repo.name])
    only = replace(
        only,
        repos=tuple(
            replace(r, validate=replace(repo.validate, example=None)) if r.name == repo.name else r
            for r in only.repos
        ),
    )
    derived = replace(
        session,
        options=session.options.with_(vendor_name=vendor_name),
        ws=Workspace(root=scratch),
        context=replace(session.context, vendor_name=vendor_name, opp=prefix),
        recipe=only,
    )
    record = {
        "path": str(package),
        "sha256": digest,
        "installed_into": str(vendors[0]),
        "vendor_name": vendor_name,
        "repo": repo.name,
        "example": "not run: the repository's example compiles from the source tree, which a "
        "package does not carry",
    }
    return derived, record
