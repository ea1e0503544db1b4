"""Where rows are: the distribution an operator's output has, and the one it requires of an input.

Every physical operator declares both (``PhysicalOperator.output_distribution`` and
``required_distributions``); the physical rule :mod:`engine.optimizer.exchanges` inserts an exchange
wherever an input's distribution does not satisfy its consumer's requirement, so an operator gets its
rows moved without placing exchanges itself.

A :class:`Distribution` (what rows *are*):

* ``hashed(keys)`` — spread over all partitions by the hash of ``keys`` (field ids, in order): a table
  sharded on its shard key as scanned, or rows repartitioned by keys;
* ``ANY`` — spread over all partitions, on no known key (keyless tables);
* ``REPLICATED`` — every partition sees every row (reference tables, broadcasts, constants);
* ``SINGLE`` — in one task (the aggregator).

A :class:`Required` (what an input must be): ``NEEDS_SINGLE`` (gathered), ``NEEDS_BROADCAST`` (a copy
on every partition), ``Required.hash(keys)`` (hashed on exactly ``keys``, in that order: the sides of a
join meet by the hash of matching keys) or ``Required.colocated(keys)`` (rows equal on ``keys`` in one
task: hashed on any non-empty subset of them, or all in one task). No requirement (None): the rows are
used where they are.
"""
from __future__ import annotations

from dataclasses import dataclass
from typing import Mapping, Optional

from engine.core.expressions import Call, ColumnRef


@dataclass(frozen=True)
class Distribution:
    kind: str                       # hashed | any | replicated | single
    keys: tuple[str, ...] = ()      # field ids hashed (hashed only)

    @property
    def partitioned(self) -> bool:
        """Spread over all partitions (each row in one of them)."""
        return self.kind in ("hashed", "any")

    def renamed(self, names: Mapping[str, str]) -> "Distribution":
        """This distribution seen through an operator that renames columns (``names``: input field id ->
        output field id): hashed stays hashed when every key comes out, else the key is lost."""
        if self.kind != "hashed":
            return self
        if all(k in names for k in self.keys):
            return Distribution("hashed", tuple(names[k] for k in self.keys))
        return ANY


SINGLE = Distribution("single")
REPLICATED = Distribution("replicated")
ANY = Distribution("any")


def hashed(keys) -> Distribution:
    return Distribution("hashed", tuple(keys))


@dataclass(frozen=True)
class Required:
    kind: str                       # single | broadcast | hash | colocated
    keys: tuple[str, ...] = ()

    @staticmethod
    def hash(keys) -> "Required":
        return Required("hash", tuple(keys))

    @staticmethod
    def colocated(keys) -> "Required":
        return Required("colocated", tuple(keys))

    def satisfied_by(self, dist: Distribution) -> bool:
        if self.kind == "single":
            return dist.kind == "single"
        if self.kind == "broadcast":
            return dist.kind == "replicated"
        if self.kind == "hash":
            return dist.kind == "hashed" and dist.keys == self.keys
        return dist.kind == "single" or (dist.kind == "hashed" and bool(dist.keys) and set(dist.keys) <= set(self.keys))

    def delivered(self, dist: Distribution) -> Distribution:
        """The distribution an input has once it satisfies this requirement (moved where it must be)."""
        if self.satisfied_by(dist):
            return dist
        if self.kind == "single":
            return SINGLE
        if self.kind == "broadcast":
            return REPLICATED
        return hashed(self.keys)


NEEDS_SINGLE = Required("single")
NEEDS_BROADCAST = Required("broadcast")


def delivered(dist: Distribution, required: Optional[Required]) -> Distribution:
    return dist if required is None else required.delivered(dist)


def join_output(kind: str, left: Distribution, right: Distribution) -> Distribution:
    """A join's output from its sides' distributions as they meet (one of the combinations the planner
    asks for): in one task, or copied everywhere, it is where both are; a side joined locally with
    a replicated side keeps its distribution; two partitioned sides meet where the left is. A full
    join's unmatched right rows have NULL left keys, so its output is hashed on nothing."""
    if left.kind == right.kind and left.kind in ("single", "replicated"):
        return left
    if right.kind == "replicated":
        return left
    if left.kind == "replicated":
        return right
    return ANY if kind == "full" else left


def hash_compatible(a, b) -> bool:
    """Whether values of SQL types ``a`` and ``b`` that are equal hash alike (placement kernel)."""
    if a.kind == "int" and b.kind == "int":
        return True
    return a.to_arrow() == b.to_arrow()


def collated_id(field_id: str, collation: str) -> str:
    """The distribution key of a string column hashed by its collation keys (a table whose rows are
    placed by them, engine.catalog.TableDef.collated_placement): it names no column until a
    ``collation_key(column)`` under that collation is computed, which then stands for it."""
    return f"collation_key({field_id}, {collation})"


def key_id(e) -> Optional[str]:
    """The distribution key an expression hashes as: a column's id, a collation key's collated_id."""
    if isinstance(e, ColumnRef):
        return e.id
    if isinstance(e, Call) and e.op == "collation_key" and isinstance(e.args[0], ColumnRef) and e.options[1]:
        return collated_id(e.args[0].id, e.options[0])
    return None


def projected(dist: Distribution, exprs) -> Distribution:
    """``dist`` over the output of a projection ``exprs`` ((field, expression) pairs): a key passed
    through (or, for a collated key, its collation key computed) under its new name, else ANY."""
    if dist.kind != "hashed":
        return dist
    renames = {}
    for f, e in exprs:
        if isinstance(e, ColumnRef):
            renames.setdefault(e.id, f.id)
            for key in dist.keys:
                if key.startswith(f"collation_key({e.id}, "):
                    renames.setdefault(key, key.replace(f"({e.id}, ", f"({f.id}, ", 1))
        elif key_id(e) is not None:
            renames[key_id(e)] = f.id
    return dist.renamed(renames)


def grouped_output(dist: Distribution, keys, reads_states: bool = False) -> Distribution:
    """An aggregate's output over input ``dist``: hashed on its group keys' output ids where the input
    was hashed on key columns or their collation keys (``keys``: (output field, expression) pairs).
    A final aggregate (``reads_states``) reads partial states whose key columns already carry the
    output ids: states repartitioned by (some of) them stay hashed on those."""
    if reads_states:
        return dist.renamed({f.id: f.id for f, _ in keys})
    return dist.renamed({key_id(e): f.id for f, e in keys if key_id(e) is not None})
