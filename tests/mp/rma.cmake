# One-sided tests: put/get (test_rma), atomics (test_amo), signals, point-to-point sync,
# ordering and barriers (test_sync). Each runs in about 1-2 s at any rank count (they shrink
# their work above 4 ranks), so all of them run at every rank count. A hang (a wait that is
# never satisfied) ends at the TIMEOUT, well above the normal time even under sanitizers.
duet_mp_test(test_rma  RANKS 1 2 3 4 5 8 TIMEOUT 30)
duet_mp_test(test_amo  RANKS 1 2 3 4 5 8 TIMEOUT 30)
duet_mp_test(test_sync RANKS 1 2 3 4 5 8 TIMEOUT 30)
