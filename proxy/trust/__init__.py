"""The proxy's side of trust scoring: deciding and handing jobs over (``service``), the scorers' calls and budget,
and the gateway's side of its local scoring worker."""
