# cannbuild sandbox stand-in for cmake/modules/Finddlog.cmake (cannmirror/ops-transformer@v9.0.0
# :47-66, :92-97): dlog_pub.h under include/toolchain or pkg_inc/base, libascendalog.so on the
# prefix, and the folder above toolchain/ on the include path too.
find_path(dlog_TRANSFORMER_INCLUDE_DIR NAMES dlog_pub.h NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH
          PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX}/include/toolchain ${ASCEND_DIR}/pkg_inc/base)
find_library(dlog_SHARED_LIBRARY NAMES libascendalog.so PATH_SUFFIXES lib64
             NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH)
find_package_handle_standard_args(dlog FOUND_VAR dlog_FOUND REQUIRED_VARS dlog_TRANSFORMER_INCLUDE_DIR)
if(dlog_FOUND)
    add_library(dlog_headers INTERFACE IMPORTED)
    set_target_properties(dlog_headers PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "${dlog_TRANSFORMER_INCLUDE_DIR};${dlog_TRANSFORMER_INCLUDE_DIR}/..")
endif()
