"""`python -m cannbuild` and the `cannbuild` console script.

The collector is set before cli.py and the tasks are imported: the imports are most of
the objects a short run makes (see interpreter.py).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from .interpreter import tune_collector
from .lazy import lazy_module

if TYPE_CHECKING:
    from . import cli
else:  # imported by main(), once the collector is tuned
    cli = lazy_module("cannbuild.cli")


def main() -> None:
    tune_collector()
    cli.main()


if __name__ == "__main__":
    main()
