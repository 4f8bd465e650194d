"""``trustgate eval``: how well trust scores predict answer correctness on labeled data.

An application on top of the gateway's parts: it imports ``proxy`` (to reach
upstreams through its ``UpstreamClient``, exactly as the scorers do in
production) and ``scoring`` (the same scorers, assembled by
``scoring.assembly``), and nothing imports it: the ``trustgate`` command
finds its ``eval`` sub-command through the ``trustgate.commands`` entry point
(``subcommand.py``). The calibration file it writes is read by the gateway
through ``scoring.calibration``, which needs no scientific library.

The CLI: ``trustgate eval run ...``, ``trustgate eval truthfulqa-mc ...`` and
``trustgate eval rag ...`` (arguments in ``cli.py``, the work in ``command.py``
and the ``*_command`` modules).

Inside, one job per module: ``datasets`` (readers), ``matching`` (gold-answer
labels), ``prompts`` (closed-book and confidence prompts), ``cache`` (SQLite
memory for resuming), ``asking`` (the cached ``Ask``), ``runner`` (items to
outcomes), ``outcome`` (the scores read off an outcome), ``metrics`` (metrics
and bootstrap), ``summary``, ``fitting`` (calibration fits), ``report`` and
``figures`` (markdown, JSON, PNG), ``truthfulqa_mc`` and ``mc_runner``
(MC1/MC2), ``rag_command`` (Trust-Eval's RAG report). ``studies`` holds the
studies the scoring defaults rest on, each run as ``python -m evaluation.studies.<name>``.
"""
