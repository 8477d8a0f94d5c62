"""What deriving the toolkit needs from the checkouts costs (bench_pipeline.py --part derive).

* In process, on the sandbox's A3 / CANN 9.0.0 stand-in checkout after `cannbuild fetch`
  (and on a real ops-transformer tree with --real DIR, e.g. `git archive v9.0.0` of
  cannmirror/ops-transformer with the opbase pin unpacked in third_party/opbase): the
  derivation of a cold run (the memo removed: cmake and include scan, then the toolkit
  checked) and of a no-op (the memo read, the toolkit checked), medians of --runs.
* End to end, with --baseline DIR (a copy of cannbuild before the derivation): the cold
  `cannbuild setup --sandbox` and its no-op rerun of this checkout and of the baseline,
  each on a sandbox of its own, interleaved round by round.
"""

from __future__ import annotations

import os
import shutil
import statistics
import subprocess
import time
from pathlib import Path
from typing import Callable, Dict, List, Optional

from cannbuild.build.derived import checked_out, derive, derived_checks, step_needs
from cannbuild.build.plan import selected
from cannbuild.host.toolkit import host_arch
from cannbuild.recipes import load_recipe
from cannbuild.resources import data_dir
from cannbuild.sandbox import load_info
from cannbuild.workspace import Workspace

from common import cannbuild_argv, compile_package, fmt, run_measured, sandbox_create_argv, summary


def _median_ms(fn: Callable[[], object], runs: int) -> Dict[str, float]:
    times = []
    for _ in range(runs):
        start = time.perf_counter()
        fn()
        times.append(time.perf_counter() - start)
    return summary(times)


def in_process(
    tmp: Path, sandbox: Path, env: Dict[str, str], runs: int, real: Optional[Path]
) -> None:
    ws_dir = tmp / "derive"
    ws_dir.mkdir()
    subprocess.run(
        cannbuild_argv("fetch", "--sandbox"), cwd=ws_dir, env=env, check=True, capture_output=True
    )
    ws = Workspace(root=ws_dir / ".cannbuild")
    recipe = load_recipe(data_dir("recipes") / "9.0.toml")
    specs = [s for s in recipe.steps if selected(s, (), ())]
    info = load_info(sandbox)
    assert info is not None
    home = info.toolkit
    ids = checked_out(ws, ["ops-transformer"])

    def cold() -> None:
        shutil.rmtree(ws.derived_memo, ignore_errors=True)
        needs, _ = step_needs(recipe, specs, ws, ("flash_attention_score",), ids, keep=True)
        derived_checks(needs, [], home, host_arch())

    def noop() -> None:
        needs, _ = step_needs(recipe, specs, ws, ("flash_attention_score",), ids, keep=True)
        assert all(n.cached for n in needs)
        derived_checks(needs, [], home, host_arch())

    c = _median_ms(cold, runs)
    print(fmt("derive, stand-in 9.0.0: cold", c))
    print(fmt("derive, stand-in 9.0.0: no-op (memo)", _median_ms(noop, runs), c))
    if real is None:
        return
    memo = tmp / "real-memo"
    opbase = real / "third_party/opbase"

    def real_run(keep_memo: bool) -> None:
        if not keep_memo:
            shutil.rmtree(memo, ignore_errors=True)
        derive(
            repo="ops-transformer",
            checkout=real,
            commit="0" * 40,
            ops=("flash_attention_score",),
            opbase=opbase if opbase.is_dir() else None,
            opbase_commit="1" * 40 if opbase.is_dir() else "",
            memo=memo,
        )

    c = _median_ms(lambda: real_run(False), runs)
    print(fmt(f"derive, {real.name}: cold", c))
    print(fmt(f"derive, {real.name}: no-op (memo)", _median_ms(lambda: real_run(True), runs), c))


def end_to_end(tmp: Path, sandbox: Path, env: Dict[str, str], runs: int, baseline: Path) -> None:
    baseline = baseline.resolve()
    compile_package(baseline)
    old_env = {**env, "CANNBUILD_SANDBOX_DIR": str(tmp / "sb-derive-baseline")}
    old_env["PYTHONPATH"] = os.pathsep.join([str(baseline), os.environ.get("PYTHONPATH", "")])
    subprocess.run(
        sandbox_create_argv(tmp / "sb-derive-baseline", "A3", "9.0.0"),
        check=True,
        capture_output=True,
        env=old_env,
    )
    flags = ("--sandbox", "--variant", "A3", "--cann", "9.0.0")
    kinds = {"this checkout": env, baseline.name: old_env}
    cold: Dict[str, List[float]] = {k: [] for k in kinds}
    noop: Dict[str, List[float]] = {k: [] for k in kinds}
    for i in range(runs):
        for name, run_env in kinds.items():
            ws = tmp / f"e2e-{i}-{name.replace(' ', '-')}"
            ws.mkdir()
            cold[name].append(
                run_measured(
                    cannbuild_argv("setup", *flags), cwd=ws, env=run_env, capture_output=True
                )[0]
            )
            noop[name].append(
                run_measured(
                    cannbuild_argv("setup", *flags), cwd=ws, env=run_env, capture_output=True
                )[0]
            )
    for what, times in (("cold setup A3 9.0.0", cold), ("no-op setup A3 9.0.0", noop)):
        base = summary(times[baseline.name])
        print(fmt(f"{what}, {baseline.name}", base))
        print(fmt(f"{what}, this checkout", summary(times["this checkout"]), base))
        pairs = zip(times["this checkout"], times[baseline.name])
        print(
            f"  {what}: this / {baseline.name} per round, median {statistics.median(n / o for n, o in pairs):.3f}x"
        )
