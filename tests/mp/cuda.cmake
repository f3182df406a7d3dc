# cuda.cmake — the CUDA calls as a machine without a GPU heap sees them (runs in `make test`,
# with or without the CUDA backend built). The GPU tests themselves are in tests/gpu/.
duet_mp_test(test_cuda_absent RANKS 1 2 3 TIMEOUT 30)
add_test(NAME mp.test_cuda_absent.off
         COMMAND $<TARGET_FILE:duetrun> -n 2 --timeout 30 $<TARGET_FILE:test_cuda_absent>)
set_tests_properties(mp.test_cuda_absent.off PROPERTIES LABELS mp TIMEOUT 60 ENVIRONMENT DUET_CUDA=off)
