# queue.cmake — a GPU collective on the host only queues work (test_gpu_queue.c: 80 calls of
# new shapes queued behind a held stream return before it is released, results checked), at
# 2 and 3 ranks. Included by tests/CMakeLists.txt only when the CUDA backend is built.
add_executable(test_gpu_queue ${CMAKE_CURRENT_LIST_DIR}/test_gpu_queue.c)
target_link_libraries(test_gpu_queue PRIVATE duet_static)
target_include_directories(test_gpu_queue PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
duet_gpu_test(test_gpu_queue RANKS 2 3 TIMEOUT 180)
