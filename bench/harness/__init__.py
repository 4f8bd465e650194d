"""What the gateway benchmarks share, so that each benchmark module holds only its own measurement.

``processes`` starts servers as process groups and always stops them; ``cpu`` reads CPU time from /proc
and waits for a quiet machine; ``servers`` configures the fake upstream and ``trustgate serve`` the same
way for every benchmark; ``load`` is the closed-loop load generator and its options; ``phases`` measures
one target (CPU counted, other programs waited out) and lets targets take turns in alternating rounds;
``tables`` prints the figures, round by round, and the run's environment.
"""
