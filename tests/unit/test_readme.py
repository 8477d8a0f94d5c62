"""The README's set-up blocks: found by their markers, and saying what a fresh machine needs.

tests/integration/test_readme_container.py runs the setup block in a clean Debian
container; these pin, without a container, that the blocks are there, first, and shaped
so that they can run as written (root or sudo, apt's lists, a venv, the CPU torch).
"""

import os
import shlex
import subprocess
import sys
from pathlib import Path

import pytest

from readmeblocks import (
    ROOT,
    ReadmeBlockError,
    fenced_blocks,
    first_block,
    marked_block,
    pip_args,
    readme_text,
    torch_line,
)

TORCH_FALLBACKS = ("torch-download", "torch-file", "torch-folder")


def lines(block):
    return [line for line in block.splitlines() if line.strip()]


def words(line):
    return shlex.split(line, comments=True)


def test_the_setup_block_is_the_first_block_a_reader_sees_and_the_tests_the_second():
    text = readme_text()
    setup, test = marked_block("setup"), marked_block("test")
    assert first_block() == setup
    assert text.index(setup) < text.index(test) < text.index("## On an Ascend host")
    assert text.index("## Set up") < text.index(setup)
    between = text[text.index(setup) + len(setup) : text.index("<!-- readme-block: test")]
    # between them only the torch fallbacks, each a marked block the container test runs
    assert between.count("```bash") == len(TORCH_FALLBACKS)
    for name in TORCH_FALLBACKS:
        assert f"<!-- readme-block: {name} " in between


def test_the_setup_block_updates_apt_installs_the_tools_makes_a_venv_and_runs_the_sandbox():
    block = lines(marked_block("setup"))
    apt = [i for i, line in enumerate(block) if "apt-get" in words(line)]
    assert len(apt) == 2 and "update" in words(block[apt[0]])
    install = words(block[apt[1]])
    assert {"install", "-y", "python3-venv", "cmake", "g++", "make", "git", "gawk"} <= set(install)
    venv = next(i for i, line in enumerate(block) if "venv" in words(line))
    assert apt[1] < venv and "activate" in block[venv]
    pips = [i for i, line in enumerate(block) if words(line)[:2] == ["pip", "install"]]
    assert pips and min(pips) > venv  # never pip into the system Python (PEP 668)
    assert any(pip_args(block[i]) == ["-e", "."] for i in pips)
    assert words(block[-1]) == ["cannbuild", "setup", "--sandbox"]


def sudo_word(block):
    """The line that decides the sudo prefix, run by a real bash with PATH as given."""
    (decides,) = [line for line in lines(block) if "command -v sudo" in line]
    return decides


@pytest.mark.parametrize("has_sudo", [False, True])
def test_the_setup_block_prefixes_apt_with_sudo_only_where_there_is_one(tmp_path, has_sudo):
    block = marked_block("setup")
    decides = sudo_word(block)
    name = decides.split("=", 1)[0]
    for line in lines(block):
        if line == decides:
            continue
        if "apt-get" in words(line):
            assert words(line)[0] == f"${name}", line  # root in a container has no sudo
        else:
            assert "sudo" not in words(line), line
    if has_sudo:
        (tmp_path / "sudo").write_text('#!/bin/sh\nexec "$@"\n')
        (tmp_path / "sudo").chmod(0o755)
    proc = subprocess.run(
        ["/bin/bash", "-e", "-c", f'{decides}\nprintf "%s" "${name}"'],
        capture_output=True,
        text=True,
        env={"PATH": str(tmp_path)},
        timeout=10,
    )
    assert proc.returncode == 0, proc.stderr
    assert proc.stdout == (str(tmp_path / "sudo") if has_sudo else "")


def test_every_set_up_block_is_valid_bash():
    for name in ("setup", "test", *TORCH_FALLBACKS):
        proc = subprocess.run(
            ["/bin/bash", "-n"], input=marked_block(name), capture_output=True, text=True
        )
        assert proc.returncode == 0, (name, proc.stderr)


def test_the_torch_line_takes_the_cpu_build_of_the_torch_npu_version():
    """`+cpu` is never met by PyPI's CUDA wheel, and the CPU index is added to PyPI, not put
    in its place (torch's dependencies are on PyPI; issue 42)."""
    args = pip_args(torch_line(marked_block("setup")))
    assert "--index-url" not in args
    index = args[args.index("--extra-index-url") + 1]
    assert index == "https://download.pytorch.org/whl/cpu"
    (pin,) = [a for a in args if a.startswith("torch==")]
    assert pin.endswith("+cpu")
    release = pin.split("==")[1].split("+")[0]
    test = words(lines(marked_block("test"))[0])
    assert f"torch-npu=={release}" in test
    assert not any(w.startswith("torch==") for w in test)  # keeps the CPU torch installed
    # the fallbacks name the same wheel, and the folder route reruns the very line
    assert f"torch=={release}+cpu" in marked_block("torch-download")
    assert f"wheels/torch-{release}+cpu-" in marked_block("torch-file")
    assert torch_line(marked_block("setup")).split("#")[0].strip() in marked_block("torch-folder")


