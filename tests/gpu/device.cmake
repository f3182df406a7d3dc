# device.cmake — the device API (include/duet/duet_device.cuh). Included by tests/CMakeLists.txt
# only when the CUDA backend is built.
#   duet_device_api_compile   an object library: every device call instantiated for every type,
#                             so a broken header fails the build even where there is no GPU
#   test_device_api           kernels (test_device_api.cu) + host driver (device_api_main.c),
#                             2 and 4 ranks on one GPU, VMM and the cudaIpc fallback
add_library(duet_device_api_compile OBJECT ${CMAKE_CURRENT_LIST_DIR}/device_api_compile.cu)
target_include_directories(duet_device_api_compile PRIVATE ${CMAKE_SOURCE_DIR}/include)
target_compile_features(duet_device_api_compile PRIVATE cuda_std_17)

add_executable(test_device_api ${CMAKE_CURRENT_LIST_DIR}/test_device_api.cu
                               ${CMAKE_CURRENT_LIST_DIR}/device_api_main.c)
target_link_libraries(test_device_api PRIVATE duet_static)
target_include_directories(test_device_api PRIVATE ${CMAKE_CURRENT_SOURCE_DIR}
                           ${CMAKE_CURRENT_LIST_DIR})
target_compile_features(test_device_api PRIVATE cuda_std_17)
duet_gpu_test(test_device_api RANKS 2 4 TIMEOUT 120)
duet_gpu_test(test_device_api RANKS 2 4 TIMEOUT 120 NAME ipc ENV DUET_CUDA=ipc)
