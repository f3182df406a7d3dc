# coll.cmake — the collective tests (included by tests/CMakeLists.txt).
#
# test_coll runs once per algorithm of the tuner's table (src/coll/duet_coll_tune.c), forced
# with DUET_ALGO=<collective>:<algorithm> (it then runs that collective's matrix only), and
# once with the tuner's own choice (every collective, send/recv and the wrong-usage checks), at
# 1 2 3 4 5 7 8 ranks: mp.test_coll.<collective>-<algorithm>.<n>, mp.test_coll.tuned.<n>.
# Besides: DUET_ALGO=ring for all collectives (broadcast, reduce and all-to-all have no ring:
# every call of theirs must be refused), and small channels (64-byte chunks, 2 slots: a 1001-
# element call is hundreds of messages, the slots are reused many times; the large cases are
# left out) with the tuner's choice and with the direct allgather / reduce-scatter forced.
# DUET_WAIT_TIMEOUT is set below duetrun's --timeout so that a hang ends with Duet's message
# naming what it waited for; test_coll stops at the first timeout (later cases would cascade).
# test_coll is two files: test_coll.c (tests/CMakeLists.txt builds it) and coll_expect.c, what each
# case must produce (the inputs, the reference results, the expected statuses; test_coll.h).
target_sources(test_coll PRIVATE ${CMAKE_CURRENT_LIST_DIR}/coll_expect.c)

function(duet_coll_test_ name)
  cmake_parse_arguments(T "" "TIMEOUT" "RANKS;ENV" ${ARGN})
  set(xs -x DUET_WAIT_TIMEOUT=60)
  foreach(e ${T_ENV})
    list(APPEND xs -x ${e})
  endforeach()
  foreach(n ${T_RANKS})
    add_test(NAME mp.test_coll.${name}.${n}
             COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout ${T_TIMEOUT} ${xs} $<TARGET_FILE:test_coll>)
    math(EXPR ctest_timeout "${T_TIMEOUT} + 30")
    set_tests_properties(mp.test_coll.${name}.${n} PROPERTIES LABELS mp TIMEOUT ${ctest_timeout})
  endforeach()
endfunction()

set(DUET_COLL_RANKS 1 2 3 4 5 7 8)
duet_coll_test_(tuned RANKS ${DUET_COLL_RANKS} TIMEOUT 120)
foreach(algo allreduce:ring allreduce:tree allreduce:dbtree allreduce:rd allreduce:rhd allreduce:oneshot
             allreduce:twoshot broadcast:chain broadcast:tree reduce:chain reduce:tree allgather:ring
             allgather:rd allgather:direct reducescatter:ring reducescatter:rhd reducescatter:direct
             alltoall:pairwise)
  string(REPLACE ":" "-" tag ${algo})
  duet_coll_test_(${tag} RANKS ${DUET_COLL_RANKS} TIMEOUT 120 ENV DUET_ALGO=${algo})
endforeach()
duet_coll_test_(all-ring RANKS 3 4 TIMEOUT 120 ENV DUET_ALGO=ring)
# The hierarchical algorithms (docs/NETWORK.md 2.7) on one machine: DUET_COLL_RANKS_PER_HOST=2
# gives the collectives hosts of 2 ranks (4 ranks: 2 + 2; 5 ranks: 2 + 2 + 1, uneven) over shm
# channels; the tuner's own choice over those hosts; on one host, a forced hierarchical
# algorithm must be refused on every rank (test_coll expects DUET_ERR_INVALID_ARG there).
foreach(algo allreduce:hring allreduce:hdbtree broadcast:htree reduce:htree)
  string(REPLACE ":" "-" tag ${algo})
  duet_coll_test_(hosts2-${tag} RANKS 4 5 TIMEOUT 120 ENV DUET_COLL_RANKS_PER_HOST=2 DUET_ALGO=${algo})
  duet_coll_test_(${tag} RANKS 3 TIMEOUT 120 ENV DUET_ALGO=${algo})
endforeach()
duet_coll_test_(hosts2-tuned RANKS 4 5 TIMEOUT 120 ENV DUET_COLL_RANKS_PER_HOST=2)
duet_coll_test_(hosts2-small-chunks RANKS 5 TIMEOUT 60 ENV DUET_COLL_RANKS_PER_HOST=2 DUET_COLL_CHUNK=64
                DUET_COLL_SLOTS=2 TEST_COLL_BIG=none DUET_WAIT_TIMEOUT=10
                DUET_ALGO=allreduce:hring,broadcast:htree,reduce:htree)
