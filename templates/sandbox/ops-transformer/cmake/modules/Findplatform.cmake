# cannbuild sandbox stand-in for cmake/modules/Findplatform.cmake (cannmirror/ops-transformer@v9.0.0
# :18-34): platform/platform_info.h and libplatform.
find_path(PLATFORM_INC_DIR NAMES platform/platform_info.h PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX}/include
          NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH)
find_library(PLATFORM_LIB_DIR NAME platform PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX} PATH_SUFFIXES lib64
             NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH)
find_package_handle_standard_args(platform REQUIRED_VARS PLATFORM_INC_DIR)
if(PLATFORM_LIB_DIR)
    add_library(platform SHARED IMPORTED)
    set_target_properties(platform PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES ${PLATFORM_INC_DIR}
        IMPORTED_LOCATION ${PLATFORM_LIB_DIR})
endif()
