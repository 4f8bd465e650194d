"""Per-model learning from feedback: features of a scored answer, the fit, its quality, where it is kept.

The gateway's ``learner.Learner`` refits a model group from its labelled
records (``fit.assess``), keeps the report in a ``store.FitStore``, and the
scoring pipeline applies the model's fit to later records
(``apply.learned_overall``). Import the modules themselves: ``fit`` loads
scikit-learn, which only a process that refits needs.
"""
