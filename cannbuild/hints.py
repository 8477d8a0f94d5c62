"""Known failure messages of the CANN builds and installers, each with its fix.

Matched against a failed step's log; the first pattern (in this order) that
matches gives the digest's hint, with `{1}`… filled from the match.  A rejected
archive is judged against the copies cannbuild put into the checkouts (when the
caller passes them): which file CMake refused, and whether it was cannbuild's.
"""

from __future__ import annotations

import os
import re
from pathlib import Path
from typing import TYPE_CHECKING, Iterable, List, Optional, Sequence, Tuple

from msgspec import Struct

from .bounded import ARCHIVE, digest
from .errors import UsageError
from .redact import redact

if TYPE_CHECKING:
    from .sources.checkout import PlacedCopy


class Hint(Struct, frozen=True, kw_only=True):
    pattern: str
    text: str
    # "hash": the text is the fallback of rejected_copy(), used when no copies are known
    kind: str = ""


# Group 1 the `error: ` of verify.cmake.in's form, 2 the algorithm (CMake's names: MD5, SHA1,
# SHA256, SHA3_256, ...), 3 the file, 4 and 5 the expected and actual values.
HASH_MISMATCH = (
    r"(error: )?\b(MD5|SHA\w+) hash of\s+(\S+)\s+does not match expected value"
    r"(?:\s+expected: '(\w*)'\s+actual: '(\w*)')?"
)


