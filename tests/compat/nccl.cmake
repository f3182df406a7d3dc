# tests/compat/nccl.cmake — the NCCL API layer's tests (label compat; GPU variant: label gpu).
# Included by compat/nccl/CMakeLists.txt. The programs use NCCL's API only and link Duet's
# libnccl.so.2; the main one is built against NVIDIA's nccl.h (from the CUDA toolkit) and
# against Duet's (header parity).
set(NCCL_TESTS ${CMAKE_SOURCE_DIR}/tests/compat)
find_path(DUET_REAL_NCCL_INCLUDE nccl.h
  PATHS ${CUDAToolkit_INCLUDE_DIRS} /usr/local/cuda-13.0/include /usr/local/cuda/include NO_DEFAULT_PATH)

# duet_nccl_program(<name> <source> REAL|OURS [DEFINES ...]): a program against one header
function(duet_nccl_program name src which)
  cmake_parse_arguments(P "" "" "DEFINES" ${ARGN})
  add_executable(${name} ${src})
  if(which STREQUAL "REAL")
    target_include_directories(${name} BEFORE PRIVATE ${DUET_REAL_NCCL_INCLUDE})
    target_compile_definitions(${name} PRIVATE NCCL_TEST_REAL_HEADER=1 ${P_DEFINES})
    # the real header's only: our library is linked by path, so compat/nccl/include stays off
    target_link_libraries(${name} PRIVATE $<TARGET_FILE:duet_nccl> m)
    add_dependencies(${name} duet_nccl)
  else()
    target_compile_definitions(${name} PRIVATE NCCL_TEST_OUR_HEADER=1 ${P_DEFINES})
    target_link_libraries(${name} PRIVATE duet_nccl m)
  endif()
  set_target_properties(${name} PROPERTIES BUILD_RPATH $<TARGET_FILE_DIR:duet_nccl>)
endfunction()

function(duet_nccl_test name)
  add_test(NAME ${name} COMMAND ${ARGN})
  set_tests_properties(${name} PROPERTIES LABELS compat TIMEOUT 180)
endfunction()

# header parity: the same program against our header
duet_nccl_program(nccl_api_test_ours ${NCCL_TESTS}/nccl_api_test.c OURS)
duet_nccl_program(nccl_layout_test_ours ${NCCL_TESTS}/nccl_layout_test.c OURS)
duet_nccl_test(compat.nccl_layout.ours nccl_layout_test_ours)
foreach(n 1 3)
  duet_nccl_test(compat.nccl_api.ours.${n} nccl_api_test_ours ${n})
endforeach()

add_executable(nccl_symbols_test ${NCCL_TESTS}/nccl_symbols_test.c)
target_link_libraries(nccl_symbols_test PRIVATE ${CMAKE_DL_LIBS})
add_dependencies(nccl_symbols_test duet_nccl)

find_program(DUET_READELF readelf)
if(DUET_READELF)
  duet_nccl_test(compat.nccl_abi sh ${NCCL_TESTS}/nccl_abi_check.sh $<TARGET_FILE:duet_nccl>)
endif()

if(DUET_REAL_NCCL_INCLUDE)
  duet_nccl_program(nccl_api_test_real ${NCCL_TESTS}/nccl_api_test.c REAL)
  duet_nccl_program(nccl_layout_test_real ${NCCL_TESTS}/nccl_layout_test.c REAL)
  duet_nccl_program(nccl_ft_test ${NCCL_TESTS}/nccl_ft_test.c REAL)
  duet_nccl_program(nccl_initall_test ${NCCL_TESTS}/nccl_initall_test.c REAL)
  duet_nccl_test(compat.nccl_layout.real nccl_layout_test_real)
  duet_nccl_test(compat.nccl_symbols nccl_symbols_test $<TARGET_FILE:duet_nccl> ${DUET_REAL_NCCL_INCLUDE}/nccl.h)
  foreach(n 1 2 3 4 5)
    duet_nccl_test(compat.nccl_api.real.${n} nccl_api_test_real ${n})
  endforeach()
  foreach(n 2 4)
    duet_nccl_test(compat.nccl_ft.${n} nccl_ft_test ${n})
  endforeach()
  duet_nccl_test(compat.nccl_initall.3 nccl_initall_test 3)
else()
  message(STATUS "duet: NVIDIA's nccl.h not found: the NCCL tests run against Duet's header only")
  duet_nccl_test(compat.nccl_symbols nccl_symbols_test $<TARGET_FILE:duet_nccl>
                 ${CMAKE_SOURCE_DIR}/compat/nccl/include/nccl.h)
endif()

# GPU buffers (the device machine): the same program with NCCL_TEST_DEVICE, against NVIDIA's
# header where there is one (the GPU machine's toolkit may have none: then against ours, whose
# layout the tests above check)
if(DUET_HAVE_CUDA)
  if(DUET_REAL_NCCL_INCLUDE)
    duet_nccl_program(nccl_api_test_gpu ${NCCL_TESTS}/nccl_api_test.c REAL DEFINES NCCL_TEST_DEVICE=1)
  else()
    duet_nccl_program(nccl_api_test_gpu ${NCCL_TESTS}/nccl_api_test.c OURS DEFINES NCCL_TEST_DEVICE=1)
  endif()
  target_link_libraries(nccl_api_test_gpu PRIVATE CUDA::cudart)
  foreach(n 2 4)
    duet_gpu_test(nccl_api_test_gpu RANKS 1 NAME r${n} TIMEOUT 300 ARGS ${n})
  endforeach()
endif()

# PyTorch (torch.distributed, backend "nccl") on our library by LD_PRELOAD, 2 and 4 processes on
# one or two GPUs (label gpu; under scripts/with-mps.sh for ranks sharing a GPU). Skipped (77,
# with the reason) where python3 cannot import torch or no GPU is visible.
if(DUET_HAVE_CUDA)
  add_test(NAME gpu.nccl_torch COMMAND sh ${NCCL_TESTS}/nccl_torch.sh $<TARGET_FILE:duet_nccl>)
  set_tests_properties(gpu.nccl_torch PROPERTIES LABELS gpu TIMEOUT 2700 SKIP_RETURN_CODE 77)
endif()
