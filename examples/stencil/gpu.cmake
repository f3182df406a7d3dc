# gpu.cmake — stencil_gpu: the halo-exchange stencil of stencil.c with its grids in GPU memory and
# the halos moved three ways (send/recv on a stream, host-initiated put + signal on the stream,
# put + signal from inside the compute kernel); README.md, "On the GPU". Included by
# examples/CMakeLists.txt when the CUDA backend is built; the tests run on the GPU machine
# (label gpu): 2 and 3 ranks (blocks of unequal size), radius 2, an even iteration count; and 3
# ranks at radius 1 with an odd count (the result in the other grid). Every method is checked bit
# for bit against the one-rank run. `device` with -e: one block per edge (3 ranks: the middle one
# waits on both sides), and 6 chunks per edge at radius 3 (chunks that cross rows and end in the
# padding), with -t (the interior's clock readings).
add_executable(stencil_gpu ${CMAKE_CURRENT_LIST_DIR}/stencil_gpu.cu)
target_link_libraries(stencil_gpu PRIVATE duet)
target_include_directories(stencil_gpu PRIVATE ${CMAKE_SOURCE_DIR}/include)
target_compile_features(stencil_gpu PRIVATE cuda_std_17)
if(BUILD_TESTING)
  duet_gpu_test(stencil_gpu RANKS 2 3 TIMEOUT 120 ARGS -n 301 -r 2 -i 40)
  duet_gpu_test(stencil_gpu RANKS 3 TIMEOUT 120 NAME r1 ARGS -n 256 -r 1 -i 31)
  duet_gpu_test(stencil_gpu RANKS 3 TIMEOUT 120 NAME e1 ARGS -n 301 -r 2 -i 40 -m device -e 1)
  duet_gpu_test(stencil_gpu RANKS 2 TIMEOUT 120 NAME e7 ARGS -n 301 -r 3 -i 41 -m device -e 7 -t)
endif()
