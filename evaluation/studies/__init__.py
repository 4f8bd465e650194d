"""Studies of the scores' quality: what the defaults rest on, each runnable as ``python -m evaluation.studies.<name>``.

Unlike ``trustgate eval`` (a report on a labeled set), each study answers one design question and prints the
figures that decided it; their reports live in docs/eval/. ``default_combination`` writes the shipped Trust_OV
prior (``scoring/default_combination.json``; docs/eval/default-combination.md says how), ``sc_skip`` measures
that prior with ``sc`` skipped on clearly consistent answers, and ``bc_agreement`` (with ``bc_policies`` and
``bc_simulation``) compares cheap Trust_BC policies with the paper's ten checks (docs/eval/bc-agreement.md).
Speed and memory are measured in ``bench/``, not here.
"""
