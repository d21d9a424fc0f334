"""Running spend totals per scope (a session, the deployment), kept atomically across workers.

Runtime stage: persistence. Takes amounts in USD for a scope (``deployment``, a session) and
gives the running total; the budget (``runtime/turn/budget.py``) reads it before a model call
and adds to it after.
"""

from __future__ import annotations

import math

from sqlalchemy import select

from pedrag.runtime.store.connection import StoreConnection
from pedrag.runtime.store.documents import _utcnow
from pedrag.runtime.store.errors import StoreError
from pedrag.runtime.store.schema import spend


class SpendRecords(StoreConnection):
    """Spend totals of this store's tenant, by scope."""

    def add_spend(self, scope: str, usd: float) -> float:
        """Add ``usd`` to the running total of ``scope`` atomically and return the new total.

        One statement (an upsert returning the sum), so concurrent workers never lose an
        addition and each sees the total including its own.
        """
        if not isinstance(scope, str) or not scope:
            raise StoreError(f"spend scope must be a non-empty str, got {scope!r}")
        if isinstance(usd, bool) or not isinstance(usd, int | float):
            raise StoreError(f"usd must be a number, got {usd!r}")
        if not math.isfinite(usd) or usd < 0:
            raise StoreError(f"usd must be finite and >= 0, got {usd!r}")
        dialect_insert = self._upsert_insert()
        row = dialect_insert(spend).values(
            tenant=self._tenant, scope=scope, usd=float(usd), updated_at=_utcnow()
        )
        statement = row.on_conflict_do_update(
            index_elements=[spend.c.tenant, spend.c.scope],
            set_={"usd": spend.c.usd + row.excluded.usd, "updated_at": row.excluded.updated_at},
        ).returning(spend.c.usd)
        with self._errors(f"add spend to {scope!r}"):
            with self._transaction(write=True) as connection:
                total = connection.execute(statement).scalar_one()
        return float(total)

    def spend(self, scope: str) -> float:
        """The running total of ``scope`` in USD; 0.0 if nothing was spent yet."""
        with self._errors(f"read spend of {scope!r}"):
            with self._transaction(write=False) as connection:
                total = connection.execute(
                    select(spend.c.usd).where(
                        spend.c.tenant == self._tenant, spend.c.scope == scope
                    )
                ).scalar_one_or_none()
        return 0.0 if total is None else float(total)
