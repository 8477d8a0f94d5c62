"""The rendered CI installs the exact cannbuild that rendered it, and lands at the git top;
ci and container from a sandbox lock.

Slow-ish (a wheel build and a fresh venv installing it with its dependencies from the
package index), so it lives with the integration tests.
"""

from __future__ import annotations

import hashlib
import os
import subprocess
import sys
import venv
from pathlib import Path

import yaml
from msgspec.structs import replace

from cannbuild.sources.lock import write_lock

from lockdata import sample_lock

ROOT = Path(__file__).resolve().parents[2]


def cannbuild(*args: str, cwd: Path, python: str = sys.executable) -> subprocess.CompletedProcess:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CANNBUILD_")}
    if python != sys.executable:  # another Python runs its own cannbuild, not PYTHONPATH's
        env.pop("PYTHONPATH", None)
    return subprocess.run(
        [python, "-m", "cannbuild", *args], cwd=cwd, env=env, capture_output=True, text=True
    )


def test_the_workflow_lands_at_the_git_top_and_installs_what_rendered_it(tmp_path):
    project = tmp_path / "project"
    (project / "bench").mkdir(parents=True)
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    proc = cannbuild("ci", cwd=project / "bench")  # run from a subfolder
    assert proc.returncode == 0, proc.stderr
    assert not (project / "bench" / ".github").exists()
    workflow = project / ".github" / "workflows" / "cannbuild.yml"
    assert (project / ".github" / "actionlint.yaml").is_file()
    wheels = list((project / ".github" / "cannbuild").glob("cannbuild-*.whl"))
    assert len(wheels) == 1
    # rendering again gives the same wheel, byte for byte (the workflow pins its sha256)
    first = wheels[0].read_bytes()
    assert cannbuild("ci", cwd=project).returncode == 0
    assert wheels[0].read_bytes() == first

    # a fresh venv runs the install step exactly as the workflow says
    flow = yaml.safe_load(workflow.read_text())
    step = next(
        s for s in flow["jobs"]["package"]["steps"] if s.get("name", "").startswith("Install")
    )
    env_dir = tmp_path / "fresh"
    venv.EnvBuilder(with_pip=True).create(env_dir)
    env = {**os.environ, "PATH": f"{env_dir / 'bin'}{os.pathsep}{os.environ['PATH']}"}
    env.pop("PYTHONPATH", None)
    env.pop("VIRTUAL_ENV", None)
    installed = subprocess.run(
        ["bash", "-e", "-c", step["run"]], cwd=project, env=env, capture_output=True, text=True
    )
    assert installed.returncode == 0, installed.stdout[-2000:] + installed.stderr[-2000:]
    python = str(env_dir / "bin" / "python")
    where = subprocess.run(
        [python, "-c", "import cannbuild, pathlib; print(pathlib.Path(cannbuild.__file__).parent)"],
        capture_output=True, text=True, check=True, cwd=tmp_path, env=env,  # not PYTHONPATH's
    ).stdout.strip()  # fmt: skip
    assert where.startswith(str(env_dir)), where
    for rel in ("ci.py", "build/compile_cache.py", "container/context.py"):
        ours = hashlib.sha256((ROOT / "cannbuild" / rel).read_bytes()).hexdigest()
        theirs = hashlib.sha256((Path(where) / rel).read_bytes()).hexdigest()
        assert ours == theirs, rel

    # the installed wheel renders the build context as the workflow's next step does, and the
    # image installs that same wheel (a CI job is no checkout; pip recorded the wheel file)
    render = next(
        s for s in flow["jobs"]["package"]["steps"] if s.get("name", "").startswith("Render")
    )
    variant, cann = flow["jobs"]["package"]["strategy"]["matrix"]["variant"][0], "8.5.0"
    soc = "ascend910_93" if variant == "A3" else "ascend910b"
    write_lock(project / "locks" / f"{variant}-{cann}.lock", replace(sample_lock(cann), soc=soc))
    command = render["run"].replace("${{ matrix.variant }}", variant)
    command = command.replace("${{ matrix.cann }}", cann)
    outputs = tmp_path / "github-output"  # what the runner gives a step for its outputs
    rendered = subprocess.run(
        ["bash", "-e", "-c", command],
        cwd=project,
        env={**env, "GITHUB_OUTPUT": str(outputs)},
        capture_output=True,
        text=True,
    )
    assert rendered.returncode == 0, rendered.stderr[-2000:]
    assert outputs.read_text() == "platform=linux/amd64\n"  # the lock's arch, for the build
    dockerfile = (project / "ctx" / "Dockerfile").read_text()
    assert f"pip install --no-cache-dir /opt/cannbuild-wheel/{wheels[0].name}" in dockerfile
    assert (project / "ctx" / "cannbuild-wheel" / wheels[0].name).read_bytes() == first

    # a wheel altered after rendering (a byte of a member's data) is refused by the same step
    middle = len(first) // 2
    wheels[0].write_bytes(first[:middle] + bytes([first[middle] ^ 1]) + first[middle + 1 :])
    tampered = subprocess.run(
        ["bash", "-e", "-c", step["run"]], cwd=project, env=env, capture_output=True, text=True
    )
    assert tampered.returncode != 0 and "FAILED" in tampered.stdout + tampered.stderr

    # the installed cannbuild is no checkout, and the wheel it was installed from no longer
    # holds its files: it renders only with a requirement that resolves
    (tmp_path / "elsewhere").mkdir()
    subprocess.run(["git", "init", "-q", str(tmp_path / "elsewhere")], check=True)
    refused = cannbuild("ci", cwd=tmp_path / "elsewhere", python=python)
    assert refused.returncode == 2 and "--cannbuild-spec" in refused.stderr, refused.stderr
    spec = "cannbuild @ git+https://git.example.com/cannbuild.git@0123abc"
    ok = cannbuild("ci", "--cannbuild-spec", spec, cwd=tmp_path / "elsewhere", python=python)
    assert ok.returncode == 0, ok.stderr
    text = (tmp_path / "elsewhere" / ".github" / "workflows" / "cannbuild.yml").read_text()
    assert f"python -m pip install '{spec}'" in text


