# coll.cmake — collectives on GPU buffers (test_gpu_coll.c: duet_allreduce, stream-ordered,
# one-shot and two-shot), at 2 and 4 ranks: the tuner's choice, each algorithm forced, and a
# forced name no allreduce has (every call must fail). Included by tests/CMakeLists.txt
# only when the CUDA backend is built.
add_executable(test_gpu_coll ${CMAKE_CURRENT_LIST_DIR}/test_gpu_coll.c)
target_link_libraries(test_gpu_coll PRIVATE duet_static)
target_include_directories(test_gpu_coll PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
duet_gpu_test(test_gpu_coll RANKS 2 4 TIMEOUT 240)
duet_gpu_test(test_gpu_coll RANKS 2 4 TIMEOUT 240 NAME oneshot ENV DUET_ALGO=allreduce:oneshot)
duet_gpu_test(test_gpu_coll RANKS 2 4 TIMEOUT 240 NAME twoshot ENV DUET_ALGO=allreduce:twoshot)
duet_gpu_test(test_gpu_coll RANKS 2 TIMEOUT 120 NAME badalgo ENV DUET_ALGO=allreduce:bogus)
