"""ASGI layers every request passes through: body caps, same-origin checks, the log line."""