def test_outside_a_git_repository_the_workflow_needs_out(tmp_path):
    proc = cannbuild("ci", cwd=tmp_path)
    assert proc.returncode == 2 and "not inside a git repository" in proc.stderr
    assert "Traceback" not in proc.stderr and not (tmp_path / ".github").exists()
    out = tmp_path / "flows" / "cannbuild.yml"
    proc = cannbuild("ci", "--provider", "gitlab", "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    (wheel,) = (tmp_path / "flows" / ".gitlab" / "cannbuild").glob("*.whl")
    assert out.is_file()
    # a render again replaces the wheel whole (a new file renamed in), never writes into the
    # one the committed workflow's sha256 names: a stop half-way leaves the old one
    before = wheel.stat().st_ino
    proc = cannbuild("ci", "--provider", "gitlab", "--out", str(out), cwd=tmp_path)
    assert proc.returncode == 0, proc.stderr
    assert wheel.stat().st_ino != before


def test_ci_and_container_from_a_sandbox_lock(cli, tmp_path):
    assert cli("lock").returncode == 0
    proc = cli("container", "--sandbox", "--out", str(tmp_path / "ctx"), sandbox=False)
    assert proc.returncode == 0, proc.stderr
    assert (tmp_path / "ctx" / "cannbuild-src" / "pyproject.toml").is_file()
    assert (
        "cannbuild setup --locked --soc ascend910b --sandbox"
        in (tmp_path / "ctx" / "Dockerfile").read_text()
    )
    proc = cli("ci", "--provider", "gitlab", "--out", str(tmp_path / "gl.yml"), sandbox=False)
    assert proc.returncode == 0 and (tmp_path / "gl.yml").read_text().startswith(
        "# Rendered by cannbuild"
    )
    subprocess.run(["git", "init", "-q", str(cli.cwd)], check=True)  # the project's repository
    proc = cli("ci", "--provider", "github", sandbox=False)
    assert proc.returncode == 0, proc.stderr
    assert (cli.cwd / ".github" / "workflows" / "cannbuild.yml").is_file()
    config = cli.cwd / ".github" / "actionlint.yaml"
    assert "ascend-npu" in config.read_text()
    config.write_text("self-hosted-runner:\n  labels: [mine]\n")
    proc = cli("ci", "--provider", "github", sandbox=False)
    assert "exists, left as it is" in proc.stderr and "mine" in config.read_text()
