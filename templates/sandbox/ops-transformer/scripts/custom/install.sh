#!/bin/bash
# cannbuild sandbox stand-in for ops-transformer's custom package installer.
# Target: --install-path=<abs> (then bin/set_env.bash is written), else
# $ASCEND_CUSTOM_OPP_PATH, else $ASCEND_OPP_PATH (then vendors/config.ini).
vendor_name=customize
PKG_DIR=$(cd "$(dirname "$0")"; pwd)
QUIET=y
install_path=""
install_for_all=n

log() { echo "[ops_custom] [$(date '+%Y-%m-%d %H:%M:%S')] $*"; }

while [ $# -gt 0 ]; do
    case "$1" in
        --quiet) QUIET=y; shift ;;
        --install-path=*) install_path="${1#--install-path=}"; install_path="${install_path%/}"; shift ;;
        --install-for-all) install_for_all=y; shift ;;
        --*) shift ;;
        *) break ;;
    esac
done

if [ -n "${install_path}" ]; then
    case "${install_path}" in
        /*) ;;
        *) log "[ERROR] use absolute path for --install-path argument"; exit 1 ;;
    esac
    if [ ! -d "${install_path}" ]; then
        mkdir "${install_path}" || { log "[ERROR] create ${install_path}  failed"; exit 1; }
    fi
    targetdir="${install_path}"
elif [ -n "${ASCEND_CUSTOM_OPP_PATH}" ]; then
    case "${ASCEND_CUSTOM_OPP_PATH}" in
        *:*) log "[ERROR] environment variable ASCEND_CUSTOM_OPP_PATH=${ASCEND_CUSTOM_OPP_PATH} is set and has multiple path in it (colon inside), please set a single path"; exit 1 ;;
    esac
    mkdir -p "${ASCEND_CUSTOM_OPP_PATH}"
    targetdir="${ASCEND_CUSTOM_OPP_PATH}"
else
    if [ -z "${ASCEND_OPP_PATH}" ]; then
        log "[ERROR] env ASCEND_OPP_PATH no exist"
        exit 1
    fi
    targetdir="${ASCEND_OPP_PATH}"
fi
if [ ! -d "${targetdir}" ]; then
    log "[ERROR] ${targetdir} no exist"
    exit 1
fi
if [ ! -w "${targetdir}" ]; then
    log "[WARNING] ${targetdir} is not writable by $(id -un)"
fi

vendordir="${targetdir}/vendors/${vendor_name}"
mkdir -p "${vendordir}"
log "[INFO] copy uninstall sh success"
for part in framework op_proto op_impl op_api; do
    log "[INFO] upgrade ${part/_/ }"
    if [ -d "${PKG_DIR}/packages/vendors/${vendor_name}/${part}" ]; then
        rm -rf "${vendordir:?}/${part}"
        cp -rf "${PKG_DIR}/packages/vendors/${vendor_name}/${part}" "${vendordir}/" || { log "[ERROR] copy ${part} failed"; exit 1; }
    fi
done
log "[INFO] upgrade version.info"
cp -f "${PKG_DIR}/packages/vendors/${vendor_name}/version.info" "${vendordir}/version.info"

if [ -n "${install_path}" ]; then
    mkdir -p "${vendordir}/bin"
    echo -e "#!/bin/bash\nexport ASCEND_CUSTOM_OPP_PATH=${vendordir}:\${ASCEND_CUSTOM_OPP_PATH}\nexport LD_LIBRARY_PATH=${vendordir}/op_api/lib/:\${LD_LIBRARY_PATH}" > "${vendordir}/bin/set_env.bash"
    log "[INFO] using requirements: when custom module install finished or before you run the custom module, execute the command [ source ${vendordir}/bin/set_env.bash ] to set the environment path"
else
    config="${targetdir}/vendors/config.ini"
    if [ ! -f "${config}" ]; then
        touch "${config}"
        chmod 640 "${config}"
        echo "load_priority=${vendor_name}" > "${config}"
    else
        others=$(grep '^load_priority=' "${config}" | cut -d= -f2 | tr ',' '\n' | grep -v "^${vendor_name}\$" | grep -v '^$' | paste -sd, -)
        if [ -n "${others}" ]; then
            sed -i "s/^load_priority=.*/load_priority=${vendor_name},${others}/" "${config}"
        fi
    fi
    [ "${install_for_all}" = y ] && chmod 755 "${config}"
    log "[INFO] using requirements: when custom module install finished or before you run the custom module, execute the command [ export LD_LIBRARY_PATH=${vendordir}/op_api/lib/:\${LD_LIBRARY_PATH} ] to set the environment path"
fi
echo "SUCCESS"
exit 0
