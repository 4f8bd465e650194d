"""The trust console: browse, filter and understand scored answers in the browser.

An app on top of the gateway: it reads records through ``proxy``'s listing
functions and ownership rule, and nothing in proxy, scoring or exporters
imports it. ``trustgate serve`` finds ``mount`` through the ``trustgate.apps``
entry point; ``create_app(settings, mounts=[mount])`` does the same by hand.
"""

from .app import mount

__all__ = ["mount"]
