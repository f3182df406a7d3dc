# names.cmake — messages after shrinks name world ranks too (test_ft_names.c), 4 ranks.
duet_ft_test(test_ft_names RANKS 4 TIMEOUT 60)
