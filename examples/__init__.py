"""Runnable examples of leasehold with web frameworks (run by tests/integration/test_examples.py)."""
