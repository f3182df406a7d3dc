# tune_learn.cmake — the learning tuner on GPU calls (test_gpu_tune_learn.c: six shapes on
# cudaMalloc'd buffers learned alike on every rank, results checked; calls on trial only
# queue), at 2 and 3 ranks, and with DUET_TUNE_LEARN=0. Included by tests/CMakeLists.txt only
# when the CUDA backend is built.
add_executable(test_gpu_tune_learn ${CMAKE_CURRENT_LIST_DIR}/test_gpu_tune_learn.c)
target_link_libraries(test_gpu_tune_learn PRIVATE duet_static)
target_include_directories(test_gpu_tune_learn PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_SOURCE_DIR}/src)
duet_gpu_test(test_gpu_tune_learn RANKS 2 3 TIMEOUT 180)
duet_gpu_test(test_gpu_tune_learn NAME nolearn RANKS 2 TIMEOUT 180 ENV DUET_TUNE_LEARN=0 TEST_LEARN_OFF=1)
