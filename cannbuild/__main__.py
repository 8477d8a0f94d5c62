"""`python -m cannbuild` and the `cannbuild` console script.

The collector is set before cli.py and the tasks are imported: the imports are most of
the objects a short run makes (see interpreter.py).
"""

from __future__ import annotations

from .interpreter import tune_collector


def main() -> None:
    tune_collector()
    from .cli import main as run

    run()


if __name__ == "__main__":
    main()
