"""Claims: a long answer split into the claims it makes, each checked on its own (``scoring.pipeline``).

- ``split.py``: the split itself, over a spaCy parse (list items, sentences, clauses, filler, pronouns);
- ``selection.py``: the answer whole when short, else the ``max_claims`` claims that say the most;
- ``cpu_part.py``: the parser, registered with the CPU pool, and the split as its work;
- ``splitter.py``: ``ClaimSplitter``, what the claim checkers (Trust_BC, Trust_FC) share;
- ``aggregate.py``: the answer's components and Trust_OV from its claims'.

A claim checker is a scorer that implements ``scoring.types.ChecksClaims``; a new per-claim check (an
evidence agreement read on CPU, say) becomes one by giving one result per claim from ``score_claims``.
Nothing here is imported by ``scoring``'s package: spaCy loads only where the parser does.
"""