# Order matters: the specific messages come first, the generic compiler `error: ` near the end,
# since one log often holds several.  Where a message comes from is noted per entry.
HINTS: Tuple[Hint, ...] = (
    # The sandbox's stand-in for a toolkit part neither an open repository nor the sandbox
    # provides (sandbox/toolkit_files.py WALLS): the build of the real repos stops there.
    Hint(
        pattern=r"cannbuild sandbox wall: (\S+) \(([^)]+)\): ([^\n]+)",
        text="the build reached the sandbox's wall {1} ({2}): {3}. Everything before it built "
        "against the toolkit's real host side. A toolkit part's wall is doctor's row "
        "recipe.wall.{1} before the build; a third-party archive's is the stand-in you took "
        "with --accept-stand-in (the lock, the report and status list it). On an Ascend host "
        "with the CANN toolkit and the real archives it goes on.",
    ),
    # asc-devkit's asc_opc runs its Python tool, which asc-devkit builds as a wheel
    # (asc-devkit_custom_install.sh:66-107) and the sandbox's host side does not install:
    # `python3: can't open file '.../python/site-packages/asc_opc_tool/opc.py'`.
    Hint(
        pattern=r"can't open file '[^']*/site-packages/asc_opc_tool/opc\.py'",
        text="the build reached the sandbox's wall asc_opc (the kernel compile): asc-devkit's "
        "asc_opc_tool and asc_op_compile_base are wheels its build makes, which the sandbox's "
        "host side does not install, and behind them is the device compiler, which no open "
        "repository provides. Everything before it (configure, op_build, the host "
        "libraries) built against the real host side; on an Ascend host with the CANN "
        "toolkit it goes on.",
    ),
    # ops-transformer build.sh, after sourcing setenv.bash: `Error: bisheng compilation tool not
    # found...` (every mode but --jit --noaicpu).
    Hint(
        pattern=r"bisheng compilation tool not found",
        text="build.sh needs bisheng on PATH: it comes with the toolkit's compiler package "
        "(compiler/ccec_compiler/bin). Check `cannbuild doctor` (bisheng row) and reinstall the toolkit with --full.",
    ),
    # ops-transformer build.sh when -p, ASCEND_HOME_PATH, ASCEND_OPP_PATH and the default `latest`
    # folders all fail: `Error: Please set the toolkit package installation directory through
    # parameter -p|--package-path.`
    Hint(
        pattern=r"Please set the toolkit package installation directory",
        text="build.sh found no CANN toolkit: pass --cann-path=<folder holding set_env.sh>; cannbuild "
        "exports ASCEND_HOME_PATH from that toolkit's set_env.sh.",
    ),
    # ops-transformer build.sh in custom or --opkernel mode, which takes exactly one supported SoC:
    # `[ERROR] The input soc ... is not supported.`
    Hint(
        pattern=r"The input soc (\S+) is not supported|Currently (\S+) is not supported",
        text="this ops-transformer ref does not build for that --soc; pick a SoC the recipe lists, or the recipe "
        "of a newer CANN.",
    ),
    Hint(
        pattern=r"unsupport chip type",
        text="ops-transformer dropped the --soc value (this ref does not know it) and packed an empty package; "
        "pass a SoC the recipe lists.",
    ),
    # cann-cmake's check_build_dependencies.py reads `<toolkit>/share/info/<pkg>/version.info` for
    # each build dependency, then fails with `Check <pkg> build dependencies failed!`.
    Hint(
        pattern=r"share/info/(\S+)/version\.info does not exist",
        text="the toolkit has no {1} package (share/info/{1}/version.info). Install the CANN packages of this "
        "release; for opbase on CANN <= 8.5 the recipe's opbase-install step provides it.",
    ),
    Hint(
        pattern=r"Check (\S+) build dependencies failed!",
        text="{1}'s build found toolkit packages missing or too old (see the check_build_dependencies lines "
        "above); compare `cannbuild doctor` with the recipe's [toolkit.requires].",
    ),
    # ops-transformer's find_package modules (cmake/dependencies.cmake:56-64); on a toolkit without
    # the dlog headers: `Could NOT find dlog (missing: dlog_TRANSFORMER_INCLUDE_DIR)`.  doctor
    # derives every lookup of these modules from the checkout (build/derived.py).
    Hint(
        pattern=r"Could NOT find (dlog|platform|metadef|runtime|nnopbase|tilingapi)\b",
        text="ops-transformer's CMake (cmake/modules/Find{1}.cmake) found no {1} headers in the toolkit: "
        "the CANN component that ships them is missing or incomplete. `cannbuild doctor` "
        "(row recipe.derived.module.{1}) names the files it looks for, where, and the package to "
        "install; install it into the same toolkit (--install-path as the toolkit's).",
    ),
    # Past configure, the host compile includes more toolkit headers than the modules check:
    # `register/op_def_registry.h: No such file or directory` (flash_attention_score_def.cpp).
    # doctor derives them from the host-side sources (build/derived_includes.py) by these
    # prefixes (build/toolkit_packages.py).
    Hint(
        pattern=r"(dlog_pub\.h|alog_pub\.h|securec\.h|(?:register|exe_graph|graph|platform|tiling|"
        r"acl|aclnn|opdev|runtime|toolchain|ascendc|base)/\S+\.h)\S*: No such file or directory",
        text="the compiler did not find the toolkit header {1}: the CANN component that ships it "
        "is missing or incomplete. `cannbuild doctor` (row recipe.derived.header.{1}) names the "
        "package that ships it and the source file that includes it; run doctor before the "
        "build, it fails there.",
    ),
    # cmake/modules/FindOPBASE.cmake: <= v8.5.0 looks in the toolkit, v9.0 in third_party/opbase.
    Hint(
        pattern=r"Could NOT find OPBASE",
        text="ops-transformer cannot find opbase: up to CANN 8.5 it must be installed in the toolkit (the "
        "recipe's opbase-install step), from 9.0 as source in third_party/opbase.",
    ),
    # The custom package's install.sh with neither --install-path nor ASCEND_CUSTOM_OPP_PATH:
    # `[ERROR] env ASCEND_OPP_PATH no exist`.
    Hint(
        pattern=r"env ASCEND_OPP_PATH no exist",
        text="the custom package installer needs --install-path or ASCEND_OPP_PATH; cannbuild passes "
        "--install-path=<workspace>/opp, so check the recipe's install template.",
    ),
    Hint(
        pattern=r"Unsupported parameters \[(\S+)\]",
        text="the .run installer does not take {1}; fix the recipe's install template.",
    ),
    # Every ops-transformer build.sh pipes through gawk and exits 127 without it; Debian ships mawk
    # only (reference real-host-findings.md §1).
    Hint(
        pattern=r"gawk: command not found",
        text="ops-transformer's build.sh pipes its output through gawk: apt install gawk.",
    ),
    # ops-transformer cmake/makeself_built_in.cmake: `makeself not found! Install it with: sudo apt
    # install makeself`.
    Hint(
        pattern=r"makeself not found",
        text="apt install makeself, or seed third_party with the makeself archive (cannbuild fetch).",
    ),
    # CMake's hash check of an archive (URL_HASH / URL_MD5), in both of ExternalProject's forms
    # (cmake 3.25 Modules/ExternalProject/verify.cmake.in:29 for a local path or file:// URL,
    # download.cmake.in:29 for a file already in DOWNLOAD_DIR or just downloaded, with no
    # `error:` and the build going on to download); the file name sits on its own line:
    #   -- MD5 hash of
    #       /.../third_party/pkg/makeself/makeself-release-2.5.0-patch1.tar.gz
    #     does not match expected value
    #       expected: 'a080...'
    #         actual: '...'
    # Before the download hint: the download that follows a rejected copy is not the cause.
    Hint(
        pattern=HASH_MISMATCH,
        text="{3} is not the file this ref's CMake pins ({2} differs): a third-party copy in the checkout "
        "was changed, or a download served another file. Delete the checkout under the workspace's "
        "src/ and run again (cannbuild puts the locked archives back), and check the mirror.",
        kind="hash",
    ),
    # CMake's own download step (ExternalProject / FetchContent), which no git `insteadOf` rule
    # reaches: `error: downloading 'https://gitcode.com/cann-src-third-party/...' failed`. Group 2
    # is the scheme and host, the key a cannbuild.mirrors rule needs.
    Hint(
        pattern=r"error: downloading '((\w+://[^/'\s]+/)[^'\s]*)' failed",
        text="the build downloaded {1} itself: cannbuild had put no copy where this ref looks, and a "
        "mirror rule cannot reach a download inside CMake. Name the archive in the recipe "
        "([[repos.<repo>.third_party]], with the place this ref takes a copy, see recipes/*.toml) so "
        "cannbuild fetches it through a mirror rule (cannbuild.mirrors: {'{2}': 'https://your-mirror/'}) "
        "and puts it there, or build where {2} is reachable.",
    ),
    # A download inside an offline build: cannbuild sets GIT_ALLOW_PROTOCOL=file there, so git says
    # `transport 'https' not allowed`; other fetchers fail on the dead proxy or the name lookup
    # (sources/fetch.py mirror_git_env).
    Hint(
        pattern=r"Failed to download (\S+)|transport '\w+' not allowed|Could not resolve host: (\S+)",
        text="a build step tried to download {1}{2}: run `cannbuild fetch` online (it puts the third-party "
        "archives where each ref looks), name the archive in the recipe's [[repos.<repo>.third_party]], "
        "or build from an offline bundle.",
    ),
    # makeself's self-check when a `.run` is unpacked.
    Hint(
        pattern=r"Error in \w+ checksums",
        text="the .run package is corrupt; rebuild it with --force on its build step.",
    ),
    Hint(
        pattern=r"undefined reference to `?(\w+)",
        text="link error: {1} is missing; the library that provides it was not built or not found "
        "(check the toolkit version matches the recipe).",
    ),
    # The last resort: any compiler error, quoted with its line ({line}).
    Hint(
        pattern=r"static assertion failed|error: ",
        text="a compiler error in the sources at this ref ({line}); check that the ref matches the "
        "installed CANN (`cannbuild plan`) and doctor's compiler rows.",
    ),
    # opbase master's build.sh: getopt accepts `-s` but no branch handles it, "Undefined option";
    # getopt itself says `unrecognized option '--bogus'`.
    Hint(
        pattern=r"Undefined option|unrecognized option '(\S+)'",
        text="build.sh does not take {1} at this ref; fix the recipe's template.",
    ),
    # From ops-transformer build.sh's help text, which it prints (exit 1) for a flag it does not
    # parse: `--debug` on master, for one.
    Hint(
        pattern=r"build script for ops-transformer repository",
        text="build.sh printed its help and exited: it does not take one of the flags at this ref (e.g. --debug "
        "is not parsed since v8.5.0; use --build-type=Debug); fix the recipe's template.",
    ),
)


