# cannbuild sandbox stand-in for cmake/modules/Findtilingapi.cmake (cannmirror/ops-transformer@v9.0.0
# :17-65): tiling/tiling_api.h where CMAKE_PREFIX_PATH leads (the real module names an unset
# variable in PATHS, so <prefix>/include is all it searches) and libtiling_api.a.
find_path(TILINGAPI_INC_DIR NAMES tiling/tiling_api.h PATHS ${TILINGAPI_SEARCH_PATHS}
          NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH)
find_library(TILINGAPI_LIB_DIR NAME libtiling_api.a PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX} PATH_SUFFIXES lib64
             NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH)
if(TILINGAPI_LIB_DIR AND NOT TARGET tiling_api)
    add_library(tiling_api STATIC IMPORTED)
    set_target_properties(tiling_api PROPERTIES IMPORTED_LOCATION ${TILINGAPI_LIB_DIR})
endif()
set(TILINGAPI_INC_DIRS ${TILINGAPI_INC_DIR})
