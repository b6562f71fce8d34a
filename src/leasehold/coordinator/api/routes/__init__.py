"""The HTTP routes, one module per resource; each parses, calls the service, serialises."""
