"""Name resolution scopes for the binder.

A :class:`Scope` holds the relations of one SELECT's FROM clause. Lookups fall back to the parent scope
(the enclosing query of a subquery); such a hit is a *correlated* reference and is recorded, which is
how the binder decides whether a subquery can run once (init plan) or must be decorrelated into a join.
"""
from __future__ import annotations

import itertools
from dataclasses import dataclass, field
from typing import Optional

from engine.errors import BindError, unknown_name_error
from engine.plan.logical import Field


# The clauses MySQL names in "Unknown column 'x' in 'WHERE'" (as MariaDB 10.11 spells them)
CLAUSES = {"SELECT", "WHERE", "ON", "HAVING", "GROUP BY", "ORDER BY"}


class IdGenerator:
    """Plan-unique column ids: ``<hint>#<n>`` (readable in EXPLAIN, never ambiguous)."""

    def __init__(self) -> None:
        self._counter = itertools.count(1)

    def new(self, hint: str) -> str:
        return f"{hint}#{next(self._counter)}"


@dataclass
class Relation:
    alias: str                   # name used to qualify columns ('' for none)
    fields: list[Field]          # visible columns, by name
    # ids of columns reachable only qualified (``t.a``): a JOIN ... USING (a) merged them into one
    # unqualified ``a`` (a Relation of its own, alias ''), which SELECT * shows instead
    hidden: set[str] = field(default_factory=set)

    def find(self, name: str, qualified: bool = True) -> list[Field]:
        # by lowered name, made on the first lookup (a wide table's columns were scanned per column
        # reference: a third of binding TPC-DS q64), again if fields were added since
        index = self.__dict__.get("_by_name")
        if index is None or index[0] != len(self.fields):
            by_name: dict[str, list[Field]] = {}
            for f in self.fields:
                by_name.setdefault(f.name.lower(), []).append(f)
            index = self._by_name = (len(self.fields), by_name)
        return [f for f in index[1].get(name.lower(), ()) if qualified or f.id not in self.hidden]


@dataclass
class Scope:
    relations: list[Relation] = field(default_factory=list)
    parent: Optional["Scope"] = None
    outer_refs: set[str] = field(default_factory=set)

    def own_ids(self) -> set[str]:
        return {f.id for r in self.relations for f in r.fields}

    def add(self, relation: Relation) -> None:
        lowered = relation.alias.lower()
        if lowered and any(r.alias.lower() == lowered for r in self.relations):
            raise BindError(f"not unique table/alias: {relation.alias!r}")
        self.relations.append(relation)

    def lookup_local(self, qualifier: Optional[str], name: str) -> list[Field]:
        hits: list[Field] = []
        for relation in self.relations:
            if qualifier and relation.alias.lower() != qualifier.lower():
                continue
            hits.extend(relation.find(name, bool(qualifier)))
        return hits

    def resolve(self, qualifier: Optional[str], name: str, clause: str = "") -> Field:
        """The column ``qualifier.name`` (``qualifier`` None: unqualified) read in ``clause`` (the binder's
        name of it: 'WHERE', 'SELECT', ...), here or in an enclosing query's scope."""
        where = f"'{clause}'" if clause in CLAUSES else ""
        hits = self.lookup_local(qualifier, name)
        if len(hits) == 1:
            return hits[0]
        if len(hits) > 1:
            shown = f"{qualifier}.{name}" if qualifier else name
            raise BindError(f"column {shown!r} is ambiguous")
        if qualifier and not any(r.alias.lower() == qualifier.lower() for r in self.relations):
            if self.parent is None or not self.parent.has_alias(qualifier):
                # MySQL: an unknown qualifier is an unknown column (error 1054), also where the table
                # is one a derived table cannot see (its left in FROM, without LATERAL)
                candidates = [f"{r.alias}.{f.name}" for r in self.all_relations() if r.alias for f in r.fields]
                raise unknown_name_error("column", f"{qualifier}.{name}", candidates, where)
        if self.parent is not None:
            found = self.parent.resolve_optional(qualifier, name)
            if found is not None:
                self.outer_refs.add(found.id)
                return found
        if qualifier:      # t.bb: suggest t.b, a column of that table, spelled the way the user did
            candidates = [f"{qualifier}.{f.name}" for r in self.all_relations()
                          if r.alias.lower() == qualifier.lower() for f in r.fields]
            raise unknown_name_error("column", f"{qualifier}.{name}", candidates, where)
        raise unknown_name_error("column", name, [f.name for r in self.all_relations() for f in r.fields], where)

    def resolve_optional(self, qualifier: Optional[str], name: str) -> Optional[Field]:
        hits = self.lookup_local(qualifier, name)
        if len(hits) > 1:
            raise BindError(f"column {name!r} is ambiguous")
        if hits:
            return hits[0]
        if self.parent is not None:
            found = self.parent.resolve_optional(qualifier, name)
            if found is not None:
                self.outer_refs.add(found.id)
            return found
        return None

    def has_alias(self, alias: str) -> bool:
        if any(r.alias.lower() == alias.lower() for r in self.relations):
            return True
        return self.parent.has_alias(alias) if self.parent else False

    def all_relations(self) -> list[Relation]:
        return self.relations + (self.parent.all_relations() if self.parent else [])

    def star(self, qualifier: Optional[str] = None) -> list[Field]:
        if qualifier:
            relations = [r for r in self.relations if r.alias.lower() == qualifier.lower()]
            if not relations:
                raise unknown_name_error("table", qualifier, [r.alias for r in self.relations])
            return [f for r in relations for f in r.fields]
        return [f for r in self.relations for f in r.fields if f.id not in r.hidden]