def match_hint(
    lines: Iterable[str], copies: Optional[Sequence[PlacedCopy]] = None
) -> Optional[str]:
    """The hint for a failed step's log; `copies`: the archives cannbuild put into the
    checkouts (sources.checkout.placed_copies), None when not known."""
    lines = list(lines)
    text = "\n".join(lines)
    for hint in HINTS:
        match = re.search(hint.pattern, text)
        if match:
            if hint.kind == "hash" and copies is not None:
                return rejected_copy(match, text, copies)
            # An optional group that did not take part fills its `{n}` with "".
            groups = [g or "" for g in match.groups()]
            out = hint.text
            for i, g in enumerate(groups, 1):
                out = out.replace("{" + str(i) + "}", g)
            # The whole line of the match, for the `{line}` of the generic compiler hint.
            line = text[text.rfind("\n", 0, match.start()) + 1 :].split("\n", 1)[0].strip()
            return out.replace("{line}", line[:200])
    return None


def rejected_copy(match: re.Match, text: str, copies: Sequence[PlacedCopy]) -> str:
    """Which file CMake's hash check refused, whether it is the copy cannbuild placed
    (by path, then by name; compared by the same hash with its download), and what to do."""
    verify, algo, path, expected, actual = match.groups()
    name = Path(path).name
    parts: List[str] = [
        f"CMake rejected {path}: its {algo} is {actual}, this ref's CMake expects {expected}"
        if expected and actual
        else f"CMake rejected {path}: its {algo} is not the one this ref's CMake expects"
    ]
    exact = next((c for c in copies if _same_file(c.path, path)), None)
    copy = exact or next(
        (c for c in copies if not c.dest.endswith("/") and c.path.name == name), None
    )
    downloaded = not verify and "Hash mismatch, removing" in text
    if copy is None:
        existed = "File already exists but hash mismatch" in text
        parts.append(
            f"cannbuild put no copy of {name} into a checkout"
            + (
                ": the file was there before the build (left by an earlier one, or put by hand)"
                if existed and not downloaded
                else ""
            )
        )
    else:
        parts.append(_judged(copy, exact is not None, downloaded, algo, expected, actual))
    source = re.search(r"-- Using src='([^']+)'", text)
    if downloaded and source:
        parts.append(
            f"the download from {redact(source.group(1))} served another file than this ref "
            "pins (check the server, a proxy or the mirror)"
        )
    if "File already exists but hash mismatch" in text:
        failed = re.search(r"error: downloading '([^']+)' failed", text)
        parts.append(
            "CMake removed the rejected file and downloaded the archive itself"
            + (f", which failed ({redact(failed.group(1))})" if failed else "")
        )
    if copy is None:
        parts.append(
            "to have cannbuild fetch the archive (through a mirror rule, pinned in the lock) and "
            "put it where this ref looks, name it in the recipe's [[repos.<repo>.third_party]] "
            "with that place (see recipes/*.toml)"
        )
    return "; ".join(parts) + "."


