# graph.cmake — GPU collectives captured into CUDA graphs and replayed (test_gpu_graph.c): 100
# mixed calls replayed 1,000 times at 2 and 3 ranks; a replay alone ended by the wait timeout
# and by a revoke. Included by tests/CMakeLists.txt only when the CUDA backend is built.
add_executable(test_gpu_graph ${CMAKE_CURRENT_LIST_DIR}/test_gpu_graph.c)
target_link_libraries(test_gpu_graph PRIVATE duet_static)
target_include_directories(test_gpu_graph PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
duet_gpu_test(test_gpu_graph RANKS 2 3 TIMEOUT 300)
duet_gpu_test(test_gpu_graph RANKS 2 TIMEOUT 120 NAME timeout ENV DUET_WAIT_TIMEOUT=3 ARGS timeout)
duet_gpu_test(test_gpu_graph RANKS 2 TIMEOUT 120 NAME revoke ARGS revoke)
