"""Every call to a model: the upstream client, its two paths (pass-through over aiohttp, litellm for other
providers), routing, retries, slots, reply caps and decoding, redirects, the error translator, the reply models,
and the embedded local model server."""
