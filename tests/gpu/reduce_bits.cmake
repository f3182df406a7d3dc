# reduce_bits.cmake — MIN / MAX on GPU buffers give the promised bits for NaN and signed zeros
# (test_gpu_reduce_bits.c), at 2 and 3 ranks with the tuner's choice (one-shot and direct
# kernels) and at 3 with the ring (reduce: the chain) forced, the schedule executor. Included by
# tests/CMakeLists.txt only when the CUDA backend is built.
add_executable(test_gpu_reduce_bits ${CMAKE_CURRENT_LIST_DIR}/test_gpu_reduce_bits.c)
target_link_libraries(test_gpu_reduce_bits PRIVATE duet_static)
target_include_directories(test_gpu_reduce_bits PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
duet_gpu_test(test_gpu_reduce_bits RANKS 2 3 TIMEOUT 120)
duet_gpu_test(test_gpu_reduce_bits RANKS 3 TIMEOUT 120 NAME ring
              ENV DUET_ALGO=allreduce:ring,reduce:chain,reducescatter:ring)
