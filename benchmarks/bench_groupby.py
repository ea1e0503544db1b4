"""Hash group-by: the kernels against pyarrow's group_by (asv), and workloads a, b and f of
../shared/bench/WORKLOADS.md through Canopy SQL and DuckDB in the same run (``python -m
benchmarks.bench_groupby [--rows N]``; the default 2M rows keeps a shared 2-core box responsive,
--rows 20000000 is the workload's size). Also prints the kernel's memory per group."""
import argparse
import sys
import time

import numpy as np
import pyarrow as pa

from benchmarks.timing import median_seconds

ROWS = 2_000_000


def workload_a(rows, seed=0):
    rng = np.random.default_rng(seed)
    return pa.table({"a": np.arange(rows, dtype=np.int64), "b": rng.permutation(rows).astype(np.int64)})


def workload_b(rows, seed=0):
    rng = np.random.default_rng(seed)
    return pa.table({"k": rng.integers(0, rows // 4, rows), "v": rng.integers(0, 1000, rows)})


def workload_f(rows, seed=0):
    rng = np.random.default_rng(seed)
    symbols = np.array([f"S{i:04d}" for i in range(5000)])
    codes = np.minimum(rng.zipf(1.3, rows) - 1, 4999)
    return pa.table({"id": np.arange(rows), "stock_symbol": pa.array(symbols[codes]),
                     "price": rng.random(rows)})


class FactorizeAggregate:
    """Kernel alone (factorize + COUNT + SUM) vs pyarrow's group_by on workload b's columns."""
    params = ["kernel", "pyarrow"]
    param_names = ["implementation"]

    def setup(self, implementation):
        self.table = workload_b(ROWS)

    def time_count_sum(self, implementation):
        if implementation == "pyarrow":
            self.table.group_by("k", use_threads=False).aggregate([("k", "count"), ("v", "sum")])
            return
        import kernels
        f = kernels.Factorizer([pa.int64()])
        count, total = kernels.GroupedAggregate("count_all"), kernels.GroupedAggregate("sum", pa.int64())
        for batch in self.table.to_batches():
            ids = f.factorize([batch.column(0)])
            count.update(ids, f.num_groups)
            total.update(ids, f.num_groups, batch.column(1))
        f.uniques(), count.result(), total.result()


class CountDistinct:
    """COUNT(DISTINCT) of unique int64 values in 64k-row batches (one leaf's share of workload a):
    kernels.DistinctCount growing, sized from kernels.estimate_distinct first, and pyarrow."""
    params = ["kernel-growing", "kernel-presized", "pyarrow"]
    param_names = ["implementation"]

    def setup(self, implementation):
        self.batches = [b.column(1) for b in workload_a(ROWS).to_batches(max_chunksize=1 << 16)]

    def time_count_distinct(self, implementation):
        if implementation == "pyarrow":
            import pyarrow.compute as pc
            return pc.count_distinct(pa.chunked_array(self.batches)).as_py()
        import kernels
        counter = kernels.DistinctCount(pa.int64())
        if implementation == "kernel-presized":
            counter.reserve(int(kernels.estimate_distinct(self.batches) * 1.05))
        for batch in self.batches:
            counter.add(batch)
        return counter.count


def _sql_runners(table, ddl):
    import duckdb

    import engine
    duck = duckdb.connect(":memory:")
    duck.execute("SET threads TO 2")
    duck.register("src", table)
    duck.execute("CREATE TABLE t AS SELECT * FROM src")
    con = engine.connect(database="bench_groupby", progress=False)
    con.execute(ddl)
    con.load_table("t", table)
    return {"canopy": lambda sql: con.execute(sql).fetchall(), "duckdb": lambda sql: duck.sql(sql).fetchall()}


def main(argv=None):
    parser = argparse.ArgumentParser()
    parser.add_argument("--rows", type=int, default=ROWS)
    parser.add_argument("--repeat", type=int, default=3)
    args = parser.parse_args(argv)
    import kernels

    cases = [("a", workload_a(args.rows), "CREATE TABLE t (a BIGINT, b BIGINT, SHARD KEY (a))",
              ["SELECT COUNT(DISTINCT b) FROM t"]),
             ("b", workload_b(args.rows), "CREATE TABLE t (k BIGINT, v BIGINT)",
              ["SELECT k, COUNT(*), SUM(v) FROM t GROUP BY k",
               "SELECT k, COUNT(*), SUM(v) FROM t GROUP BY k ORDER BY 2 DESC LIMIT 10"]),
             ("f", workload_f(args.rows), "CREATE TABLE t (id BIGINT, stock_symbol VARCHAR(8), price DOUBLE)",
              ["SELECT stock_symbol, COUNT(*) c FROM t GROUP BY stock_symbol ORDER BY c DESC LIMIT 10"])]
    for name, table, ddl, queries in cases:
        runners = _sql_runners(table, ddl)
        for sql in queries:
            times = {peer: median_seconds(lambda: run(sql), args.repeat) for peer, run in runners.items()}
            print(f"workload {name} ({args.rows:,} rows): {sql}")
            for peer, t in times.items():
                print(f"  {peer:8s} {t * 1e3:9.1f} ms")
            print(f"  ratio canopy/duckdb {times['canopy'] / times['duckdb']:.2f}")
    # kernel alone, workload b's columns
    bench = FactorizeAggregate()
    bench.table = workload_b(args.rows)
    for impl in FactorizeAggregate.params:
        print(f"kernel-level count+sum by k, {impl:8s} {median_seconds(lambda: bench.time_count_sum(impl), args.repeat) * 1e3:9.1f} ms")
    distinct = CountDistinct()
    distinct.batches = [b.column(1) for b in workload_a(args.rows).to_batches(max_chunksize=1 << 16)]
    for impl in CountDistinct.params:
        print(f"kernel-level COUNT(DISTINCT) of {args.rows:,} unique int64, {impl:15s} "
              f"{median_seconds(lambda: distinct.time_count_distinct(impl), args.repeat) * 1e3:9.1f} ms")
    dict_keys = workload_f(args.rows).column("stock_symbol").combine_chunks().dictionary_encode()
    print(f"kernel factorize dictionary symbols   {median_seconds(lambda: kernels.factorize([dict_keys]), args.repeat) * 1e3:9.1f} ms")
    plain_keys = dict_keys.dictionary_decode()
    print(f"kernel factorize plain-string symbols {median_seconds(lambda: kernels.factorize([plain_keys]), args.repeat) * 1e3:9.1f} ms")
    # memory per group, tens of millions of groups
    groups = max(args.rows, 1_000_000)
    f = kernels.Factorizer([pa.int64()])
    start = time.perf_counter()
    for chunk in np.array_split(np.random.default_rng(3).permutation(groups).astype(np.int64), 16):
        f.factorize([pa.array(chunk)])
    print(f"{f.num_groups:,} distinct int64 keys: {time.perf_counter() - start:.2f} s, table "
          f"{f.memory_bytes / f.num_groups:.1f} B/group (+8 B/group kept key, +8..16 B/group per "
          f"COUNT/SUM state)")


if __name__ == "__main__":
    sys.path.insert(0, str(__import__("pathlib").Path(__file__).resolve().parents[1]))
    main()
