"""Known failure messages of the CANN builds and installers, each with its fix.

Matched against a failed step's log; the first pattern (in this order) that
matches gives the digest's hint, with `{1}`… filled from the match.
"""

from __future__ import annotations

import re
from typing import Iterable, Optional, Tuple

from msgspec import Struct


class Hint(Struct, frozen=True, kw_only=True):
    pattern: str
    text: str


# Order matters: the specific messages come first, the generic compiler `error: ` near the end,
# since one log often holds several.  Where a message comes from is noted per entry.
HINTS: Tuple[Hint, ...] = (
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
    # CMake's hash check after a download; the file name sits on its own line, hence `\s+`:
    #   error: SHA256 hash of
    #     /.../makeself-release-2.5.0-patch1.tar.gz
    #   does not match expected value
    Hint(
        pattern=r"error: (SHA256|MD5) hash of\s+(\S+)\s+does not match expected value",
        text="{2} is not the file this ref's CMake pins ({1} differs): a third-party copy in the checkout "
        "was changed, or a download served another file. Delete the checkout under the workspace's "
        "src/ and run again (cannbuild puts the locked archives back), and check the mirror.",
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


def match_hint(lines: Iterable[str]) -> Optional[str]:
    lines = list(lines)
    text = "\n".join(lines)
    for hint in HINTS:
        match = re.search(hint.pattern, text)
        if match:
            # An optional group that did not take part fills its `{n}` with "".
            groups = [g or "" for g in match.groups()]
            out = hint.text
            for i, g in enumerate(groups, 1):
                out = out.replace("{" + str(i) + "}", g)
            # The whole line of the match, for the `{line}` of the generic compiler hint.
            line = text[text.rfind("\n", 0, match.start()) + 1 :].split("\n", 1)[0].strip()
            return out.replace("{line}", line[:200])
    return None
