"""cannbuild sandbox stand-in for check_build_dependencies.py.

    python3 check_build_dependencies.py <ascend_install_path> <pkg> <spec> [<pkg> <spec> ...]

Reads <root>/share/info/<pkg>/version.info and checks `Version=` against specs
such as ">=8.5".  Same rules and messages as the real script: a missing file or
a non-numeric version is an ERROR (exit 1); a version that is too old is only a
WARNING and the build continues.
"""

import logging
import os
import sys

logging.basicConfig(
    format="check_build_dependencies.py: %(levelname)s: %(message)s", level=logging.INFO
)


def read_version(root, pkg):
    path = os.path.join(root, "share", "info", pkg, "version.info")
    if not os.path.isfile(path):
        logging.error("%s does not exist in read_pkg_version!", path)
        return None
    with open(path, encoding="utf-8") as fh:
        for line in fh:
            if line.startswith("Version="):
                return line.strip().split("=", 1)[1].split("-", 1)[0]
    logging.error("The version field was not found in %s in read_pkg_version!", path)
    return None


def satisfies(version, spec):
    for op in (">=", "<=", ">", "<", "=="):
        if spec.startswith(op):
            want = spec[len(op) :]
            break
    else:
        op, want = "==", spec
    have = [int(p) for p in version.split(".")]
    need = [int(p) for p in want.split(".")]
    width = max(len(have), len(need))
    have += [0] * (width - len(have))
    need += [0] * (width - len(need))
    return {
        ">=": have >= need,
        "<=": have <= need,
        ">": have > need,
        "<": have < need,
        "==": have == need,
    }[op]


def main(argv):
    root, deps = argv[1], argv[2:]
    if len(deps) % 2:
        logging.error("The deps argument must contain an even number of elements!")
        return 1
    ok = True
    for pkg, spec in zip(deps[::2], deps[1::2]):
        version = read_version(root, pkg)
        if version is None:
            ok = False
            continue
        try:
            good = satisfies(version, spec)
        except ValueError:
            logging.error(
                "Check build dependency error! version is %s, dep_info is %s.", version, spec
            )
            ok = False
            continue
        if not good:
            logging.warning(
                "Check build dependency failed! Required %s version is %s, but %s version is %s.",
                pkg,
                spec,
                pkg,
                version,
            )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv))
