"""The wiring on top: the ``trustgate`` command, the scoring worker's entry and the gateway's ready banner.

It builds processes from the gateway's parts (``proxy``, ``scoring``,
``exporters``) and finds the apps built on them (the evaluation app's
``eval`` sub-command, the trust console's routes) through entry points, so it
imports no app by name. Nothing imports this package: it is the top of the
layering that ``tests/test_architecture.py`` enforces.
"""
