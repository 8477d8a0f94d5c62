"""What lets `setup` reuse a PASS: validation_key follows the installed package's files
(its set_env.bash among them) and the toolkit env, and nothing that is not judged."""

import os

from cannbuild.validate import ValidationInputs, validation_key

SET_ENV = 'export LD_LIBRARY_PATH="{vendor}/op_api/lib:$LD_LIBRARY_PATH"\n'


def package(tmp_path):
    vendor = tmp_path / "opp/vendors/custom_transformer"
    (vendor / "bin").mkdir(parents=True)
    (vendor / "op_api/lib").mkdir(parents=True)
    (vendor / "op_api/lib/libcust_opapi.so").write_bytes(b"\x7fELF")
    (vendor / "bin/set_env.bash").write_text(SET_ENV.format(vendor=vendor))
    return vendor


def key(vendor, **env):
    base = {"ASCEND_HOME_PATH": "/usr/local/Ascend/cann", "LD_LIBRARY_PATH": "/a/lib64"}
    inputs = ValidationInputs(
        vendor_dir=vendor,
        library=vendor / "op_api/lib/libcust_opapi.so",
        symbols=("aclnnFlashAttentionScoreV2",),
        env={**base, **env},
        workdir=vendor.parent / "validate",
        target="sandbox",
        no_device_reason="",
    )
    return validation_key(inputs)


def test_the_key_repeats_for_the_same_package_and_env(tmp_path):
    vendor = package(tmp_path)
    assert key(vendor) == key(vendor)


def test_an_edited_package_set_env_script_changes_the_key(tmp_path):
    vendor = package(tmp_path)
    before = key(vendor)
    script = vendor / "bin/set_env.bash"
    script.write_text(script.read_text() + "export ASCEND_CUSTOM_OPP_PATH=/elsewhere\n")
    assert key(vendor) != before


def test_a_rebuilt_library_with_the_same_size_changes_the_key(tmp_path):
    vendor = package(tmp_path)
    before = key(vendor)
    lib = vendor / "op_api/lib/libcust_opapi.so"
    stat = lib.stat()
    os.utime(lib, ns=(stat.st_atime_ns, stat.st_mtime_ns + 1_000_000_000))
    assert key(vendor) != before


def test_the_toolkit_env_changes_the_key_and_an_unjudged_variable_does_not(tmp_path):
    vendor = package(tmp_path)
    before = key(vendor)
    assert key(vendor, LD_LIBRARY_PATH="/b/lib64") != before
    assert key(vendor, ASCEND_HOME_PATH="/opt/cann") != before
    assert key(vendor, TERM="dumb", OLDPWD="/tmp") == before
