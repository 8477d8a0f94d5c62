# cannbuild sandbox stand-in for cmake/modules/Findmetadef.cmake (cannmirror/ops-transformer@v9.0.0
# :17-217): register/register.h in the include folder, the metadef libraries (the stand-in
# links none of them: they are empty stand-ins), and the folder and its exe_graph/ on the
# include path.
find_path(METADEF_INC_DIR NAMES register/register.h PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX}/include
          NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH)
find_library(REGISTER_LIB_DIR NAME register PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX} PATH_SUFFIXES lib64
             NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH)
find_library(OPP_REGISTER_LIB_DIR NAME opp_registry PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX} PATH_SUFFIXES lib64
             NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH)
find_library(EXEGRAPH_LIB_DIR NAME exe_graph PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX} PATH_SUFFIXES lib64
             NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH)
find_library(GRAPH_BASE_LIB_DIR NAME graph_base PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX} PATH_SUFFIXES lib64
             NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH)
find_library(ERROR_MANAGER_LIB_DIR NAME error_manager PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX} PATH_SUFFIXES lib64
             NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH)
find_library(METADEF_LIB_DIR NAME metadef PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX} PATH_SUFFIXES lib64
             NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH)
find_library(REGISTER_STATIC_LIB_DIR NAME librt2_registry.a PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX} PATH_SUFFIXES lib64
             NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH)
find_library(GRAPH_LIB_DIR NAME graph PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX} PATH_SUFFIXES lib64
             NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH)
find_package_handle_standard_args(metadef REQUIRED_VARS METADEF_INC_DIR)
if(metadef_FOUND)
    set(METADEF_INCLUDE_DIRS ${METADEF_INC_DIR}/ ${METADEF_INC_DIR}/exe_graph)
endif()
