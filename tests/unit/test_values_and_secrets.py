"""Recipe and template values are bounded data, secrets are known by their names, and a flag
value never becomes a line of a rendered Dockerfile or workflow (issue 25).

The hostile command lines run through the CLI in a process of their own: exit 2, one
paragraph, no traceback, nothing written, and a timeout so a render that runs away fails
the test instead of hanging it."""

from __future__ import annotations

import hashlib
import json
import os
import subprocess
from pathlib import Path
from typing import Dict

import pytest

from cannbuild.errors import UsageError
from cannbuild.redact import fingerprint, redact_data, redact_env, secret_name
from cannbuild.render import templates as render
from cannbuild.render.templates import render_value
from cannbuild.workspace import Workspace

from clirun import cannbuild
from lockdata import sample_lock
from tinyrecipe import build_step, deadline_for, run_alone, tiny_recipe

HOSTILE_RUN = 60  # seconds: each hostile case is refused in about one; unbounded, minutes


def snapshot(folder: Path) -> Dict[str, object]:
    """Every path under `folder`, with its bytes or link target: compared byte for byte."""
    found: Dict[str, object] = {}
    for path in sorted(folder.rglob("*")):
        key = str(path.relative_to(folder))
        if path.is_symlink():
            found[key] = ("link", os.readlink(path))
        elif path.is_file():
            found[key] = ("file", path.read_bytes())
        else:
            found[key] = ("dir",)
    return found


def refused(proc: subprocess.CompletedProcess, *needles: str) -> None:
    out = proc.stdout + proc.stderr
    assert proc.returncode == 2, out
    assert "Traceback" not in out, out
    for needle in needles:
        assert needle in out, out


# --- recipe values are bounded data ----------------------------------------------------


def write_recipe(
    folder: Path, extra: str, command: str = "bash build.sh --soc={{ soc }}\n"
) -> Path:
    (folder / "steps").mkdir(parents=True, exist_ok=True)
    (folder / "steps" / "build.j2").write_text(command)
    path = folder / "tiny.toml"
    path.write_text(tiny_recipe(f"EXTRA = {json.dumps(extra)}"))
    return path


@pytest.mark.parametrize(
    "value, command, bound",
    [
        ("{{ 10 ** 10000000 }}", None, "RENDER_CPU_SECONDS"),  # was 32 s of CPU, then a traceback
        ("{{ 'a' * 300000000 }}", None, "RENDER_MEMORY_BYTES"),  # was 1.2 GB, then E2BIG
        ("{{ 'a' * 70000 }}", None, "MAX_VALUE_CHARS"),  # builds, but is no recipe value
        (
            "plain",
            "bash build.sh {{ 'x' * 300000000 }}\n",
            "RENDER_MEMORY_BYTES",
        ),  # a step template
    ],
    ids=["power", "repeat", "too-long", "command-template"],
)
def test_a_recipe_value_past_a_bound_is_refused_fast_naming_it(
    tree, tmp_path, value, command, bound
):
    tree.toolkit_cann("8.5.0")
    project = tmp_path / "project"
    project.mkdir()
    if command is None:
        recipe = write_recipe(project, value)
    else:
        recipe = write_recipe(project, value, command)
    before = snapshot(project)
    proc = cannbuild("plan",
        "--sysroot", str(tree.root),
        "--soc", "ascend910b",
        "--recipe", str(recipe),
        cwd=project,
        timeout=HOSTILE_RUN,
        **deadline_for(bound),
    )  # fmt: skip
    refused(proc, str(recipe), "step 'build'", bound)
    assert snapshot(project) == before


