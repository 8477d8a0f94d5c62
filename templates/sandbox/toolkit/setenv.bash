#!/bin/bash
# cannbuild sandbox: the toolkit package's bin/setenv.bash, which (unlike
# set_env.sh) finds the install from its own location.
CUR_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
INSTALL_DIR=$(cd "${CUR_DIR}/.." && pwd)
export TOOLCHAIN_HOME=${INSTALL_DIR}/toolkit
for _dir in "${INSTALL_DIR}/compiler/ccec_compiler/bin" "${INSTALL_DIR}/tools/ccec_compiler/bin"; do
    case ":${PATH}:" in
        *":${_dir}:"*) ;;
        *) [ -d "${_dir}" ] && export PATH=${_dir}:${PATH} ;;
    esac
done
unset _dir
