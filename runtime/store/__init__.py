"""pedrag.runtime.store: Persistence: session stores, schema, migrations, the SQLite driver."""
