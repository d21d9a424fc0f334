"""Running spend totals per scope (a session, the deployment), kept atomically across workers.

Runtime stage: persistence. Takes amounts in USD for a scope (``deployment``, a session) and
gives the running total; the budget (``runtime/turn/budget.py``) reads it before a model call
and adds to it after, or reserves a call's worst-case cost within a cap before the call and
settles it with the real cost after (``reserve_spend``, ``settle_spend``), so concurrent calls
on any number of workers cannot pass the cap together.
"""

from __future__ import annotations

import math

from sqlalchemy import select, update

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
        _require_spend(scope, usd)
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

    def reserve_spend(self, scope: str, usd: float, cap: float | None) -> bool:
        """Add ``usd`` to ``scope``'s total only if the total stays within ``cap`` (``None``:
        no cap), atomically across workers; whether it was added. A zero reservation is
        admitted while the total is below the cap (a call whose cost cannot be known).

        One statement (an upsert whose update is conditional), so two workers reserving at
        once can never both pass a cap that has room for one: the budget reserves a call's
        worst-case cost here before the call and settles it after (:meth:`settle_spend`)."""
        _require_spend(scope, usd)
        if cap is not None and (usd > cap or (usd == 0 and cap <= 0)):
            return False
        dialect_insert = self._upsert_insert()
        row = dialect_insert(spend).values(
            tenant=self._tenant, scope=scope, usd=float(usd), updated_at=_utcnow()
        )
        fits = None
        if cap is not None:
            fits = spend.c.usd + row.excluded.usd <= cap if usd > 0 else spend.c.usd < cap
        statement = row.on_conflict_do_update(
            index_elements=[spend.c.tenant, spend.c.scope],
            set_={"usd": spend.c.usd + row.excluded.usd, "updated_at": row.excluded.updated_at},
            where=fits,
        ).returning(spend.c.usd)
        with self._errors(f"reserve spend in {scope!r}"):
            with self._transaction(write=True) as connection:
                total = connection.execute(statement).scalar_one_or_none()
        return total is not None

    def settle_spend(self, scope: str, reserved: float, usd: float) -> float:
        """Replace a reservation of ``reserved`` (:meth:`reserve_spend`) by the call's real
        cost ``usd`` (0 for a call that failed) and return the new total."""
        _require_spend(scope, reserved)
        _require_spend(scope, usd)
        statement = (
            update(spend)
            .where(spend.c.tenant == self._tenant, spend.c.scope == scope)
            .values(usd=spend.c.usd + (float(usd) - float(reserved)), updated_at=_utcnow())
            .returning(spend.c.usd)
        )
        with self._errors(f"settle spend in {scope!r}"):
            with self._transaction(write=True) as connection:
                total = connection.execute(statement).scalar_one_or_none()
        if total is None:
            raise StoreError(f"no spend was reserved in {scope!r}")
        return float(total)


def _require_spend(scope: object, usd: object) -> None:
    if not isinstance(scope, str) or not scope:
        raise StoreError(f"spend scope must be a non-empty str, got {scope!r}")
    if isinstance(usd, bool) or not isinstance(usd, int | float):
        raise StoreError(f"usd must be a number, got {usd!r}")
    if not math.isfinite(usd) or usd < 0:
        raise StoreError(f"usd must be finite and >= 0, got {usd!r}")
