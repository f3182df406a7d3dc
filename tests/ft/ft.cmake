# ft.cmake — failure detection (test_ft_detect.c): a rank killed with SIGKILL in each kind of
# wait, at 2, 3 and 4 ranks (the victim is the last rank, or rank 0 for `random` with an odd
# seed); and a rank stopped with SIGSTOP for 0.3 s, which must not count as a death. The
# `poll` variants run without pidfds (DUET_FT_PIDFD=0: kill(pid, 0) every DUET_FT_PERIOD_MS).
duet_ft_test(test_ft_detect RANKS 2 4 NAME allreduce ARGS allreduce)
duet_ft_test(test_ft_detect RANKS 3 NAME random ARGS random)
duet_ft_test(test_ft_detect RANKS 3 NAME barrier ARGS barrier)
duet_ft_test(test_ft_detect RANKS 3 NAME signal ARGS signal)
duet_ft_test(test_ft_detect RANKS 3 NAME group ARGS group)
duet_ft_test(test_ft_detect RANKS 3 NAME sigstop ARGS sigstop)
duet_ft_test(test_ft_detect RANKS 3 NAME puts ARGS puts)
duet_ft_test(test_ft_detect RANKS 3 NAME allreduce-poll ENV DUET_FT_PIDFD=0 ARGS allreduce)
duet_ft_test(test_ft_detect RANKS 3 NAME random-poll ENV DUET_FT_PIDFD=0 ARGS random)
duet_ft_test(test_ft_detect RANKS 3 NAME sigstop-poll ENV DUET_FT_PIDFD=0 ARGS sigstop)
# revoke / agree / shrink (test_ft_ulfm.c): a revoke seen by everyone, shrink keeping the
# survivors' data, shrink until one rank is left, and a death during a shrink.
duet_ft_test(test_ft_ulfm RANKS 3 4 NAME revoke ARGS revoke)
duet_ft_test(test_ft_ulfm RANKS 3 NAME revoke-first ARGS revoke-first)
duet_ft_test(test_ft_ulfm RANKS 3 4 NAME shrink ARGS shrink)
duet_ft_test(test_ft_ulfm RANKS 4 NAME chain ARGS chain)
duet_ft_test(test_ft_ulfm RANKS 4 NAME during ARGS during)
duet_ft_test(test_ft_ulfm RANKS 4 NAME agree-during-before ARGS agree-during 7)
duet_ft_test(test_ft_ulfm RANKS 4 NAME agree-during-in ARGS agree-during 8)
# hang diagnosis (test_ft_hang.c): a late rank's peer reports what it waits for, on SIGUSR2
# and by age (DUET_HANG_REPORT_S).
duet_ft_test(test_ft_hang RANKS 2 3 NAME signal ARGS signal)
duet_ft_test(test_ft_hang RANKS 2 NAME age ARGS age)
