# cannbuild sandbox stand-in for cmake/modules/Findsecurec.cmake (cannmirror/ops-transformer@v9.0.0
# :16-30, :52-60): securec.h in the include folder, libc_sec.a and libc_sec.so in lib64; the
# build links the imported c_sec.
find_path(C_SEC_INCLUDE NAMES securec.h PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX}/include)
find_library(C_SEC_STATIC_LIBRARY NAMES libc_sec.a PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX} PATH_SUFFIXES lib64)
find_library(C_SEC_SHARED_LIBRARY NAMES libc_sec.so PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX} PATH_SUFFIXES lib64)
find_package_handle_standard_args(securec FOUND_VAR securec_FOUND
    REQUIRED_VARS C_SEC_INCLUDE C_SEC_STATIC_LIBRARY C_SEC_SHARED_LIBRARY)
if(securec_FOUND)
    add_library(c_sec SHARED IMPORTED)
    set_target_properties(c_sec PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES "${C_SEC_INCLUDE}"
        IMPORTED_LOCATION "${C_SEC_SHARED_LIBRARY}")
endif()
