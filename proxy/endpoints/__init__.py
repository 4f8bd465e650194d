"""OpenAI's endpoints: their routes, each endpoint described as data (``specs``), the one pipeline that serves them,
request validation and forwarding rules, the request's metrics, and the actions on a low-trust answer."""
