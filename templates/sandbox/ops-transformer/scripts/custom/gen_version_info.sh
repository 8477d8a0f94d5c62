#!/bin/bash
# cannbuild sandbox stand-in: the custom package's version.info records the
# compiler version of the CANN it was built against.
cann_path="$1"
out="$2"
version=$(grep '^Version=' "${cann_path}/compiler/version.info" 2>/dev/null | head -1 | cut -d= -f2)
echo "custom_opp_compiler_version=${version}" > "${out}"