def test_the_readme_says_what_to_do_where_the_cpu_index_is_unreachable():
    text = " ".join(readme_text().split())
    after = text[text.index(" ".join(marked_block("setup").split())) :]
    advice = after[: after.index("Run the tests")]
    assert "unreachable" in advice
    assert "pip download torch==2.13.0+cpu" in advice
    assert "validation: SKIPPED" in advice  # the route without torch, and what it says


def test_ci_installs_torch_the_readmes_way_and_runs_the_readme_test_command():
    ci = (ROOT / ".ci" / "run").read_text()
    assert marked_block("test").strip() in ci
    torch = torch_line(marked_block("setup")).split("#")[0].strip()
    assert torch in ci and ci.index(torch) < ci.index(marked_block("test").strip())


MARKED = "intro\n\n<!-- readme-block: demo (a note) -->\n\n```bash\necho hi\n```\n"


def test_a_marked_block_is_the_fenced_code_right_under_its_marker():
    assert marked_block("demo", MARKED) == "echo hi\n"


@pytest.mark.parametrize(
    "text",
    [
        "no marker here\n```bash\necho hi\n```\n",
        "<!-- readme-block: demo -->\nprose first\n```bash\necho hi\n```\n",
        "<!-- readme-block: demo -->\n```bash\necho hi\n",
        "<!-- readme-block: demo -->\n```bash\n\n```\n",
        MARKED + MARKED,
        MARKED.replace("readme-block: demo", "readme-block: demonstration"),
    ],
    ids=["missing", "not-fenced", "unclosed", "empty", "twice", "other-name"],
)
def test_a_block_that_lost_its_marker_or_fence_is_an_error(text):
    with pytest.raises(ReadmeBlockError):
        marked_block("demo", text)


def test_the_readme_blocks_module_reads_this_checkouts_readme():
    assert Path(ROOT / "README.md").read_text(encoding="utf-8") == readme_text()


# Every fenced block of the README is marked, and what each marker says runs it does:
# the named test file (or .ci/run) names the block.  A new block without a marker fails here.
NOT_COMMANDS = ("config", "layout")


def test_every_readme_block_is_marked_and_run_by_the_file_its_marker_names():
    names = fenced_blocks()
    assert None not in names, names
    assert len(set(names)) == len(names)
    text = readme_text()
    for name in names:
        marker = next(x for x in text.splitlines() if f"<!-- readme-block: {name} " in x)
        if name in NOT_COMMANDS:
            assert "not commands" in marker
            continue
        runner = next(w.strip("()") for w in marker.split() if "/" in w or w.startswith("."))
        source = (ROOT / runner).read_text()
        assert name in source or marked_block(name).strip() in source, (name, runner)


def test_the_readmes_profile_comparison_runs_as_shown_on_the_samples(tmp_path):
    """The block's command, run on the samples the README names, prints every line the
    block shows (its `...` stands for lines left out)."""
    block = marked_block("profile-compare").splitlines()
    command = block[0].removeprefix("$ ")
    # the samples the README names: tests/llamaprofile.py's eager and FlashAttention runs
    for name, attention in (("eager", "eager"), ("flash", "flash")):
        subprocess.run(
            [
                sys.executable,
                str(ROOT / "tests" / "llamaprofile.py"),
                str(tmp_path / name),
                "--ranks",
                "1",
                "--attention",
                attention,
            ],
            check=True,
            capture_output=True,
        )
    proc = subprocess.run(
        words(command),
        cwd=tmp_path,
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "COLUMNS": "200"},
    )
    assert proc.returncode == 0, proc.stderr
    printed = proc.stdout.splitlines()
    at = 0
    for line in block[1:]:
        if line.strip() == "...":
            continue
        assert line in printed[at:], (line, proc.stdout)
        at = printed.index(line, at) + 1


def test_the_readmes_configuration_is_a_config_cannbuild_takes():
    import yaml

    from cannbuild.options import resolve_options

    config = yaml.safe_load(marked_block("config"))
    options = resolve_options({}, {}, config["cannbuild"])
    assert options.soc == "ascend910b" and options.jobs == 16
    assert str(options.workspace) == "/data/cannbuild"
    assert options.cache_remote and options.mirrors
