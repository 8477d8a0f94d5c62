"""The `cannbuild` console script: the same task collection as `invoke` in a checkout."""

from __future__ import annotations

import os

from invoke import Program

from . import __version__


class CannbuildProgram(Program):
    """Loads `./invoke.yaml` like `invoke` does for a project, so the `cannbuild`
    key is read the same way whichever entry point is used."""

    def parse_collection(self) -> None:
        super().parse_collection()
        self.config.set_project_location(os.getcwd())
        self.config.load_project()


def main() -> None:
    from .tasks import ns

    CannbuildProgram(namespace=ns, version=__version__, name="cannbuild", binary="cannbuild").run()