# Buffers in the symmetric heap: sends of 4 KiB and more from stable buffers go by reference
# (the receiver copies out of the sender's heap). The tuner's choice, and every algorithm whose
# sends can go by reference (broadcast, allgather: from the receive buffer too).
duet_coll_test_(heap RANKS 2 3 4 5 TIMEOUT 120 ENV TEST_COLL_HEAP=1)
foreach(algo broadcast:chain broadcast:tree allgather:ring allgather:direct allreduce:oneshot
             allreduce:twoshot alltoall:pairwise reducescatter:direct)
  string(REPLACE ":" "-" tag ${algo})
  duet_coll_test_(heap-${tag} RANKS 3 4 TIMEOUT 120 ENV TEST_COLL_HEAP=1 DUET_ALGO=${algo})
endforeach()
duet_coll_test_(heap-allgather-rd RANKS 2 4 TIMEOUT 120 ENV TEST_COLL_HEAP=1 DUET_ALGO=allgather:rd) # powers of two
set(small DUET_COLL_CHUNK=64 DUET_COLL_SLOTS=2 TEST_COLL_BIG=none DUET_WAIT_TIMEOUT=10)
duet_coll_test_(small-chunks RANKS 3 4 5 TIMEOUT 60 ENV ${small})
duet_coll_test_(small-chunks-allgather-direct RANKS 4 TIMEOUT 60 ENV ${small} DUET_ALGO=allgather:direct)
duet_coll_test_(small-chunks-reducescatter-direct RANKS 4 TIMEOUT 60 ENV ${small} DUET_ALGO=reducescatter:direct)

# test_coll_group: send/recv outside and inside groups, fused collectives, group errors.
foreach(n 1 2 3 4 5 8)
  add_test(NAME mp.test_coll_group.${n}
           COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout 90 -x DUET_WAIT_TIMEOUT=30 $<TARGET_FILE:test_coll_group>)
  set_tests_properties(mp.test_coll_group.${n} PROPERTIES LABELS mp TIMEOUT 120)
endforeach()
# A send/recv anywhere among a group's collectives (test_coll_group's header), one mode a run.
foreach(mode p2p-interleaved p2p-order-differs p2p-split-large)
  foreach(n 2 3)
    add_test(NAME mp.test_coll_group.${mode}.${n}
             COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout 60 -x DUET_WAIT_TIMEOUT=5
                     $<TARGET_FILE:test_coll_group> ${mode})
    set_tests_properties(mp.test_coll_group.${mode}.${n} PROPERTIES LABELS mp TIMEOUT 90)
  endforeach()
endforeach()

# test_coll_lane: the latency lane (one-shot allreduce of up to 48 bytes), forced and tuned.
foreach(n 1 2 3 4 5 8)
  foreach(mode forced tuned)
    if(mode STREQUAL "forced")
      set(env -x DUET_ALGO=allreduce:oneshot)
    else()
      set(env)
    endif()
    add_test(NAME mp.test_coll_lane.${mode}.${n}
             COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout 90 -x DUET_WAIT_TIMEOUT=30 ${env}
                     $<TARGET_FILE:test_coll_lane>)
    set_tests_properties(mp.test_coll_lane.${mode}.${n} PROPERTIES LABELS mp TIMEOUT 120)
  endforeach()
endforeach()

# test_coll_again: the repeat path (a call of the shape the last one prepared runs its schedule at
# once): loops of like calls with changing buffers, in place by turns, checked element by element;
# the tuner's choice, and small channels (each call hundreds of messages).
foreach(n 1 2 3 4 5 8)
  add_test(NAME mp.test_coll_again.${n}
           COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout 90 -x DUET_WAIT_TIMEOUT=30 $<TARGET_FILE:test_coll_again>)
  set_tests_properties(mp.test_coll_again.${n} PROPERTIES LABELS mp TIMEOUT 120)
endforeach()
foreach(n 3 4)
  add_test(NAME mp.test_coll_again.small-chunks.${n}
           COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout 90 -x DUET_WAIT_TIMEOUT=30 -x DUET_COLL_CHUNK=64
                   -x DUET_COLL_SLOTS=2 $<TARGET_FILE:test_coll_again>)
  set_tests_properties(mp.test_coll_again.small-chunks.${n} PROPERTIES LABELS mp TIMEOUT 120)
endforeach()

