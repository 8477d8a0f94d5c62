# cannbuild sandbox stand-in for cmake/modules/Findnnopbase.cmake (cannmirror/ops-transformer@v9.0.0
# :19-75): aclnn/aclnn_base.h in the include folder, opdev/op_errno.h under include/aclnn,
# libnnopbase as the imported nnopbase.
find_path(NNOPBASE_ACLNN_INC_DIR NAMES aclnn/aclnn_base.h PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX}/include
          NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH)
find_path(NNOPBASE_OPDEV_INC_DIR NAMES opdev/op_errno.h PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX}/include/aclnn
          NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH)
find_library(NNOPBASE_LIB_DIR NAME nnopbase PATHS ${ASCEND_DIR}/${SYSTEM_PREFIX} PATH_SUFFIXES lib64
             NO_CMAKE_SYSTEM_PATH NO_CMAKE_FIND_ROOT_PATH)
if(NNOPBASE_LIB_DIR)
    add_library(nnopbase SHARED IMPORTED)
    set_target_properties(nnopbase PROPERTIES
        INTERFACE_INCLUDE_DIRECTORIES ${NNOPBASE_OPDEV_INC_DIR}
        IMPORTED_LOCATION ${NNOPBASE_LIB_DIR})
endif()
set(NNOPBASE_INCLUDE_DIRS ${NNOPBASE_ACLNN_INC_DIR} ${NNOPBASE_OPDEV_INC_DIR})
