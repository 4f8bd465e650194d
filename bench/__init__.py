"""Benchmarks, run by ``make bench``; results are recorded in BENCHMARKS.md.

Each benchmark is a module runnable as ``python -m bench.<name>`` from the
repository root. They start real processes on loopback sockets, so that the
figures include the HTTP stack a deployment pays for, not only Python calls.
"""
