"""Benchmarks of speed, memory and cost, run by ``make bench``; results are recorded in BENCHMARKS.md.

Each benchmark is a module runnable as ``python -m bench.<name>`` from the
repository root. They start real processes on loopback sockets, so that the
figures include the HTTP stack a deployment pays for, not only Python calls;
what the gateway benchmarks share (servers, load, rounds, tables) is ``bench.harness``.
Studies of the scores' quality are not here but in ``evaluation.studies``.
"""
