"""The grammars of values that reach a rendered Dockerfile or workflow.

A flag value lands in a `FROM` line, a `RUN pip install` line or a workflow's run block,
where a newline or an `AS` would start an instruction of its own: each value is checked
whole against the grammar of what it stands for, before anything is written (exit 2
naming the flag).
"""

from __future__ import annotations

import re

from packaging.requirements import InvalidRequirement, Requirement

from ..errors import UsageError
from ..host.versions import parse_cann_version
from ..redact import redact

# An image reference as docker and podman parse it (the distribution reference grammar,
# github.com/distribution/reference regexp.go): [registry[:port]/]path[:tag][@digest], path
# components lowercase, the tag [\w][\w.-]{0,127}; digests here are sha256 only.  Checked
# whole: `debian:12\nRUN ...` or `x AS y` would otherwise be a Dockerfile instruction.
_ALNUM = r"[a-z0-9]+"
_PATH_COMPONENT = rf"{_ALNUM}(?:(?:[._]|__|-+){_ALNUM})*"
_DOMAIN_COMPONENT = r"(?:[a-zA-Z0-9]|[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9])"
_DOMAIN = rf"(?:{_DOMAIN_COMPONENT}(?:\.{_DOMAIN_COMPONENT})*|\[[a-fA-F0-9:]+\])(?::[0-9]+)?"
IMAGE_REFERENCE = re.compile(
    rf"(?P<name>(?:{_DOMAIN}/)?{_PATH_COMPONENT}(?:/{_PATH_COMPONENT})*)"
    r"(?::(?P<tag>\w[\w.-]{0,127}))?(?:@(?P<digest>sha256:[0-9a-f]{64}))?",
    re.ASCII,
)
IMAGE_NAME_MAX = 255  # the grammar's bound on the name (registry and path)
IMAGE_FORM = (
    "[registry[:port]/]path[:tag][@sha256:<64 hex>]: path components in lowercase letters "
    "and digits joined by . _ or -, a tag of letters, digits, _ . - (128 at most), e.g. "
    "quay.io/ascend/cann:8.5.0-910b-ubuntu22.04-py3.11 or debian:12"
)


def one_line(value: str) -> bool:
    return not any(ord(c) < 32 or ord(c) == 127 for c in value)


def check_image(reference: str, flag: str = "--base") -> None:
    """`reference` is an image reference, whole (see IMAGE_REFERENCE)."""
    found = IMAGE_REFERENCE.fullmatch(reference) if one_line(reference) else None
    if found is None or len(found["name"]) > IMAGE_NAME_MAX:
        raise UsageError(
            f"{flag} {reference!r} is not an image reference.", f"Expected {IMAGE_FORM}."
        )


def check_requirement(spec: str, flag: str = "--cannbuild-spec") -> None:
    """`spec` is one PEP 508 requirement on one line (it lands in a Dockerfile RUN line
    and a workflow's run block, where a newline would start an instruction of its own)."""
    problem = "it is empty" if not spec.strip() else ""
    if not problem and not one_line(spec):
        problem = "it holds a newline or another control character"
    if not problem and ("${{" in spec or "{{" in spec or "{%" in spec):
        # GitHub Actions expands ${{ }} in a run: block before the shell sees it (secrets
        # included); GitLab and the templates are left no such text either
        problem = "it holds '${{', '{{' or '{%', which a workflow or template would expand"
    if not problem:
        try:
            Requirement(spec)
        except InvalidRequirement as exc:
            problem = str(exc).splitlines()[0]
    if not problem and redact(spec) != spec:
        raise UsageError(
            f"{flag} {redact(spec)!r} holds a credential (a user:password or a token in its "
            "URL): it would be written into the rendered files, which are committed, and "
            "into their build logs.",
            "Pass the URL without it, and give pip the credential from the CI's secrets "
            "(a masked variable such as PIP_INDEX_URL, a netrc, or a git credential helper).",
        )
    if problem:
        raise UsageError(
            f"{flag} {spec!r} is not a pip requirement ({problem}).",
            "Pass one PEP 508 requirement, e.g. cannbuild==1.2.0, "
            "'cannbuild @ git+https://host/cannbuild.git@<commit>' or "
            "'cannbuild @ https://host/cannbuild-1.2.0-py3-none-any.whl'.",
        )


def check_cann(cann: str, flag: str = "--cann") -> None:
    try:
        if not one_line(cann) or cann != cann.strip():
            raise ValueError(cann)
        parse_cann_version(cann)
    except ValueError:
        raise UsageError(
            f"{flag} {cann!r} is not a CANN version.",
            "Use the version as the CANN images' tags spell it, e.g. 8.5.0, 9.0.0 or 8.3.rc1.",
        ) from None
