"""The ASGI layer every request crosses (``pipeline``), and its parts: the body caps, the
answer's headers, the log line; and the header checks the route handler runs first."""
