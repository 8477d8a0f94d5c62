"""Error classes, one exit code each, caught once at the task boundary.

A user mistake must end as one paragraph (what is wrong, what was expected,
how to fix it) and a non-zero exit code, never as a traceback.
"""

from __future__ import annotations

import errno
import os
import signal
from typing import Iterable, Optional


class CannbuildError(Exception):
    """A failure cannbuild understands; `hint` says what to do next.

    An empty message means the failure was already shown (a doctor table, a step's
    digest, a validation report): only the exit code is left to give."""

    exit_code = 1
    meaning = "a check failed"

    def __init__(self, message: str = "", hint: Optional[str] = None) -> None:
        super().__init__(message)
        self.message = message
        self.hint = hint

    def paragraph(self) -> str:
        text = self.message.rstrip()
        if self.hint:
            text = f"{text} {self.hint.rstrip()}"
        return text


class DryRun(Exception):
    """Not an error: a dry run ends here (exit 0), its message saying what would have
    happened; the command frame says it once (tasks/_flags.guarded)."""


class DoctorFailed(CannbuildError):
    """`doctor` found a check that fails (its table says which)."""

    exit_code = 1
    meaning = "doctor (or diagnose) found a failing check"


class UsageError(CannbuildError):
    """A flag, config key or value is wrong."""

    exit_code = 2
    meaning = "bad flag, config or input file"


class ProfileFormatError(UsageError):
    """A profiler output file (CSV or JSON) that cannot be read: the message names the
    file and the line."""


class DiagnoseFailed(DoctorFailed):
    """`diagnose` found a cause (its table says which); exit 1 like doctor."""


class DoctorBlocked(CannbuildError):
    """A doctor check makes a build impossible (setup stops before any step): no usable
    toolkit among them."""

    exit_code = 3
    meaning = "no usable toolkit, or doctor blocks the build"


class StepFailed(CannbuildError):
    """A build, install or fetch step exited non-zero."""

    exit_code = 4
    meaning = "a fetch or build step failed"


class FetchError(StepFailed):
    """A clone, fetch, download or checkout failed (exit 4, like a failed step)."""


class SyncStopped(CannbuildError):
    """The run is ending (a failed step, Ctrl-C): a repo's sources thread stops at its
    next stage."""


class ValidationFailed(CannbuildError):
    """Validation said FAIL, or SKIPPED where --require-device asks for a verdict."""

    exit_code = 5
    meaning = "validation failed (or was SKIPPED with --require-device, or bench timed no shape)"


class NothingTimed(ValidationFailed):
    """`bench` timed FlashAttention on no shape: every call failed its check or could not
    run (a package built for another SoC, say), so there is no figure to give."""


class LockDrift(CannbuildError):
    """`--locked` and the inputs differ from `cannbuild.lock`."""

    exit_code = 6
    meaning = "--locked and the inputs differ from the lock"


class WorkspaceBusy(CannbuildError):
    exit_code = 7
    meaning = "the workspace is in use by another run"


class OfflineViolation(CannbuildError):
    """Something tried to reach the network in `--offline` mode."""

    exit_code = 8
    meaning = "--offline and something needs the network"


class NoContainerEngine(CannbuildError):
    """Distinct from a failed build: there was nothing to build with."""

    exit_code = 9
    meaning = "no container engine answers"


class SandboxError(CannbuildError):
    exit_code = 10
    meaning = "the sandbox cannot be created"


class StorageError(CannbuildError):
    """A file could not be written: the disk is full, the folder read-only or not ours."""

    exit_code = 11
    meaning = "a file could not be written (disk full, read-only, no permission)"


# Failures the user fixes on the disk, not in the command: full (ENOSPC), over quota (EDQUOT),
# read-only (EROFS), not theirs to write (EACCES, EPERM).
STORAGE_ERRNOS = frozenset({errno.ENOSPC, errno.EROFS, errno.EACCES, errno.EPERM, errno.EDQUOT})


def storage_error(exc: OSError, output: bool = False) -> Optional[StorageError]:
    """The one-paragraph form of a failed write, or None for other OS errors.  `output`:
    it was the program's own output (stdout, `cannbuild status > /dev/full`), which no
    --workspace moves."""
    if exc.errno not in STORAGE_ERRNOS:
        return None
    if output and not exc.filename:
        return StorageError(
            f"cannot write the output (stdout): {exc.strerror or exc}.",
            "Send it where it can be written: free space on the disk it goes to, or "
            "redirect it elsewhere.",
        )
    where = f" {exc.filename}" if exc.filename else ""
    hints = {
        errno.ENOSPC: f"{FREE_SPACE}, or pass --workspace on a larger one.",
        errno.EDQUOT: "Your disk quota is used up: free space or pass --workspace elsewhere.",
        errno.EROFS: "That file system is mounted read-only: pass a writable --workspace "
        "(or --lock-file, --out).",
    }
    return StorageError(
        f"cannot write{where}: {exc.strerror or exc}.",
        hints.get(exc.errno, "Check the permissions of that folder, or pass one you can write to."),
    )


