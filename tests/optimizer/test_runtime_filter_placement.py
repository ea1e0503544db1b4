"""Runtime join filters are placed by a physical rule (engine.optimizer.runtime_filters): one id on the
hash join that builds the Bloom filter and on the probe side's scan that applies it, only where the
scan runs in the join's stage and dropping its non-matching rows cannot change the result."""
from dataclasses import replace

from engine import types as T
from engine.exec.operators.exchange import ExchangeExec
from engine.exec.operators.filter import FilterExec
from engine.exec.operators.hash_join import HashJoinExec
from engine.exec.operators.scan import ScanExec
from engine.optimizer.runtime_filters import RuntimeFilterPlacer
from engine.core.expressions import ColumnRef
from engine.plan.logical import Field

FK = Field("fact.fk#1", "fk", T.BIGINT)
QTY = Field("fact.qty#2", "qty", T.BIGINT)
PK = Field("dim.pk#3", "pk", T.BIGINT)
FACT = ScanExec(1, "fact", (FK, QTY), ("fk", "qty"))
DIM = ScanExec(2, "dim", (PK,), ("pk",))


def join(kind, left, right=DIM):
    fields = left.fields + (right.fields if kind in ("inner", "left") else ())
    return HashJoinExec(left, right, kind, (ColumnRef(FK.id, FK.type, "fk"),), (ColumnRef(PK.id, PK.type, "pk"),),
                        None, fields)


def scans(op):
    found = [op] if isinstance(op, ScanExec) else []
    return found + [s for child in op.children for s in scans(child)]


def test_the_join_and_its_probe_scan_share_one_id():
    for kind in ("inner", "semi"):
        placed = RuntimeFilterPlacer().place(join(kind, FilterExec(FACT, ColumnRef(QTY.id, T.BOOLEAN, "qty"))))
        (spec,) = placed.runtime_filters
        fact, dim = scans(placed)
        assert fact.runtime_filters == (spec,) and not dim.runtime_filters
        assert (spec.column, spec.key, spec.table) == (FK.id, 0, "fact")
        assert f"bloom filter #{spec.filter_id} -> Scan fact.{FK.id}" in placed.describe()
        assert fact.describe().endswith(f"bloom filter #{spec.filter_id} on fk")


def test_no_filter_where_it_could_change_the_result_or_crosses_a_stage():
    # a left join keeps its unmatched probe rows; an exchange puts the scan in another stage
    for plan in (join("left", FACT), join("inner", ExchangeExec(FACT, "repartition", (FK.id,)))):
        placed = RuntimeFilterPlacer().place(plan)
        assert not placed.runtime_filters and not any(s.runtime_filters for s in scans(placed))


def test_ids_are_unique_across_the_plans_of_one_placer():
    placer = RuntimeFilterPlacer()
    first = placer.place(join("inner", FACT)).runtime_filters[0].filter_id
    second = placer.place(join("semi", replace(FACT))).runtime_filters[0].filter_id
    assert first != second
    # a scan met again keeps the filters it has: a join above it in a later plan adds none it would miss
    again = placer.place(join("inner", FACT))
    assert not again.runtime_filters and scans(again)[0].runtime_filters[0].filter_id == first


def test_each_key_reaching_a_scan_gets_its_own_filter():
    # which key drops rows is for the data to say (TPC-H Q9: l_suppkey keeps 99%, l_partkey 5%); the
    # scan switches off the ones that keep most rows
    pk2 = Field("dim.pk2#4", "pk2", T.BIGINT)
    dim = ScanExec(2, "dim", (PK, pk2), ("pk", "pk2"))
    keys = (ColumnRef(FK.id, FK.type, "fk"), ColumnRef(QTY.id, QTY.type, "qty"))
    plan = HashJoinExec(FACT, dim, "inner", keys, (PK.ref(), pk2.ref()), None, FACT.fields + dim.fields)
    placed = RuntimeFilterPlacer().place(plan)
    assert [(s.key, s.column) for s in placed.runtime_filters] == [(0, FK.id), (1, QTY.id)]
    assert scans(placed)[0].runtime_filters == placed.runtime_filters


def test_a_probe_first_semi_join_filters_its_build_side_by_the_probe_keys():
    # the build side's scan (and, across the inner join below on the same key, the other side's) gets
    # a filter over the probe keys; the probe side's scan gets none (it has run before any is built)
    fk2 = Field("more.fk#9", "fk", T.BIGINT)
    more = ScanExec(3, "more", (fk2,), ("fk",))
    build = HashJoinExec(DIM, more, "inner", (PK.ref(),), (fk2.ref(),), None, DIM.fields + more.fields)
    plan = HashJoinExec(FACT, build, "semi", (FK.ref(),), (PK.ref(),), None, FACT.fields, probe_first=True)
    placed = RuntimeFilterPlacer().place(plan)
    assert placed.probe_first and not placed.runtime_filters
    fact, dim, more_scan = scans(placed)
    assert not fact.runtime_filters
    on_dim, on_more = placed.probe_filters
    assert on_dim.filter_id == on_more.filter_id and on_dim.key == on_more.key == 0    # one filter, built once
    assert (on_dim.table, on_dim.column, on_more.table, on_more.column) == ("dim", PK.id, "more", fk2.id)
    assert on_dim in dim.runtime_filters and on_more in more_scan.runtime_filters
    assert "probe side first" in placed.describe()


def test_a_probe_first_join_with_nowhere_to_send_a_filter_runs_build_side_first():
    # the build side is an aggregate's output: no scan to filter; the usual filter goes to the probe scan
    from engine.exec.operators.hash_aggregate import HashAggregateExec  # noqa: F401 (the kind of op meant)
    plan = HashJoinExec(FACT, ExchangeExec(DIM, "keep"), "semi", (FK.ref(),), (PK.ref(),), None, FACT.fields,
                        probe_first=True)
    placed = RuntimeFilterPlacer().place(plan)
    assert not placed.probe_first and not placed.probe_filters
    assert scans(placed)[0].runtime_filters == placed.runtime_filters
