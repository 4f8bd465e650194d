"""The gateway's HTTP server: the app and its lifespan (the parts it opens), authentication, request ids,
connection guards, the error shape, readiness, and the handlers that hand each request to the pipeline."""
