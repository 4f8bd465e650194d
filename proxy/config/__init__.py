"""The gateway's settings: a LiteLLM-style YAML file read once into typed settings, what of a LiteLLM config is
honoured or named as ignored, and load-time checks of low-trust policies."""
