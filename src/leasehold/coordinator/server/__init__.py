"""Serving the app: the HTTP protocol's limits, the open-file limit, and a clean stop."""
