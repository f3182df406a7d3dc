# gpu.cmake — moe_gpu: moe.c's dispatch and combine on the GPU, (a) duet_alltoall over padded
# device buffers with pack / expert / combine kernels against (b) one kernel per phase that puts
# every copy into its slot and signals counts from the device (README.md, "On the GPU").
# Included by examples/CMakeLists.txt when the CUDA backend is built; the tests run on the GPU
# machine (label gpu): 2 and 3 ranks, a small odd hidden size, both ways checked bit for bit
# (and 2 ranks through the cudaIpc fallback, where peers are reached through peer_heap[]).
add_executable(moe_gpu ${CMAKE_CURRENT_LIST_DIR}/moe_gpu.cu)
target_link_libraries(moe_gpu PRIVATE duet)
target_include_directories(moe_gpu PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/bench)
target_compile_features(moe_gpu PRIVATE cuda_std_17)
if(BUILD_TESTING)
  duet_gpu_test(moe_gpu RANKS 2 3 TIMEOUT 120 ARGS -t "16 100" -h 257 -k 4 -x 3 -i 3)
  duet_gpu_test(moe_gpu RANKS 2 TIMEOUT 120 NAME ipc ENV DUET_CUDA=ipc ARGS -t "16 100" -h 257 -k 4 -x 3 -i 3)
endif()
