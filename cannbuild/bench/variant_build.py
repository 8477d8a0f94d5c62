"""Building one variant in its own folder and validating every variant: the steps the
baseline ran, rendered against the variant's copy, tree and prefix."""

from __future__ import annotations

import glob
import shlex
import shutil
import subprocess
from pathlib import Path
from typing import Any, Callable, Dict, List, Optional, Sequence, Tuple

from msgspec import Struct

from .. import safefs
from ..build.plan import _render
from ..build.session import Session
from ..proc import run
from ..validate import capi
from ..validate.cases import CASES, judge_files, manifest_line, reference, write_inputs
from ..workspace import write_atomic

BUILD_TIMEOUT_S = 3600


class VariantPaths(Struct, frozen=True, kw_only=True):
    root: Path

    @staticmethod
    def of(workspace: Path, name: str) -> VariantPaths:
        return VariantPaths(root=workspace / "variants" / name)

    @property
    def src(self) -> Path:
        return self.root / "src" / "ops-transformer"

    @property
    def opp(self) -> Path:
        return self.root / "opp"

    @property
    def stamp(self) -> Path:
        return self.root / "stamp.json"

    @property
    def log(self) -> Path:
        return self.root / "build.log"

    def vendor(self, session: Session) -> Path:
        return self.opp / "vendors" / f"{session.options.vendor_name}_transformer"

    def library(self, session: Session) -> Path:
        return self.vendor(session) / "op_api" / "lib" / "libcust_opapi.so"


def _values(session: Session, paths: VariantPaths) -> Dict[str, Any]:
    values = dict(session.values)
    values["src"] = {**values["src"], "ops-transformer": str(paths.src)}
    values["third_party"] = {
        **values["third_party"],
        "ops-transformer": str(paths.src / "third_party"),
    }
    values["opp"] = str(paths.opp)
    return values


def _step(argv: List[str], cwd: Path, env: Dict[str, str], log: Any) -> Optional[str]:
    log.write(f"$ {' '.join(shlex.quote(a) for a in argv)}  (in {cwd})\n")
    log.flush()
    try:
        proc = run(argv, cwd=cwd, env=env, timeout=BUILD_TIMEOUT_S, merge_stderr=True)
    except subprocess.TimeoutExpired:
        return f"{argv[0]} timed out after {BUILD_TIMEOUT_S} s"
    text = proc.stdout.decode("utf-8", "replace")
    log.write(text)
    if proc.returncode != 0:
        last = next((ln for ln in reversed(text.splitlines()) if ln.strip()), "")
        return f"`{' '.join(argv[:3])}` exited with {proc.returncode}: {last.strip()}"
    return None


def build_one(
    session: Session, spec: Any, paths: VariantPaths, build: Any, install: Any, commit: str
) -> Optional[str]:
    """Copy the checkout at `commit`, apply the variant, build and install it; None on
    success, else why not (the log has the rest)."""
    checkout = session.ws.checkout("ops-transformer")
    ws, what = session.ws.root, f"the build folder of variant {paths.root.name}"
    for old in (paths.src, paths.opp):  # a link on the way is refused, never followed
        safefs.remove(ws, old, what)
    safefs.make_dirs(ws, paths.root, what)
    safefs.make_dirs(ws, paths.src.parent, what)
    safefs.remove(ws, paths.log, what)  # the log is opened for writing: never through a link
    values = _values(session, paths)
    env = dict(build.env)
    if spec.defines:
        flags = " ".join(f"-D{k}={v}" for k, v in spec.defines)
        env["CXXFLAGS"] = f"{env.get('CXXFLAGS', '')} {flags}".strip()
    git_env = {k: v for k, v in build.env.items() if not k.startswith("GIT_")}
    with open(paths.log, "w", encoding="utf-8") as log:
        for argv, cwd in (
            (
                ["git", "clone", "-q", "--shared", "--no-checkout", str(checkout), str(paths.src)],
                paths.root,
            ),
            (
                ["git", "-c", "advice.detachedHead=false", "checkout", "-q", "--detach", commit],
                paths.src,
            ),
        ):
            failure = _step(argv, cwd, git_env, log)
            if failure:
                return failure
        third_party = checkout / "third_party"
        if third_party.is_dir():
            shutil.copytree(
                third_party, paths.src / "third_party", symlinks=True, dirs_exist_ok=True
            )
        if spec.patch is not None:
            failure = _step(["git", "apply", "--verbose", str(spec.patch)], paths.src, git_env, log)
            if failure:
                return f"the patch {spec.patch} does not apply to ops-transformer {commit[:12]}: {failure}"
        command = _render(session.recipe, build.spec.command, values, f"step {build.name!r}")
        failure = _step(shlex.split(command), paths.src, env, log)
        if failure:
            return failure
        produced = [
            p
            for pattern in build.spec.produces
            for p in sorted(glob.glob(str(paths.src / _render_inline(session, pattern, values))))
        ]
        if not produced:
            return f"the build made no package ({', '.join(build.spec.produces)})"
        values["artifacts"] = {build.name: produced[-1]}
        command = _render(session.recipe, install.spec.command, values, f"step {install.name!r}")
        safefs.make_dirs(ws, paths.opp, what)
        return _step(shlex.split(command), paths.root, dict(install.env), log)


def _render_inline(session: Session, text: str, values: Dict[str, Any]) -> str:
    from ..render.templates import render_value

    return render_value(text, values, f"recipe {session.recipe.path}: produces")


def validate_all(
    session: Session, variants: Sequence[Tuple[str, VariantPaths]], note: Callable[[str], None]
) -> Dict[str, str]:
    """Each variant's package on the validation cases through the C API, judged as
    `cannbuild validate` judges; the references are computed once for all."""
    from .routes import RouteError, compile_program
    from .run import package_env

    if not variants:
        return {}
    data = safefs.fresh(
        session.ws.root, session.ws.tmp / "bench" / "validate", "the variants' validation data"
    )
    tensors = {c.name: write_inputs(c, data) for c in CASES}
    expected = {c.name: reference(c, tensors[c.name]) for c in CASES}
    manifest = data / "manifest.txt"
    write_atomic(manifest, ("\n".join(manifest_line(c, data) for c in CASES) + "\n").encode())
    verdicts: Dict[str, str] = {}
    for name, paths in variants:
        vendor = paths.vendor(session)
        try:
            program = compile_program(
                vendor, package_env(session, vendor), session.ws.tmp / "bench" / "programs" / name
            )
        except RouteError as exc:
            verdicts[name] = f"FAIL: {exc}"
            continue
        runs, _, _ = capi.run_cases(program.binary, manifest, program.env, [c.name for c in CASES])
        failed = []
        for case in CASES:
            r = runs[case.name]
            result = (
                judge_files(case, tensors[case.name], data, r.kernel_ms, expected[case.name])
                if r.ok
                else None
            )
            if result is None or result.status != "PASS":
                failed.append(f"{case.name}: {result.message if result else r.error}")
        verdicts[name] = (
            "PASS" if not failed else f"FAIL ({len(failed)}/{len(CASES)} cases; first {failed[0]})"
        )
        note(f"variant {name}: validation {verdicts[name]}")
    return verdicts
