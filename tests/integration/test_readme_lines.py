"""The README's command lines outside its set-up blocks, run as written (the set-up blocks:
test_readme_container.py; the profile comparison: tests/unit/test_readme.py).

- `ascend-host`: on the emulated A2 host seen as a real one: the sandbox's sysroot as the
  machine (CANNBUILD_SYSROOT) and its git mirror as the site's mirror rule (invoke.yaml, as
  an Ascend site without gitcode.com has one); every line exits 0 (its `pip install -e .` is
  the set-up block's, run in the container test).
- `several-repos`: on a terminal 120 columns wide, in a HOME of its own: the four-repo setup
  fills at most 40 rows (issue 42: it printed 208 lines), ends with PASS, and its `source`
  line puts the four vendors on ASCEND_CUSTOM_OPP_PATH in the --repos order.
"""

from __future__ import annotations

import shlex
import shutil
import subprocess
import tempfile
from pathlib import Path

import pytest
from conftest import base_env, lay_host_side
from terminal import run_on_terminal, screen_rows

from cannbuild.sandbox import load_info

from readmeblocks import marked_block

COLS = 120
MOST_ROWS = 40


def commands(block: str):
    return [line.split("#")[0].strip() for line in block.splitlines() if line.split("#")[0].strip()]


def test_the_ascend_host_lines_run_as_written_on_a_host_that_looks_real(sandboxes, tmp_path):
    info = load_info(sandboxes["A2-8.5.0"])
    assert info is not None
    # seen as a real host, the sandbox's toolkit must already hold its host side (acl/acl.h,
    # libascendcl.so): a build through --sandbox lays it; which test runs first is xdist's
    lay_host_side(sandboxes["A2-8.5.0"], tmp_path / "host-side")
    mirrors = "".join(f'    "{prefix}": "{url}"\n' for prefix, url in info.mirrors.items())
    (tmp_path / "invoke.yaml").write_text(f"cannbuild:\n  mirrors:\n{mirrors}")
    env = base_env(CANNBUILD_SYSROOT=str(info.sysroot))
    ran = []
    for line in commands(marked_block("ascend-host")):
        if line.startswith("pip install"):
            continue  # the set-up block's own line (test_readme_container.py)
        proc = subprocess.run(
            ["bash", "-c", line], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=900
        )
        assert proc.returncode == 0, (line, proc.stdout[-3000:], proc.stderr[-3000:])
        assert "Traceback" not in proc.stderr, line
        ran.append(shlex.split(line)[1])
    assert ran == ["doctor", "setup", "build", "status"]
    status = proc.stdout
    assert "--soc=ascend910_93" in status  # the A3 build of the line before


@pytest.fixture
def short_home():
    """A HOME as short as a reader's (/home/reader): the rows count wrapped paths."""
    home = Path(tempfile.mkdtemp(prefix="cbh-", dir="/tmp"))
    yield home
    shutil.rmtree(home, ignore_errors=True)


def test_the_four_repo_setup_runs_as_written_in_at_most_40_rows(tmp_path, short_home):
    env = base_env(HOME=str(short_home))
    setup, source = commands(marked_block("several-repos"))
    code, out = run_on_terminal(["bash", "-c", setup], env, str(tmp_path), cols=COLS)
    rows = screen_rows(out, COLS)
    (tmp_path / "terminal.txt").write_text("\n".join(rows))
    assert code == 0, out[-4000:]
    assert "validation: PASS (target sandbox, 4 repos)" in out
    assert len(rows) <= MOST_ROWS, "\n".join(rows)
    assert "Traceback" not in out
    shown = subprocess.run(
        ["bash", "-c", f'{source} && printf %s "$ASCEND_CUSTOM_OPP_PATH"'],
        env=env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert shown.returncode == 0, shown.stderr
    vendors = [Path(p).name for p in shown.stdout.split(":") if p]
    assert vendors[:4] == ["custom_transformer", "custom_math", "custom_nn", "custom_cv"], vendors
