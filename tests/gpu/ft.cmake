# ft.cmake — failures seen from the GPU (test_gpu_ft.c, kernels in test_gpu_ft.cu): a kernel
# waiting on a dead rank's signal returns DUET_ERR_PEER_FAILED; GPU collectives on a dead rank
# stop and fail, and the survivors shrink and go on. Under duetrun --ft.
add_executable(test_gpu_ft ${CMAKE_CURRENT_LIST_DIR}/test_gpu_ft.c ${CMAKE_CURRENT_LIST_DIR}/test_gpu_ft.cu)
target_link_libraries(test_gpu_ft PRIVATE duet_static)
target_include_directories(test_gpu_ft PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
target_compile_features(test_gpu_ft PRIVATE cuda_std_17)
duet_gpu_test(test_gpu_ft RANKS 2 3 FT TIMEOUT 120 NAME signal ARGS signal)
duet_gpu_test(test_gpu_ft RANKS 2 3 FT TIMEOUT 120 NAME coll ARGS coll)
duet_gpu_test(test_gpu_ft RANKS 2 FT TIMEOUT 120 NAME revoke ARGS revoke)
