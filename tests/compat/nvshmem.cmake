# tests/compat/nvshmem.cmake — Duet's NVSHMEM headers (compat/nvshmem). Included by
# compat/nvshmem/CMakeLists.txt (CUDA backend only).
#   nvshmem_compile        object library: every call of nvshmem.h / nvshmemx.h in a kernel and
#                          on the host (nvcc), and the host calls from a plain C++ file; the
#                          test compat.nvshmem_compile (label compat, no GPU) builds it
#   nvshmem_basic          NVSHMEM-named kernels run on the GPU (label gpu), 2 and 4 ranks
add_library(nvshmem_compile OBJECT ${CMAKE_CURRENT_LIST_DIR}/nvshmem_compile.cu)
target_link_libraries(nvshmem_compile PRIVATE duet_nvshmem)
include(CheckLanguage)
check_language(CXX)
if(CMAKE_CXX_COMPILER)
  enable_language(CXX)
  target_sources(nvshmem_compile PRIVATE ${CMAKE_CURRENT_LIST_DIR}/nvshmem_compile_host.cc)
  target_include_directories(nvshmem_compile PRIVATE ${CUDAToolkit_INCLUDE_DIRS})
  target_compile_options(nvshmem_compile PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Wall -Wextra -Wshadow>)
  if(DUET_WERROR)
    target_compile_options(nvshmem_compile PRIVATE $<$<COMPILE_LANGUAGE:CXX>:-Werror>)
  endif()
endif()
if(DUET_WERROR)
  target_compile_options(nvshmem_compile PRIVATE $<$<COMPILE_LANGUAGE:CUDA>:-Werror=all-warnings>)
endif()
add_test(NAME compat.nvshmem_compile
         COMMAND ${CMAKE_COMMAND} --build ${CMAKE_BINARY_DIR} --target nvshmem_compile)
set_tests_properties(compat.nvshmem_compile PROPERTIES LABELS compat TIMEOUT 300)

add_executable(nvshmem_basic ${CMAKE_CURRENT_LIST_DIR}/nvshmem_basic.cu ${CMAKE_CURRENT_LIST_DIR}/nvshmem_basic_kernels.cu)
target_link_libraries(nvshmem_basic PRIVATE duet_nvshmem)
duet_gpu_test(nvshmem_basic RANKS 2 4 TIMEOUT 120)
duet_gpu_test(nvshmem_basic RANKS 2 TIMEOUT 120 NAME uid ARGS --uid)

#   nvshmem_coll           wait / test sets, iput / iget, bitwise and float atomics, team
#                          collectives (device, host, on stream) (label gpu), 2, 3 and 4 ranks
add_executable(nvshmem_coll ${CMAKE_CURRENT_LIST_DIR}/nvshmem_coll.cu)
target_link_libraries(nvshmem_coll PRIVATE duet_nvshmem)
duet_gpu_test(nvshmem_coll RANKS 2 3 4 TIMEOUT 180)
