"""The rules applied to a store: the operations the HTTP layer calls."""