def test_a_plain_recipe_plans_through_the_same_route(tree, tmp_path):
    """The refusals above come from the values, not from the command line."""
    tree.toolkit_cann("8.5.0")
    recipe = write_recipe(tmp_path, "{{ soc | upper }}-{{ 2 ** 10 }}")
    proc = cannbuild("plan", "--json", "--sysroot", str(tree.root), "--soc", "ascend910b", "--recipe", str(recipe),
        cwd=tmp_path,
        timeout=HOSTILE_RUN,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert json.loads(proc.stdout)["steps"][0]["env"]["EXTRA"] == "ASCEND910B-1024"


CONTEXT = {"cann": {"release": "8.5.0"}, "soc": "ascend910b", "jobs": 8}


@pytest.mark.parametrize(
    "template, bound",
    [
        # integers that take seconds to compute (4096 bits, the old bound, are no threat)
        ("{{ 7 ** 10000000 }}", "RENDER_CPU_SECONDS"),
        ("{{ (10 ** 5000000) * (10 ** 5000000) }}", "RENDER_CPU_SECONDS"),
        ("{{ [1] * 300000000 }}", "RENDER_MEMORY_BYTES"),
        ("{{ (['x' * 1000] * 1000) | join(',') }}", "MAX_VALUE_CHARS"),
        ("{{ ','.join(['x' * 100000] * 5) }}", "MAX_VALUE_CHARS"),
        ("{{ '%0999999999d' % 1 }}", "RENDER_MEMORY_BYTES"),
        ("{{ '%*d' % (999999999, 1) }}", "RENDER_MEMORY_BYTES"),
        ("{{ '%999999999s' | format('x') }}", "RENDER_MEMORY_BYTES"),
        ("{{ '{:999999999}'.format(1) }}", "RENDER_MEMORY_BYTES"),
        ("{{ '{:{w}}'.format(1, w=999999999) }}", "RENDER_MEMORY_BYTES"),
        ("{{ 'a'.center(999999999) }}", "RENDER_MEMORY_BYTES"),
        ("{{ 'a' | center(999999999) }}", "RENDER_MEMORY_BYTES"),
        ("{{ ('x\n' * 1000) | indent(999999) }}", "RENDER_MEMORY_BYTES|RENDER_CPU_SECONDS"),
        ("{{ ('a' * 200000).replace('a', 'bb') }}", "MAX_VALUE_CHARS"),
        ("{{ ('a' * 1000) | replace('a', 'b' * 1000) }}", "MAX_VALUE_CHARS"),
        # 3.6 GB built 60,000 characters at a time (and 1 GB of indent above): which bound
        # such a render meets first depends on the host (CI met the CPU deadline under
        # load); either stops it, named
        (
            "{{ ('a' * 60000).translate({97: 'b' * 60000}) }}",
            "RENDER_MEMORY_BYTES|RENDER_CPU_SECONDS",
        ),
        ("{{ ('\t' * 100).expandtabs(1000000) }}", "RENDER_MEMORY_BYTES"),
        ("{{ [1, 2] | batch(1000000000, 0) | list }}", "RENDER_MEMORY_BYTES"),
        ("{{ range(1000000000) | join(',') }}", "MAX_RANGE"),  # Jinja's sandbox: 100000
        (
            "{% for i in range(10000) %}{% for j in range(10000) %}{% endfor %}{% endfor %}",
            "RENDER_CPU_SECONDS",
        ),
        (
            "{% set ns = namespace(s='a') %}{% for i in range(60) %}"
            "{% set ns.s = ns.s ~ ns.s %}{% endfor %}{{ ns.s | length }}",
            "RENDER_MEMORY_BYTES",
        ),
        (
            "{% macro f(s, n) %}{{ f(s ~ s, n - 1) if n else s | length }}{% endmacro %}"
            "{{ f('a', 60) }}",
            "RENDER_MEMORY_BYTES",
        ),
        (
            "{% set x %}{% for i in range(10000) %}{{ 'x' * 200000 }}{% endfor %}{% endset %}"
            "{{ x | length }}",
            "RENDER_MEMORY_BYTES",
        ),
        ("{{ '%s' % ('x' * 100000) }}", "MAX_VALUE_CHARS"),
    ],
)
def test_what_a_template_computes_is_bounded(template, bound, monkeypatch):
    for name, value in deadline_for(bound).items():
        monkeypatch.setenv(name, value)
    with pytest.raises(UsageError, match=bound) as err:
        render_value(template, CONTEXT, "[repos.opbase] tag")
    assert "[repos.opbase] tag" in err.value.message


@pytest.mark.parametrize(
    "template",
    [
        "{{ 1 // 0 }}",
        "{{ 'a' - 1 }}",
        "{{ 10.0 ** 1000 }}",
        "{% for x in 1 %}{% endfor %}",
        "{{ range(10 ** 30) }}",
        "{% macro f(n) %}{{ f(n) }}{% endmacro %}{{ f(1) }}",
        "{{ lipsum(1000000000) }}",
    ],
)
def test_a_template_that_fails_in_python_is_a_usage_error(template, monkeypatch):
    monkeypatch.setenv(*deadline_for("RENDER_CPU_SECONDS").popitem())  # lipsum runs away
    with pytest.raises(UsageError, match="does not render"):
        render_value(template, CONTEXT, "[repos.opbase] tag")


@pytest.mark.parametrize(
    "template, text",
    [
        ("v{{ cann.release }}", "v8.5.0"),
        ("{{ cann.release | replace('.', '_') }}-{{ soc | upper }}", "8_5_0-ASCEND910B"),
        ("{{ 2 ** 64 }}", "18446744073709551616"),
        ("{{ jobs * 2 }}/{{ jobs // 3 }}/{{ '%03d' % jobs }}", "16/2/008"),
        ("{{ '{:>6}'.format(soc[-4:]) }}", "  910b"),
        ("{{ ['a', 'b'] | join(',') }}{% for i in range(3) %}{{ i }}{% endfor %}", "a,b012"),
    ],
)
def test_ordinary_recipe_values_still_render(template, text):
    assert render_value(template, CONTEXT, "x") == text


def test_a_template_compiled_by_another_environment_still_renders_within_the_bounds(tmp_path):
    """A workspace's template cache from an unbounded environment: the bounds are the
    render's process, not its code, so the cached code is bounded all the same."""
    import jinja2

    folder, cache = tmp_path / "t", tmp_path / "cache"
    folder.mkdir()
    cache.mkdir()
    (folder / "r.j2").write_text("{{ 'a' * n }}")
    old = jinja2.Environment(
        loader=jinja2.FileSystemLoader(str(folder)),
        bytecode_cache=jinja2.FileSystemBytecodeCache(str(cache)),
    )
    old.get_template("r.j2")  # the cache now holds the unbounded code
    assert list(cache.iterdir())
    with pytest.raises(render.TemplateFailure, match="RENDER_MEMORY_BYTES"):
        render.Templates([folder], cache).render("r.j2", {"n": 300_000_000})


# --- secrets by name -----------------------------------------------------------------


@pytest.mark.parametrize(
    "name, secret",
    [
        ("DB_PASSWORD", True),
        ("MY_API_TOKEN", True),
        ("AWS_SECRET_ACCESS_KEY", True),
        ("SIGNING_KEY", True),
        ("PGPASSWD", True),
        ("github_token", True),
        ("X-Api-Key", True),
        ("GOOGLE_APPLICATION_CREDENTIALS", True),
        ("PATH", False),
        ("PWD", False),
        ("ASCEND_HOME_PATH", False),
        ("MONKEY", False),
        ("KEYBOARD", False),
        ("CC", False),
    ],
)
def test_a_secret_is_known_by_its_name(name, secret):
    assert secret_name(name) is secret


def test_env_and_data_hide_values_by_name_and_credentials_by_shape():
    env = {"DB_PASSWORD": "hunter2", "MIRROR": "https://u:s3cret@m/x", "CC": "gcc", "MY_TOKEN": ""}
    assert redact_env(env) == {
        "DB_PASSWORD": "***",
        "MIRROR": "https://***@m/x",
        "CC": "gcc",
        "MY_TOKEN": "",  # nothing to hide
    }
    data = {"env": {"DB_PASSWORD": "x", "PIN_TOKEN": 1234}, "steps": [{"MY_API_TOKEN": "y"}]}
    assert redact_data(data) == {
        "env": {"DB_PASSWORD": "***", "PIN_TOKEN": "***"},
        "steps": [{"MY_API_TOKEN": "***"}],
    }


def planned_with_secret(tmp_path: Path, password: str, ws: Workspace):
    folder = tmp_path / "recipes"
    (folder / "steps").mkdir(parents=True, exist_ok=True)
    # the step prints the sha256 of the value its process got (the real one, not ***)
    (folder / "steps" / "build.j2").write_text(
        """bash -c {{ 'printf %s "$DB_PASSWORD" | sha256sum' | q }}\n"""
    )
    (folder / "tiny.toml").write_text(
        tiny_recipe(
            f'DB_PASSWORD = "{password}", MY_API_TOKEN = "tok-{password}", '
            f'PIP_INDEX_URL = "https://bob:{password}@pypi.example/simple", CC = "gcc"'
        )
    )
    return build_step(folder / "tiny.toml", ws)


def test_a_secret_by_name_is_hidden_in_the_plan_the_log_and_the_stamp(tmp_path):

    ws = Workspace(root=tmp_path / "ws")
    password = "hunter2hunter2"
    step = planned_with_secret(tmp_path, password, ws)
    shown = json.dumps(step.to_json())  # plan --json
    assert password not in shown
    assert step.to_json()["env"]["DB_PASSWORD"] == "***"
    assert step.to_json()["env"]["MY_API_TOKEN"] == "***"
    assert step.to_json()["env"]["PIP_INDEX_URL"] == "https://***@pypi.example/simple"

    outcome = run_alone(step, ws, tmp_path / "toolkit")
    log = outcome.log.read_text()
    assert outcome.exit_code == 0, log
    assert hashlib.sha256(password.encode()).hexdigest() in log  # the step got the real value
    assert "# env: DB_PASSWORD=***\n" in log and "# env: MY_API_TOKEN=***\n" in log
    assert "# env: CC=gcc\n" in log  # an ordinary value is shown as it is
    stamp = (ws.stamps / "build.json").read_text()
    assert password not in log and password not in stamp


def test_a_changed_secret_still_changes_the_input_hash(tmp_path):
    ws = Workspace(root=tmp_path / "ws")
    first = planned_with_secret(tmp_path, "first-secret", ws)
    again = planned_with_secret(tmp_path, "first-secret", ws)
    changed = planned_with_secret(tmp_path, "other-secret", ws)
    assert first.input_hash == again.input_hash
    assert first.input_hash != changed.input_hash
    assert "first-secret" not in json.dumps(first.inputs)
    assert fingerprint("DB_PASSWORD", "a") != fingerprint("DB_PASSWORD", "b")
    assert fingerprint("CC", "gcc") == "gcc"


# --- flag values never become code ------------------------------------------------------


@pytest.fixture
def lock_project(tmp_path: Path) -> Path:
    from cannbuild.sources.lock import write_lock

    project = tmp_path / "project"
    project.mkdir()
    write_lock(project / "cannbuild.lock", sample_lock("8.5.0", epoch=1766808000))
    return project


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--base", "debian:12\nRUN echo injected"], "--base"),
        (["--base", "x AS y"], "--base"),
        (["--base", "Debian:12"], "--base"),
        (["--base", "debian:12@sha256:" + "a" * 63], "--base"),
        (["--cannbuild-spec", "cannbuild==1.0\nRUN echo injected"], "--cannbuild-spec"),
        (["--cannbuild-spec", "cannbuild; rm -rf /"], "--cannbuild-spec"),
        (["--cannbuild-spec", "cannbuild @ https://host/cannbuild-1.0-py3-none-any.whl?token=tokSECRET99"], "--cannbuild-spec"),
        (["--cann", "8.5.0\nRUN echo injected"], "--cann"),
        (["--os", "ubuntu22.04\nRUN x"], "--os"),
        (["--python", "3.11 AS y"], "--python"),
        (["--base-digest", "sha256:" + "a" * 64 + "\nRUN x"], "--base-digest"),
    ],
    ids=["base-newline", "base-as", "base-upper", "base-short-digest", "spec-newline",
         "spec-shell", "spec-token", "cann-newline", "os-newline", "python-as", "digest-newline"],
)  # fmt: skip
def test_a_flag_value_that_would_become_a_dockerfile_line_is_refused(lock_project, flags, named):
    before = snapshot(lock_project)
    proc = cannbuild("container", "--variant", "A3", "--lock-file", "cannbuild.lock", "--out", "ctx", *flags,
        cwd=lock_project,
        timeout=HOSTILE_RUN,
    )  # fmt: skip
    refused(proc, named)
    assert snapshot(lock_project) == before  # no context, the lock unchanged


