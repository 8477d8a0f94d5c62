"""`cannbuild lock --cann V --soc S` needs no CANN: the recipe, the version, the SoC and the
remote refs.  Here the "network" is the sandbox's gitcode mirror, through cannbuild.mirrors
(as a site without direct access would use it), and the machine has no toolkit at all."""

from __future__ import annotations

import json
import subprocess
import sys

from conftest import base_env

from cannbuild.sources.lock import read_lock


def test_a_lock_is_made_without_a_toolkit_and_pins_what_a_host_would(cli, tmp_path):
    assert cli("lock").returncode == 0  # the same sources, locked on the (emulated) host
    on_host = read_lock(cli.lock)
    mirror = json.loads((cli.sandbox / "sandbox.json").read_text())["mirror"]
    laptop = tmp_path / "laptop"
    laptop.mkdir()
    (tmp_path / "empty-root").mkdir()
    env = base_env(
        CANNBUILD_MIRRORS=f"https://gitcode.com/=file://{mirror}/",
        CANNBUILD_SYSROOT=str(tmp_path / "empty-root"),  # no /usr/local/Ascend, no npu-smi
    )
    argv = [sys.executable, "-m", "cannbuild", "lock", "--recipe", "8.5", "--cann", "8.5.0"]
    no_soc = subprocess.run(argv, cwd=laptop, env=env, capture_output=True, text=True)
    assert no_soc.returncode == 2 and "needs --soc" in no_soc.stderr
    proc = subprocess.run(
        [*argv, "--soc", "ascend910b"], cwd=laptop, env=env, capture_output=True, text=True
    )
    assert proc.returncode == 0, proc.stderr
    assert "without a toolkit" in proc.stderr + proc.stdout
    made = read_lock(laptop / "cannbuild.lock")  # a real lock: in the project, not sandboxed
    assert not made.sandbox and made.toolkit_version == "8.5.0" and made.soc == "ascend910b"
    assert made.recipe == on_host.recipe
    # the sandbox also locks the repos it lays its toolkit's host side out from; a real host
    # has them installed and locks none of them
    toolkit_only = {"ge", "metadef", "runtime", "asc-devkit", "libboundscheck"}
    assert {r.name for r in on_host.repos} >= toolkit_only
    assert [(r.name, r.ref, r.commit) for r in made.repos] == [
        (r.name, r.ref, r.commit) for r in on_host.repos if r.name not in toolkit_only
    ]
    assert {a.sha256 for a in made.third_party} == {a.sha256 for a in on_host.third_party}
    assert "file://" not in (laptop / "cannbuild.lock").read_text()  # upstream URLs, no mirror
