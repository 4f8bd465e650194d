"""The gateway's HTTP server: what every handler stands on (authentication, the gateway's parts, the request's
body and a client that leaves, connection guards, event streams, readiness) and the gateway's own routes (trust
records and their feedback and calibration, models, health, metrics)."""
