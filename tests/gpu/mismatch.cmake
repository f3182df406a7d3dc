# mismatch.cmake — ranks that make different collective calls on GPU buffers are caught
# (test_gpu_mismatch.c): DUET_ERR_INVALID_ARG on every rank, naming the odd rank and the field,
# then shrink and a checked matched call. At 2 and 3 ranks: the full checks; with buffers in
# the GPU heap (direct kernels); without the host's comparison at queue time (the kernels and
# the host agreement); and with every call in the executor as well (its kernel alone).
add_executable(test_gpu_mismatch ${CMAKE_CURRENT_LIST_DIR}/test_gpu_mismatch.c)
target_link_libraries(test_gpu_mismatch PRIVATE duet_static)
target_include_directories(test_gpu_mismatch PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
duet_gpu_test(test_gpu_mismatch RANKS 2 3 TIMEOUT 300 ENV DUET_CUDA_HEAP_SIZE=4G DUET_WAIT_TIMEOUT=60)
duet_gpu_test(test_gpu_mismatch RANKS 2 TIMEOUT 300 NAME heap
              ENV DUET_CUDA_HEAP_SIZE=4G DUET_WAIT_TIMEOUT=60 TEST_MISMATCH_HEAP=1)
duet_gpu_test(test_gpu_mismatch RANKS 2 3 TIMEOUT 300 NAME kernels
              ENV DUET_CUDA_HEAP_SIZE=4G DUET_WAIT_TIMEOUT=60 DUET_TEST_SIG_POST=0)
duet_gpu_test(test_gpu_mismatch RANKS 2 3 TIMEOUT 300 NAME executor
              ENV DUET_CUDA_HEAP_SIZE=4G DUET_WAIT_TIMEOUT=60 DUET_TEST_SIG_POST=0 "DUET_ALGO=allreduce:ring,broadcast:tree,reduce:tree,allgather:ring,reducescatter:ring,alltoall:pairwise")
