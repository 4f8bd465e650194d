"""Every call to a model and what it answers: the upstream client, its two paths (pass-through over aiohttp, litellm
for other providers), routing, retries, slots, reply caps and decoding, redirects, the error translator, the reply
models, the stream taps over the one SSE reader, the gateway's trust names stripped from replies, the answer's
log-probabilities asked for and hidden again, and the embedded local model server."""
