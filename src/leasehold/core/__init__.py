"""Storage-agnostic rules of the job state machine: no I/O in here."""
