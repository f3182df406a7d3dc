# heap.cmake — the GPU symmetric heap from the host (test_gpu_heap.c), at 2 and 4 ranks, with
# VMM (the default) and with the cudaIpc fallback (DUET_CUDA=ipc). Included by
# tests/CMakeLists.txt only when the CUDA backend is built.
add_executable(test_gpu_heap ${CMAKE_CURRENT_LIST_DIR}/test_gpu_heap.c)
target_link_libraries(test_gpu_heap PRIVATE duet_static)
target_include_directories(test_gpu_heap PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
duet_gpu_test(test_gpu_heap RANKS 1 2 4 TIMEOUT 120)
duet_gpu_test(test_gpu_heap RANKS 2 4 TIMEOUT 120 NAME ipc ENV DUET_CUDA=ipc)
