#!/bin/bash
# cannbuild sandbox stand-in for ops-nn's install_deps.sh: build.sh sources it (build.sh:33-38)
# for check_dependencies_silent, which with --pkg requires pigz >= 2.4 and dos2unix on PATH
# (and, always, python3 >= 3.7, gcc >= 7.3.0, cmake >= 3.16.0), or says which are missing and
# fails (ops-nn@9.1.0:install_deps.sh:425-510).  Run on its own, the real script installs them
# with the system's package manager; the stand-in only says so.

# $1 >= $2, dotted versions
version_ge() {
    [ "$(printf '%s\n%s\n' "$2" "$1" | sort -V | head -n1)" = "$2" ]
}

check_dependencies_silent() {
    local args=("$@")
    local check_pkgz="false"
    local check_dos2unix="false"
    local arg
    for arg in "${args[@]}"; do
        case "$arg" in
            --pkg)
                check_pkgz="true"
                check_dos2unix="true"
                ;;
            --opkernel)
                check_dos2unix="true"
                ;;
        esac
    done

    local missing_deps=()
    declare -A req_versions
    req_versions["Python"]="3.7.0"
    req_versions["GCC"]="7.3.0"
    req_versions["CMake"]="3.16.0"
    req_versions["pigz"]="2.4"
    req_versions["dos2unix"]=""

    check_deps() {
        local name="$1" cmd="$2" req_ver="$3" curr_ver=""
        if ! command -v "$cmd" &> /dev/null; then
            missing_deps+=("$name")
            return
        fi
        if [[ -n "$req_ver" ]]; then
            case "$cmd" in
                python3) curr_ver=$(python3 --version 2>&1 | awk '{print $2}') ;;
                gcc) curr_ver=$(gcc --version | awk '/^gcc/ {print $NF}') ;;
                cmake) curr_ver=$(cmake --version | awk '/^cmake/ {print $3}') ;;
                pigz) curr_ver=$(pigz --version 2>&1 | awk '{print $2}') ;;
            esac
            if [[ -z "$curr_ver" ]] || ! version_ge "$curr_ver" "$req_ver"; then
                missing_deps+=("$name")
            fi
        fi
    }

    check_deps "Python" "python3" "${req_versions["Python"]}"
    check_deps "GCC" "gcc" "${req_versions["GCC"]}"
    check_deps "CMake" "cmake" "${req_versions["CMake"]}"
    if [[ "$check_dos2unix" == "true" ]]; then
        check_deps "dos2unix" "dos2unix" "${req_versions["dos2unix"]}"
    fi
    if [[ "$check_pkgz" == "true" ]]; then
        check_deps "pigz" "pigz" "${req_versions["pigz"]}"
    fi

    if [[ ${#missing_deps[@]} -eq 0 ]]; then
        return 0
    fi
    echo -e "\n Missing dependencies:"
    local dep
    for dep in "${missing_deps[@]}"; do
        if [[ -n "${req_versions[$dep]}" ]]; then
            echo " - $dep (required: >= ${req_versions[$dep]})"
        else
            echo " - $dep"
        fi
    done
    echo -e "\n Please run:"
    echo -e "\n    bash install_deps.sh\n"
    echo -e "    to install all missing dependencies."
    echo -e "    After installation, re-run this script.\n"
    return 1
}

if [[ "${BASH_SOURCE[0]}" == "$0" ]]; then
    echo "cannbuild sandbox stand-in: install pigz (>= 2.4), dos2unix, python3, gcc and cmake with the system's package manager"
    exit 1
fi