# test_coll_mismatch: mismatched collective calls (count, datatype, op, root) fail on every rank
# with DUET_ERR_INVALID_ARG naming both ranks and the field, and revoke the communicator; the
# tuner's choice, forced algorithms, and buffers in the heap (sends by reference). Its waits end
# well before DUET_WAIT_TIMEOUT (a timeout there is a failure of the test).
function(duet_mismatch_test_ name)
  cmake_parse_arguments(T "" "" "RANKS;ENV" ${ARGN})
  set(xs -x DUET_WAIT_TIMEOUT=20)
  foreach(e ${T_ENV})
    list(APPEND xs -x ${e})
  endforeach()
  foreach(n ${T_RANKS})
    add_test(NAME mp.test_coll_mismatch.${name}.${n}
             COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout 150 ${xs} $<TARGET_FILE:test_coll_mismatch>)
    set_tests_properties(mp.test_coll_mismatch.${name}.${n} PROPERTIES LABELS mp TIMEOUT 180)
  endforeach()
endfunction()
duet_mismatch_test_(tuned RANKS 2 3 4 5)
duet_mismatch_test_(heap RANKS 2 3 4 5 ENV TEST_MISMATCH_HEAP=1)
foreach(algo allreduce:ring allreduce:tree allreduce:dbtree allreduce:rd allreduce:oneshot allreduce:twoshot
             broadcast:chain reduce:chain allgather:ring allgather:direct reducescatter:ring reducescatter:direct)
  string(REPLACE ":" "-" tag ${algo})
  duet_mismatch_test_(${tag} RANKS 3 4 ENV DUET_ALGO=${algo})
endforeach()
foreach(algo allgather:rd reducescatter:rhd) # powers of two only
  string(REPLACE ":" "-" tag ${algo})
  duet_mismatch_test_(${tag} RANKS 2 4 ENV DUET_ALGO=${algo})
endforeach()
duet_mismatch_test_(small-chunks RANKS 3 5 ENV DUET_COLL_CHUNK=64 DUET_COLL_SLOTS=2)
# The mismatched call after like calls of its shape: the ranks that keep the shape take the
# repeat path (test_coll_again), the odd one the full path.
duet_mismatch_test_(repeat RANKS 2 3 4 ENV TEST_MISMATCH_REPEAT=1)
duet_mismatch_test_(repeat-heap RANKS 3 ENV TEST_MISMATCH_REPEAT=1 TEST_MISMATCH_HEAP=1)

# test_tune: the tuner's controls on a communicator (duet_coll_tune_force over DUET_ALGO).
foreach(n 1 2 3 4)
  add_test(NAME mp.test_tune.${n}
           COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout 90 -x DUET_WAIT_TIMEOUT=30 -x DUET_ALGO=allreduce:ring
                   $<TARGET_FILE:test_tune>)
  set_tests_properties(mp.test_tune.${n} PROPERTIES LABELS mp TIMEOUT 120)
endforeach()

# test_tune_place: one pick on every rank where the cost depends on each rank's buffers (heap
# or private); the model pinned (its own tune file, alpha and beta set).
foreach(n 2 3 4)
  add_test(NAME mp.test_tune_place.${n}
           COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout 90 -x DUET_WAIT_TIMEOUT=30 -x DUET_TUNE_ALPHA_US=0.3
                   -x DUET_TUNE_BETA_GBPS=6 -x DUET_TUNE_FILE=${CMAKE_CURRENT_BINARY_DIR}/tune-place.txt
                   $<TARGET_FILE:test_tune_place>)
  set_tests_properties(mp.test_tune_place.${n} PROPERTIES LABELS mp TIMEOUT 120)
endforeach()

# test_tune_learn: the learning tuner times close candidates and keeps the fastest, alike on every
# rank; learning off keeps the predicted picks.
foreach(n 2 3 4)
  add_test(NAME mp.test_tune_learn.${n}
           COMMAND $<TARGET_FILE:duetrun> -n ${n} --timeout 90 -x DUET_WAIT_TIMEOUT=30 -x DUET_TUNE_ALPHA_US=0.3
                   -x DUET_TUNE_BETA_GBPS=6 -x DUET_TUNE_FILE=${CMAKE_CURRENT_BINARY_DIR}/tune-learn.txt
                   $<TARGET_FILE:test_tune_learn>)
  set_tests_properties(mp.test_tune_learn.${n} PROPERTIES LABELS mp TIMEOUT 120)
endforeach()
add_test(NAME mp.test_tune_learn_off.2
         COMMAND $<TARGET_FILE:duetrun> -n 2 --timeout 90 -x DUET_WAIT_TIMEOUT=30 -x DUET_TUNE_ALPHA_US=0.3
                 -x DUET_TUNE_BETA_GBPS=6 -x DUET_TUNE_FILE=${CMAKE_CURRENT_BINARY_DIR}/tune-learn.txt
                 -x DUET_TUNE_LEARN=0 -x TEST_LEARN_OFF=1 $<TARGET_FILE:test_tune_learn>)
set_tests_properties(mp.test_tune_learn_off.2 PROPERTIES LABELS mp TIMEOUT 120)
