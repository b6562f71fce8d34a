"""Parts of the chaos run (scripts/chaos.py): a faulty TCP proxy, a fenced store, the
handlers the workers run, and the invariant checks."""
