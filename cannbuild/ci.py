"""CI workflows rendered from the recipes in use: a matrix over variants and CANN versions.

Each entry renders its container from its own lock (locks/<variant>-<cann>.lock),
builds with a build cache and uploads the packages and the report; a validation
job on self-hosted NPU runners runs `setup --require-device`.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any, Dict, List, Sequence

from . import __version__
from .errors import UsageError
from .host.versions import parse_cann_version
from .recipes import available, load_recipe
from .render import ci_env
from .resources import data_dir

PROVIDERS = {
    "github": ("github.yml.j2", ".github/workflows/cannbuild.yml"),
    "gitlab": ("gitlab-ci.yml.j2", ".gitlab-ci.yml"),
}


def image_versions(cwd: Path) -> List[str]:
    versions = {}
    for path in available(cwd).values():
        recipe = load_recipe(path)
        if recipe.image_cann:
            try:
                versions[recipe.image_cann] = parse_cann_version(recipe.image_cann)
            except ValueError:
                raise UsageError(
                    f"{path}: image_cann {recipe.image_cann!r} is not a CANN version.",
                    "Use the image's version as its tag spells it, e.g. 8.5.0 or 8.3.rc1.",
                ) from None
    return sorted(versions, key=versions.__getitem__)


def render_ci(
    provider: str,
    cwd: Path,
    variants: Sequence[str] = ("A2", "A3"),
    npu_label: str = "ascend-npu",
    python: str = "3.11",
) -> Dict[str, Any]:
    """The workflow's text and default path, and companion files (path -> text) it needs."""
    if provider not in PROVIDERS:
        raise UsageError(
            f"--provider {provider!r} is not supported.", f"Use one of {', '.join(PROVIDERS)}."
        )
    template, default_out = PROVIDERS[provider]
    canns = image_versions(cwd)
    if not canns:
        raise UsageError(
            "no recipe in use names a container image version (image_cann).",
            "Add image_cann to [recipe].",
        )
    text = (
        ci_env(data_dir("templates") / "ci")
        .get_template(template)
        .render(
            version=__version__,
            variants=list(variants),
            canns=canns,
            npu_label=npu_label,
            python=python,
        )
    )
    extras: Dict[str, str] = {}
    if provider == "github":
        # actionlint rejects runner labels it does not know unless its config names them
        labels = [npu_label, *variants, *(f"cann-{v}" for v in canns)]
        extras[".github/actionlint.yaml"] = (
            f"# Rendered by cannbuild {__version__}: the self-hosted NPU runners' labels.\n"
            f"self-hosted-runner:\n  labels: {json.dumps(labels)}\n"
        )
    return {"path": default_out, "text": text, "extras": extras}