# The start of the hint for a step, git or a compiler stopped by a full disk
FREE_SPACE = "Free space on that disk (`cannbuild clean` removes build trees and old logs)"

# What a tool prints when it could not write for want of room: the disk full, the quota
# used up, or the file size limit (`ulimit -f`) that killed it (SIGXFSZ).
DISK_FULL_WORDS = (
    os.strerror(errno.ENOSPC),
    os.strerror(errno.EDQUOT),
    signal.strsignal(signal.SIGXFSZ) or "File size limit exceeded",
)


def says_disk_full(lines: Iterable[str]) -> bool:
    """Whether a tool's output says it stopped on a full disk, not on its input."""
    return any(word in line for line in lines for word in DISK_FULL_WORDS)


# A path that no write or read can use as spelled: too long, through a file or a loop, a
# file where a folder must go or the other way round.
PATH_ERRNOS = frozenset(
    {errno.ENAMETOOLONG, errno.ENOTDIR, errno.ELOOP, errno.EEXIST, errno.EISDIR}
)


def path_error(exc: OSError) -> Optional[UsageError]:
    """The one-paragraph form of a path the system refused as spelled, or None."""
    if exc.errno not in PATH_ERRNOS:
        return None
    where = f" {_shorten(str(exc.filename))}" if exc.filename else ""
    return UsageError(
        f"cannot use the path{where}: {exc.strerror or exc}.",
        "A file or folder name is at most 255 bytes, a whole path at most 4095 bytes, every "
        "folder on the way must be a folder and a file must not stand where a folder "
        "goes: pass another path.",
    )


def write_error(exc: OSError, what: str, path: object) -> CannbuildError:
    """A folder or file cannbuild was asked to write (`what`, e.g. --out, OUT) that it
    cannot: a path the system refuses as spelled is a usage error (exit 2), anything
    else (read-only, not ours, full, a pseudo file system) a storage error (exit 11)."""
    shown = _shorten(str(path))
    if exc.errno in PATH_ERRNOS:
        return UsageError(
            f"{what} {shown} is not a usable path ({exc.strerror or exc}).",
            f"Pass {what} as a path of folders (names up to 255 bytes, at most 4095 in all).",
        )
    full = exc.errno in (errno.ENOSPC, errno.EDQUOT)
    return StorageError(
        f"{what} {shown} cannot be written ({exc.strerror or exc}).",
        f"{FREE_SPACE}, or pass {what} on a larger one."
        if full
        else f"Pass {what} in a folder you can write to.",
    )


def _shorten(text: str) -> str:
    """A path for a message: a 4000-byte one would bury the paragraph (200 characters kept)."""
    return text if len(text) <= 200 else f"{text[:100]}...{text[-100:]}"


class Interrupted(CannbuildError):
    """Ctrl-C (SIGINT); SIGTERM and SIGHUP end the same way with their own codes."""

    exit_code = 130
    meaning = "interrupted (Ctrl-C); 143 for SIGTERM, 129 for SIGHUP"

    def __init__(self, message: str = "", hint: Optional[str] = None, signum: int = 2) -> None:
        super().__init__(message, hint)
        self.exit_code = 128 + signum  # the shell's convention


class SignalInterrupt(KeyboardInterrupt):
    """SIGTERM or SIGHUP, raised where Ctrl-C would be, so every cleanup that Ctrl-C
    triggers (the step's process group stopped and waited for, no stamp, the workspace
    lock released last) runs for them too."""

    def __init__(self, signum: int) -> None:
        super().__init__(signum)
        self.signum = signum


def interrupted_line(exc: BaseException) -> str:
    """What an interrupt outside a step (a fetch, a checkout, the toolkit's layout) says:
    which signal, and that the same command goes on (a step's own line says more)."""
    return (
        f"cannbuild: interrupted by {signal_name(exc)}; nothing was left half-written: run "
        "the same command again to go on where it stopped."
    )


def signal_name(exc: BaseException) -> str:
    """Who or what interrupted, in words: Ctrl-C is the user's."""
    return {1: "SIGHUP", 2: "the user (Ctrl-C)", 15: "SIGTERM"}.get(signal_number(exc), "a signal")


def signal_number(exc: BaseException) -> int:
    """The signal behind an interrupt: SIGINT for a plain KeyboardInterrupt."""
    return getattr(exc, "signum", 2)


EXIT_CODES = (
    (0, "success (validation PASS, or SKIPPED without --require-device)"),
    *(
        (cls.exit_code, cls.meaning)
        for cls in (
            DoctorFailed,
            UsageError,
            DoctorBlocked,
            StepFailed,
            ValidationFailed,
            LockDrift,
            WorkspaceBusy,
            OfflineViolation,
            NoContainerEngine,
            SandboxError,
            StorageError,
            Interrupted,
        )
    ),
    (141, "the reader of the output left (`cannbuild plan | head`)"),
)
