"""The PostgreSQL driver: several coordinators sharing one database."""
