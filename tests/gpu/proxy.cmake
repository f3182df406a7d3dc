# proxy.cmake — device calls to remote pes through the host proxy (docs/NETWORK.md 2.9), on one
# host: DUET_CUDA_PEERS=proxy makes every other pe remote, so the whole path (ring, proxy
# thread, host heap endpoints, the target's proxy) runs on one GPU under MPS.
#   gpu.test_gpu_proxy.api.<n>       every device call kind against references (test_gpu_proxy.c)
#   gpu.test_gpu_proxy.dead.<n>      a rank dies while a kernel puts + quiets to it (duetrun --ft)
#   gpu.test_device_api.proxy.<n>    the whole device-API test through the proxy
#   gpu.test_gpu_ft.proxy_signal.<n> / proxy_revoke.<n>: a kernel waiting on a signal from a rank
#                                    that dies / revokes returns the abort status
add_executable(test_gpu_proxy ${CMAKE_CURRENT_LIST_DIR}/test_gpu_proxy.c ${CMAKE_CURRENT_LIST_DIR}/test_gpu_proxy.cu)
target_link_libraries(test_gpu_proxy PRIVATE duet_static)
target_include_directories(test_gpu_proxy PRIVATE ${CMAKE_CURRENT_SOURCE_DIR} ${CMAKE_CURRENT_LIST_DIR})
target_compile_features(test_gpu_proxy PRIVATE cuda_std_17)
duet_gpu_test(test_gpu_proxy RANKS 2 3 TIMEOUT 180 NAME api ARGS api ENV DUET_CUDA_PEERS=proxy)
duet_gpu_test(test_gpu_proxy RANKS 2 3 FT TIMEOUT 120 NAME dead ARGS dead ENV DUET_CUDA_PEERS=proxy)
duet_gpu_test(test_device_api RANKS 2 3 TIMEOUT 300 NAME proxy ENV DUET_CUDA_PEERS=proxy)
duet_gpu_test(test_gpu_ft RANKS 2 3 FT TIMEOUT 120 NAME proxy_signal ARGS signal ENV DUET_CUDA_PEERS=proxy)
duet_gpu_test(test_gpu_ft RANKS 2 FT TIMEOUT 120 NAME proxy_revoke ARGS revoke ENV DUET_CUDA_PEERS=proxy)