def _judged(
    copy: PlacedCopy, exact: bool, downloaded: bool, algo: str, expected: str, actual: str
) -> str:
    """What the rejected file is to cannbuild's copy of that name: that copy, a file the
    build downloaded or moved beside it, or a changed one; by the copy's download's hash."""
    ours = _digest(copy.cached, algo)
    name = copy.path.name
    copy_of = f"{copy.repo}'s {copy.dest}, sha256 {copy.sha256[:12]} as the lock pins it"
    relock = (
        "the lock pins another archive than this ref's CMake: the mirror served other bytes "
        "when it was locked, or the recipe overrides the hash. Fix cannbuild.mirrors (or "
        f"the recipe's [[repos.{copy.repo}.third_party]]) and run `cannbuild lock`"
    )
    if exact:
        that = f"cannbuild put its copy of {name} there ({copy_of})"
    elif downloaded:
        that = f"the build downloaded it instead of taking the copy cannbuild put at {copy.path} ({copy_of})"
    else:
        that = f"it is a file of the name of the copy cannbuild put at {copy.path} ({copy_of})"
    if ours is None:
        return f"{that}, whose download is no longer in the cache to compare: run `cannbuild fetch` and build again"
    if ours == actual:
        if exact:
            return f"that is the copy cannbuild put there ({copy_of}), unchanged: {relock}"
        return f"{that}, with the same bytes: {relock}"
    if ours == expected:
        if exact:
            return (
                f"{that}, which has the expected {algo}: the file was changed or replaced after "
                "cannbuild placed it (by an earlier build or by hand). Delete "
                f"{copy.checkout} and run again: cannbuild puts the locked archive back"
            )
        return (
            f"{that}, which has the expected {algo}: the build did not look for it there. Check "
            f"the place the recipe's [[repos.{copy.repo}.third_party]] gives {name} against where "
            "this ref looks"
        )
    return (
        f"{that}, with {algo} {ours}: neither that copy nor the file CMake read is the one this "
        "ref pins. Fix the mirror (cannbuild.mirrors) and run `cannbuild lock`"
    )


def _same_file(placed: Path, printed: str) -> bool:
    if os.path.normpath(str(placed)) == os.path.normpath(printed):
        return True
    return os.path.realpath(placed) == os.path.realpath(printed)


def _digest(path: Optional[Path], algo: str) -> Optional[str]:
    """`path`'s hash by CMake's algorithm name (MD5, SHA256, SHA3_256), None if unreadable."""
    if path is None:
        return None
    try:
        return digest(path, ARCHIVE, algo)
    except (UsageError, ValueError):  # unreadable, or an algorithm hashlib does not know
        return None
