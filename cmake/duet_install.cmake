# duet_install.cmake — what `cmake --install build --prefix P` (and `make install PREFIX=P`)
# puts where, under the prefix (GNUInstallDirs: lib may be lib64 or lib/<multiarch>):
#
#   include/duet/            duet.h, duet_cuda.h, duet_ext.h and the device API (*.cuh)
#   include/                 shmem.h, shmem_generic.h, shmemx.h (OpenSHMEM)
#   include/duet-nccl/       nccl.h (its own folder: never in front of NVIDIA's)
#   include/duet-nvshmem/    nvshmem.h, nvshmemx.h (CUDA builds; the same reason)
#   lib/libduet.so.0.1.0     with soname libduet.so.0, and libduet.so; lib/libduet.a
#   lib/libduet_shmem.so.1.5.0   soname libduet_shmem.so.1, RUNPATH $ORIGIN
#   lib/duet-nccl/libnccl.so.2   Duet's NCCL (its own folder: docs/MIGRATING_NCCL.md)
#   lib/pkgconfig/duet.pc, duet-shmem.pc     relocatable (${pcfiledir})
#   lib/cmake/Duet/          find_package(Duet): Duet::duet, Duet::shmem, Duet::device
#   bin/                     duetrun, duetcc, duet-perf, duet-info, duet-sim (duet-ucx-probe)
#   lib/python/duet/         the Python module (PYTHONPATH=PREFIX/lib/python; it loads
#                            PREFIX/lib/libduet.so.0)
#
# Nothing installed names the build or source tree, and the prefix can be moved after
# installing: the tools are static, duetcc and the pkg-config files find the prefix from
# where they lie, the CMake package from its own location (tests/tools/install.sh checks).

# the device API: header-only, the library's include folder (.cuh: nvcc, C++17)
add_library(duet_device INTERFACE)
target_link_libraries(duet_device INTERFACE duet)
set_target_properties(duet_device PROPERTIES EXPORT_NAME device)

set(DUET_INSTALL_TARGETS duet duet_device)
if(TARGET duet_shmem)
  list(APPEND DUET_INSTALL_TARGETS duet_shmem)
endif()
install(TARGETS ${DUET_INSTALL_TARGETS} EXPORT DuetTargets
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR}
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
# the static library: the same objects; installed under the plain name
install(FILES $<TARGET_FILE:duet_static> DESTINATION ${CMAKE_INSTALL_LIBDIR} RENAME libduet.a)
install(DIRECTORY ${CMAKE_SOURCE_DIR}/include/duet DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
if(TARGET duet_shmem)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/compat/shmem/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
endif()
install(TARGETS duet_nccl LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR}/duet-nccl)
install(FILES ${CMAKE_SOURCE_DIR}/compat/nccl/include/nccl.h DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/duet-nccl)
if(TARGET duet_nvshmem)
  install(DIRECTORY ${CMAKE_SOURCE_DIR}/compat/nvshmem/include/ DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/duet-nvshmem)
endif()

# the tools (linked with the static objects: nothing to find at run time but the system's)
set(DUET_INSTALL_TOOLS duetrun duet-info duet-perf duet-sim)
if(TARGET duet-ucx-probe)
  list(APPEND DUET_INSTALL_TOOLS duet-ucx-probe)
endif()
install(TARGETS ${DUET_INSTALL_TOOLS} RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR})
if(TARGET duet_shmem) # duetcc as installed: paths from the prefix it lies in
  set(DUETCC_CC ${CMAKE_C_COMPILER})
  set(DUETCC_EXTRA "")
  if(DUET_SANITIZE) # a sanitized libduet needs sanitized programs
    set(DUETCC_EXTRA "-fsanitize=address,undefined")
  endif()
  set(DUETCC_INCLUDES "-I$prefix/${CMAKE_INSTALL_INCLUDEDIR}")
  set(DUETCC_LIBDIR "$prefix/${CMAKE_INSTALL_LIBDIR}")
  configure_file(${CMAKE_SOURCE_DIR}/compat/shmem/duetcc.in ${CMAKE_BINARY_DIR}/install/duetcc @ONLY)
  install(PROGRAMS ${CMAKE_BINARY_DIR}/install/duetcc DESTINATION ${CMAKE_INSTALL_BINDIR})
endif()

install(DIRECTORY ${CMAKE_SOURCE_DIR}/python/duet DESTINATION ${CMAKE_INSTALL_LIBDIR}/python
        PATTERN __pycache__ EXCLUDE)

# pkg-config: the prefix is where the file lies, up the library folder's depth
file(RELATIVE_PATH DUET_PC_UP /p/${CMAKE_INSTALL_LIBDIR}/pkgconfig /p)
string(REGEX REPLACE "/$" "" DUET_PC_UP "${DUET_PC_UP}")
set(DUET_PC_PRIVATE "-lpthread -lm -lrt")
if(DUET_HAVE_UCX)
  if(DUET_UCX_PC_FOUND)
    set(DUET_PC_REQUIRES_PRIVATE "ucx")
  else()
    string(APPEND DUET_PC_PRIVATE " -lucp -luct -lucs")
  endif()
endif()
if(DUET_HAVE_CUDA) # the static archive holds the CUDA backend: the static runtime
  string(APPEND DUET_PC_PRIVATE " -L${CUDAToolkit_LIBRARY_DIR} -lcudart_static -ldl -lstdc++") # (.cu objects: C++)
endif()
configure_file(${CMAKE_SOURCE_DIR}/cmake/duet.pc.in ${CMAKE_BINARY_DIR}/install/duet.pc @ONLY)
configure_file(${CMAKE_SOURCE_DIR}/cmake/duet-shmem.pc.in ${CMAKE_BINARY_DIR}/install/duet-shmem.pc @ONLY)
install(FILES ${CMAKE_BINARY_DIR}/install/duet.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
if(TARGET duet_shmem)
  install(FILES ${CMAKE_BINARY_DIR}/install/duet-shmem.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig)
endif()

# the CMake package
include(CMakePackageConfigHelpers)
install(EXPORT DuetTargets NAMESPACE Duet:: DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Duet)
configure_package_config_file(${CMAKE_SOURCE_DIR}/cmake/DuetConfig.cmake.in
                              ${CMAKE_BINARY_DIR}/install/DuetConfig.cmake
                              INSTALL_DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Duet)
write_basic_package_version_file(${CMAKE_BINARY_DIR}/install/DuetConfigVersion.cmake
                                 VERSION ${PROJECT_VERSION} COMPATIBILITY SameMinorVersion)
install(FILES ${CMAKE_BINARY_DIR}/install/DuetConfig.cmake ${CMAKE_BINARY_DIR}/install/DuetConfigVersion.cmake
        DESTINATION ${CMAKE_INSTALL_LIBDIR}/cmake/Duet)
