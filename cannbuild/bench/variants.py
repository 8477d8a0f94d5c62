"""Build variants: ops-transformer at the locked commit with a patch or compile
definitions, each in a copy of its own (the checkout is never touched), with its own
build tree, install prefix and stamp, validated before anything is timed.

Compile definitions reach the build as CXXFLAGS (cmake reads it at the first configure,
and build.sh configures afresh every time): on a real host that is the host-side code
(tiling, op_api); a kernel-side change needs a patch."""

from __future__ import annotations

import re
from pathlib import Path
from typing import Any, Callable, Dict, List, Mapping, Optional, Sequence, Tuple, Union

from msgspec import Struct, field

from ..bounded import PATCH, VARIANTS, digest, read_text, read_toml
from ..build.plan import UP_TO_DATE
from ..build.runner import new_run_id
from ..build.session import Session
from ..build.steps import plan_session
from ..build.variant import Variant
from ..decoded import convert
from ..errors import UsageError
from ..locks import WorkspaceLock
from ..sources.pinning import sources_from_lock
from ..validate.cases import FA_OP
from .sweep import BASELINE
from .variant_build import VariantProgress, build_one, validate_all

_NAME = re.compile(r"^[A-Za-z0-9][A-Za-z0-9_.-]{0,63}$")
_DEFINE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")
_VALUE = re.compile(r"^[A-Za-z0-9_.+-]*$")
FORMAT = "[[variant]] tables with name and a patch (file relative to the TOML) and/or defines = {NAME = value}"


class VariantSpec(Struct, frozen=True, kw_only=True):
    name: str
    patch: Optional[Path]
    defines: Tuple[Tuple[str, str], ...]
    origin: str  # the file or flag it came from, for messages

    @property
    def how(self) -> str:
        parts = []
        if self.patch is not None:
            parts.append(f"patch {self.patch.name}")
        if self.defines:
            parts.append(" ".join(f"-D{k}={v}" for k, v in self.defines))
        return ", ".join(parts)


class VariantRow(Struct, frozen=True, kw_only=True, forbid_unknown_fields=True):
    """One `[[variant]]` of a --variants file."""

    name: str
    patch: Optional[str] = None  # relative to the file
    defines: Dict[str, Union[str, int, float, bool]] = field(default_factory=dict)
    description: str = ""


class VariantFile(Struct, frozen=True, kw_only=True):
    variant: Tuple[VariantRow, ...] = ()


class BuiltVariant(Struct, frozen=True, kw_only=True):
    name: str
    vendor: Optional[Path]  # None: it failed to build or to validate, and is not timed
    info: Dict[str, Any]


def _defines(raw: Mapping[str, object], origin: str, name: str) -> Tuple[Tuple[str, str], ...]:
    out = []
    for key, value in sorted(raw.items()):
        text = str(value).lower() if isinstance(value, bool) else str(value)
        if not _DEFINE.match(key) or not _VALUE.match(text):
            raise UsageError(
                f"{origin}: variant {name!r}: {key}={text} is not a compile definition.",
                "Use a C identifier and a value of letters, digits, '.', '_', '+' or '-'.",
            )
        out.append((key, text))
    return tuple(out)


# a file header and the first hunk of a unified diff (git diff, diff -u)
_HUNK = re.compile(r"^--- \S.*\n\+\+\+ \S.*\n@@ -\d", re.M)


def _spec(
    name: str, patch: Optional[Path], defines: Tuple[Tuple[str, str], ...], origin: str
) -> VariantSpec:
    if not _NAME.match(name) or name == BASELINE:
        raise UsageError(
            f"{origin}: {name!r} is not a variant name.",
            "Use letters, digits, '.', '_' or '-' (not 'baseline').",
        )
    if patch is not None:  # a regular file within its bound, before git apply reads it
        kind = PATCH.named(f"{origin}: variant {name!r}: patch")
        if not _HUNK.search(read_text(patch, kind)):
            raise UsageError(
                f"{origin}: variant {name!r}: patch {patch} is not a unified diff (no "
                "---/+++ header followed by an @@ hunk): git apply would refuse it after the "
                "baseline is built.",
                "Make it in the ops-transformer checkout with `git diff > NAME.patch`.",
            )
    if patch is None and not defines:
        raise UsageError(
            f"{origin}: variant {name!r} has neither a patch nor defines.", f"Write {FORMAT}."
        )
    return VariantSpec(name=name, patch=patch, defines=defines, origin=origin)


def read_variant_file(path: Path) -> List[VariantSpec]:
    data = read_toml(path, VARIANTS.named(hint=f"Write {FORMAT}."))
    rows = convert(data, VariantFile, f"--variants {path}", f"Write {FORMAT}.").variant
    if not rows:
        raise UsageError(f"--variants {path}: no [[variant]] tables.", f"Write {FORMAT}.")
    return [
        _spec(
            row.name,
            (path.parent / row.patch).resolve() if row.patch is not None else None,
            _defines(row.defines, str(path), row.name),
            str(path),
        )
        for row in rows
    ]


