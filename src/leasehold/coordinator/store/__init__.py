"""Persistence: the contract the service relies on, the algorithms every backend shares, and one
package per driver (SQL, row mapping, what only its engine can do)."""
