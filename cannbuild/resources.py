"""Where the repo's data folders are: beside the package in a checkout, inside it when installed."""

from __future__ import annotations

from pathlib import Path

from .errors import CannbuildError

_PACKAGE = Path(__file__).resolve().parent
# A user's recipes (`<train>.toml`) and release facts (`facts/`, `sandbox/`), in the folder a
# command runs in.
USER_DATA = "cannbuild-recipes"


def data_dir(name: str) -> Path:
    """`templates`, `kernels` or `recipes`."""
    for candidate in (_PACKAGE / "_data" / name, _PACKAGE.parent / name):
        if candidate.is_dir():
            return candidate
    raise CannbuildError(
        f"cannbuild's {name}/ folder is missing (looked in {_PACKAGE / '_data'} and {_PACKAGE.parent}).",
        "Reinstall cannbuild (pip install -e . in a checkout, or pip install cannbuild).",
    )
