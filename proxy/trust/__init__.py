"""The proxy's side of trust scoring: deciding and handing jobs over (``service``), the scorers' calls and budget,
the local scoring worker, actions on low trust, and the trust records' HTTP routes (list, feedback, calibration)."""
