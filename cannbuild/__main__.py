"""`python -m cannbuild` and the `cannbuild` console script.

The collector is set before cli.py and the tasks are imported: the imports are most of
the objects a short run makes (see interpreter.py).
"""

from __future__ import annotations

import os
import sys

from .interpreter import tune_collector


def _without_cwd(path: list) -> list:
    """`path` less the current folder that `python -m` puts first: a user's `invoke.py`
    or `jinja2.py` there would stand in for the library (cannbuild itself is imported by
    then, so a checkout run from its own folder still finds its modules)."""
    cwd = os.getcwd()
    return path[1:] if path and path[0] in ("", cwd) else path


def main() -> None:
    tune_collector()
    from .cli import main as run

    run()


if __name__ == "__main__":
    sys.path[:] = _without_cwd(sys.path)
    main()