def parse_flag(text: str, cwd: Path) -> VariantSpec:
    origin = f"--build-variant {text!r}"
    name, sep, rest = text.partition("=")
    if not sep or not rest:
        raise UsageError(
            f"{origin} is not NAME=PATCH or NAME=DEFINE=VALUE.",
            "e.g. --build-variant q128=FA_TILING_QUERY_BLOCK_ROWS=128",
        )
    candidate = (cwd / rest).resolve()
    if "=" not in rest or candidate.is_file():
        return _spec(name, candidate, (), origin)
    pairs: Dict[str, str] = {}
    for word in rest.split(","):
        key, eq, value = word.partition("=")
        if not eq:
            raise UsageError(
                f"{origin}: {word!r} is not DEFINE=VALUE.", "e.g. FA_TILING_QUERY_BLOCK_ROWS=128"
            )
        pairs[key.strip()] = value.strip()
    return _spec(name, None, _defines(pairs, origin, name), origin)


def parse_variants(file: Optional[str], flags: Sequence[str], cwd: Path) -> List[VariantSpec]:
    given = cwd / file if file else None  # its link itself named in a message, not its target
    specs = read_variant_file(given.parent.resolve() / given.name) if given else []
    specs += [parse_flag(text, cwd) for text in flags]
    seen = set()
    for spec in specs:
        if spec.name in seen:
            raise UsageError(
                f"{spec.origin}: variant {spec.name!r} is named twice.",
                "Give each variant its own name.",
            )
        seen.add(spec.name)
    return specs


# ---- building ----


def _baseline_commit(session: Session, env: Mapping[str, str], repo: str) -> str:
    """The commit of the installed `repo` (the one that ships FlashAttention) the variants
    start from; its build and install steps must be up to date (the bench task brings
    the workspace up to date before it builds variants)."""
    steps = plan_session(session, env, ("build", "install"))
    build = next((s for s in steps if s.spec.repo == repo and s.spec.produces), None)
    install = next((s for s in steps if s.spec.action == "vendor" and s.owner == repo), None)
    stale = [s for s in (build, install) if s is None or s.status != UP_TO_DATE]
    if build is None or install is None or stale:
        why = stale[0].reason if stale and stale[0] is not None else "no such step in the recipe"
        raise UsageError(
            f"build variants start from the installed {repo}, which is not up to date ({why}).",
            "Run cannbuild install first (with the same flags).",
        )
    commit = (build.inputs.get("source") or {}).get("commit")
    if not commit:
        raise UsageError(f"the {repo} build records no commit.", "Run cannbuild install first.")
    return str(commit)


def build_variants(
    session: Session,
    specs: Sequence[VariantSpec],
    env: Mapping[str, str],
    note: Callable[[str], None],
) -> List[BuiltVariant]:
    """Each variant walked as a plan over its own copy and prefix (build/variant.py):
    built where its inputs changed, up to date otherwise; then all validated."""
    repo = session.repo_for_op(FA_OP, "a build variant")
    commit = _baseline_commit(session, env, repo)
    sources = sources_from_lock(session.source_request())
    if sources is None:  # the plan above found the lock: only a race with `lock` gets here
        raise UsageError("the workspace's lock changed under this run.", "Run bench again.")
    run_id = new_run_id()
    out: List[BuiltVariant] = []
    with WorkspaceLock(session.ws, "cannbuild bench (variants)", session.options.wait, None):
        built: List[Tuple[VariantSpec, Variant, str]] = []
        for spec in specs:
            variant = Variant(
                root=session.ws.root / "variants" / spec.name,
                repo=repo,
                vendor_folder=session.recipe.repo(repo).vendor_folder(session.options.vendor_name),
                patch=spec.patch,
                patch_sha256=digest(spec.patch, PATCH) if spec.patch else None,
                defines=spec.defines,
            )
            progress = VariantProgress(spec.name, spec.how, note)
            failure = build_one(session, variant, sources, env, progress, run_id)
            if failure:
                note(f"variant {spec.name}: build failed: {failure}")
                out.append(
                    BuiltVariant(
                        name=spec.name,
                        vendor=None,
                        info={
                            "how": spec.how,
                            "build": f"failed: {failure}",
                            "validation": "not run",
                        },
                    )
                )
                continue
            if not progress.building:
                note(f"variant {spec.name}: up to date ({spec.how}; {repo} {commit[:12]})")
            built.append((spec, variant, "built" if progress.building else "up to date"))
        verdicts = validate_all(session, [v for _, v, _ in built], note)
        for spec, variant, how_built in built:
            verdict = verdicts[spec.name]
            ok = verdict == "PASS"
            out.append(
                BuiltVariant(
                    name=spec.name,
                    vendor=variant.vendor_dir if ok else None,
                    info={"how": spec.how, "build": how_built, "validation": verdict},
                )
            )
    return out
