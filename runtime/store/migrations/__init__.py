"""Alembic migrations of the session database (package data; see ``pedrag.runtime.store.migrate``).

Each module in ``versions/`` is one revision. Never edit a released revision: add a new one,
and update ``pedrag.runtime.store.schema`` (the head as SQLAlchemy tables) with it.
"""
