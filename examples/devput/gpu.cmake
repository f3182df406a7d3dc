# gpu.cmake — devput_gpu: a put from inside a kernel against a host-launched duet_allreduce of the
# same bytes, on symmetric (duet_malloc_device) and on cudaMalloc buffers, with the alpha-beta fits
# and their crossovers (README.md). Included by examples/CMakeLists.txt when the CUDA backend is
# built; the tests run on the GPU machine (label gpu): 2 and 3 ranks, 8 B .. 128 KiB (128 KiB: the
# library's direct kernel on the symmetric buffers), every message and allreduce result checked;
# once with the message carried by one block (the default), once by four (the multi-block signal
# counting).
add_executable(devput_gpu ${CMAKE_CURRENT_LIST_DIR}/devput.cu)
target_link_libraries(devput_gpu PRIVATE duet)
target_include_directories(devput_gpu PRIVATE ${CMAKE_SOURCE_DIR}/include ${CMAKE_SOURCE_DIR}/bench)
target_compile_features(devput_gpu PRIVATE cuda_std_17)
if(BUILD_TESTING)
  duet_gpu_test(devput_gpu RANKS 2 3 TIMEOUT 120 ARGS -b 8 -e 128K -f 4 -i 20)
  duet_gpu_test(devput_gpu RANKS 2 3 TIMEOUT 120 NAME blocks4 ARGS -b 8 -e 128K -f 4 -i 20 -B 4)
endif()
