# colls.cmake — every collective on GPU buffers (test_gpu_colls.c: broadcast, reduce,
# allgather, reduce-scatter, all-to-all, send/recv and allreduce; stream-ordered), at 2, 3 and
# 4 ranks with the tuner's choice, and at 3 ranks once per set of forced algorithms. rd
# allgather and rhd reduce-scatter need a power-of-two rank count: at 3 ranks the test expects
# those calls to be refused (DUET_ERR_INVALID_ARG) while allreduce rd / rhd run folded, so the
# rd and rhd sets also run at 4 ranks, where every forced algorithm runs. Included by
# tests/CMakeLists.txt only when the CUDA backend is built.
add_executable(test_gpu_colls ${CMAKE_CURRENT_LIST_DIR}/test_gpu_colls.c)
target_link_libraries(test_gpu_colls PRIVATE duet_static)
target_include_directories(test_gpu_colls PRIVATE ${CMAKE_CURRENT_SOURCE_DIR})
duet_gpu_test(test_gpu_colls RANKS 2 3 4 TIMEOUT 300)
duet_gpu_test(test_gpu_colls RANKS 3 TIMEOUT 300 NAME ring
              ENV DUET_ALGO=allreduce:ring,allgather:ring,reducescatter:ring)
duet_gpu_test(test_gpu_colls RANKS 3 TIMEOUT 300 NAME tree ENV DUET_ALGO=allreduce:tree,broadcast:tree,reduce:tree)
duet_gpu_test(test_gpu_colls RANKS 3 TIMEOUT 300 NAME dbtree ENV DUET_ALGO=allreduce:dbtree)
duet_gpu_test(test_gpu_colls RANKS 3 4 TIMEOUT 300 NAME rd ENV DUET_ALGO=allreduce:rd,allgather:rd)
duet_gpu_test(test_gpu_colls RANKS 3 4 TIMEOUT 300 NAME rhd ENV DUET_ALGO=allreduce:rhd,reducescatter:rhd)
duet_gpu_test(test_gpu_colls RANKS 3 TIMEOUT 300 NAME chain ENV DUET_ALGO=broadcast:chain,reduce:chain)
duet_gpu_test(test_gpu_colls RANKS 3 TIMEOUT 300 NAME direct ENV DUET_ALGO=allgather:direct,reducescatter:direct)
duet_gpu_test(test_gpu_colls RANKS 3 TIMEOUT 300 NAME shots ENV DUET_ALGO=allreduce:twoshot)
