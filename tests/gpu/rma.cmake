# rma.cmake — the host one-sided calls on GPU heap memory and their stream-ordered forms
# (test_gpu_rma.c, kernels in test_gpu_rma.cu), at 2 and 4 ranks, VMM (the default) and the
# cudaIpc fallback (DUET_CUDA=ipc). Included by tests/CMakeLists.txt only with the CUDA backend.
add_executable(test_gpu_rma ${CMAKE_CURRENT_LIST_DIR}/test_gpu_rma.c ${CMAKE_CURRENT_LIST_DIR}/test_gpu_rma.cu)
target_link_libraries(test_gpu_rma PRIVATE duet_static)
target_include_directories(test_gpu_rma PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_LIST_DIR})
target_compile_features(test_gpu_rma PRIVATE cuda_std_17)
duet_gpu_test(test_gpu_rma RANKS 2 4 TIMEOUT 120)
duet_gpu_test(test_gpu_rma RANKS 2 TIMEOUT 120 NAME ipc ENV DUET_CUDA=ipc)
