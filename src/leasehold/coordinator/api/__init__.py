"""The coordinator's HTTP layer: routes, wire models, middleware, errors; it parses and
serialises, and leaves every decision to the service."""
