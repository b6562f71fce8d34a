"""The coordinator: the HTTP API, the service, the rules, background loops and the store.

Nothing on the client side (client, worker, tasks) imports this package; the command line
imports it lazily, for ``leasehold serve``."""
