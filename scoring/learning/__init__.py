"""Per-model learning from feedback: features of a scored answer, the fit, its quality, its guard, where it is kept.

A refit (``refit.Refitter``, run in a process of its own by the gateway, or by
``trustgate calibrate``) reads the labels that teach a fit (``teachers``), makes
the report (``fit.assess``), holds a fit that turns a score around for the
operator (``guard``), and keeps the report beside the labels (``store``); the
scoring pipeline applies the fit to later records (``apply.learned_overall``).
Import the modules themselves: ``fit`` loads scikit-learn, which only a process
that refits needs.
"""