@pytest.mark.parametrize(
    "flags, named",
    [
        (["--cannbuild-spec", "cannbuild==1.0\n  injected: true"], "--cannbuild-spec"),
        (["--cannbuild-spec", ""], "--cannbuild-spec"),
        (["--npu-label", "ascend-npu\n  injected: true"], "--npu-label"),
        (["--npu-label", "a b"], "--npu-label"),
        (["--cannbuild-spec", f"cannbuild @ git+https://bob:tokSECRET99@git.example/c.git@{'a' * 40}"], "--cannbuild-spec"),
        (["--cannbuild-spec", "cannbuild @ https://host/${{secrets.CANNBUILD_CACHE_REMOTE}}/c.whl"], "--cannbuild-spec"),
    ],
    ids=["spec-newline", "spec-empty", "label-newline", "label-space", "spec-credential",
         "spec-expression"],
)  # fmt: skip
def test_a_flag_value_that_would_break_the_workflow_is_refused(tmp_path, flags, named):
    project = tmp_path / "project"
    project.mkdir()
    subprocess.run(["git", "init", "-q", str(project)], check=True)
    before = snapshot(project)
    proc = cannbuild("ci", "--provider", "github", *flags, cwd=project, timeout=HOSTILE_RUN)
    refused(proc, named)
    assert snapshot(project) == before
    assert "tokSECRET99" not in proc.stdout + proc.stderr  # the refusal names it redacted


@pytest.mark.parametrize(
    "reference",
    [
        "debian:12",
        "python:3.11-slim-bookworm",
        "quay.io/ascend/cann:8.5.0-910b-ubuntu22.04-py3.11",
        "localhost:5000/team/cann_base:v1",
        "registry.example:443/a/b-c__d.e",
        "quay.io/ascend/cann@sha256:" + "0f" * 32,
        "[::1]:5000/x:y",
    ],
)
def test_image_references_docker_takes_are_accepted(reference):
    from cannbuild.render.grammars import check_image

    check_image(reference)


@pytest.mark.parametrize(
    "spec",
    [
        "cannbuild==1.2.0",
        "cannbuild @ git+https://gitcode.com/team/cannbuild.git@" + "a" * 40,
        "cannbuild[bench]>=1.0",
    ],
)
def test_pip_requirements_are_accepted(spec):
    from cannbuild.render.grammars import check_requirement

    check_requirement(spec)
