# the error state of successful calls and exact messages (test_errstate), stale handles
# Included by tests/CMakeLists.txt.
duet_mp_test(test_errstate RANKS 1 2 3 5 TIMEOUT 60)
duet_mp_test(test_stale    RANKS 1 2 3 TIMEOUT 60)
