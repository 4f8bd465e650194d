"""What every room of the gateway stands on: the error tree in OpenAI's shape, the endpoints' names and the
parameters each forwards, rate-limit counters, request ids and the log format."""
