"""One request through any OpenAI endpoint: each endpoint described as data (``specs``), the one pipeline that
serves them, request validation and forwarding rules, key limits, stream taps and the answer's log-probabilities."""
