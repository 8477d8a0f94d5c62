"""The smallest recipe cannbuild reads: one repo, one build step whose `env` the test
chooses (a hostile value, a secret), for the cases that render recipe values; and the stamp
a successful step leaves, for the plan tests that stand in for a run."""

from __future__ import annotations

import os
from pathlib import Path
from typing import Dict, List, Optional

from cannbuild.build.actions import ActionContext
from cannbuild.build.plan import PlannedStep, StepContext, recipe_templates, walk
from cannbuild.build.runner import NoProgress, Progress, RunLogs, StepOutcome, run_step
from cannbuild.build.stamps import write_stamp
from cannbuild.recipes import load_recipe
from cannbuild.render.sandbox import RENDER_CPU_ENV
from cannbuild.workspace import Workspace

TEMPLATE = """
[recipe]
name = "tiny"
train = "8.5"
opbase = "source"

[repos.lib]
url = "https://example.invalid/lib.git"
tag = "v1"

[[steps]]
name = "build"
repo = "lib"
command = "steps/build.j2"
env = {{ {env} }}

[validate]
library = "lib.so"
symbols = []
"""


def deadline_for(bound: str) -> Dict[str, str]:
    """The environment a hostile render runs under: a runaway (its bound RENDER_CPU_SECONDS)
    meets a tenth of the deadline, by the same SIGPROF, 0.45 s less CPU a case; one meant for
    another bound keeps the default, as it must take CPU on its way to that bound."""
    return {RENDER_CPU_ENV: "0.05"} if bound == "RENDER_CPU_SECONDS" else {}


def tiny_recipe(env: str) -> str:
    """The recipe's text, its step's env table holding `env` (TOML `KEY = value, ...`)."""
    return TEMPLATE.format(env=env)


def build_step(recipe_file: Path, ws: Workspace) -> PlannedStep:
    """The tiny recipe's `build` step as the plan walk makes it (its env, command, stamp
    inputs), against a checkout folder in `ws` and an 8.5.0 toolkit."""
    recipe = load_recipe(recipe_file)
    src = ws.checkout("lib")
    src.mkdir(parents=True, exist_ok=True)
    ctx = StepContext(
        values={"soc": "ascend910b", "jobs": 2, "src": {"lib": str(src)}},
        sources={"lib": {"commit": "a" * 40, "nested": {}, "third_party": {}}},
        toolkit={"version": "8.5.0", "path": "/usr/local/Ascend/cann"},
        hashed_env={},
        base_env={"PATH": os.environ["PATH"]},
        overlay_env=None,
        extra_env={},
        recipe=recipe.name,
        templates=recipe_templates(recipe),
    )
    return walk(recipe, ctx, ws, ("build",))[0]


def run_alone(
    step: PlannedStep, ws: Workspace, toolkit_home: Path, progress: Optional[Progress] = None
) -> StepOutcome:
    """Run `step` as a build runs it (its log, its stamp), outside any pipeline."""
    actions = ActionContext(
        toolkit_home=toolkit_home,
        overlay=ws.root / "overlay",
        stage=ws.root / "stage",
        opp=ws.root / "opp",
        vendor_dirs={"lib": ws.root / "opp" / "vendors" / "custom_lib"},
    )
    logs = RunLogs(ws=ws, run_id="r1")
    return run_step(step, ws, logs, actions, progress or NoProgress(), [])


def stamp_as_done(ws: Workspace, step: PlannedStep, artifacts: List[Dict[str, object]]) -> None:
    """The stamp a successful run of `step` leaves in `ws` (run r1, its planned inputs)."""
    write_stamp(
        ws,
        step.name,
        run_id="r1",
        input_hash=step.input_hash,
        inputs=step.inputs,
        artifacts=artifacts,
        requires=[],
        duration_s=0.1,
        log=ws.logs / "x.log",
    )
