"""Scoring: trust scores for answers (consistency, fact check, combination) and their queue.

Public to the exporters and to applications on top: ``scoring.types`` (jobs,
component results with their typed details, trust records, the ``Scorer``
and ``Ask`` protocols), ``scoring.private_files`` (how every writer of
traffic data creates its files) and ``scoring.redis_reachable`` (how every
store kept in Redis reports Redis failing). ``tests/test_architecture.py`` holds the
exporters to that; the gateway and the evaluation app also use the assembly
(``scoring.assembly``), the pipeline and the queues.
"""
