"""The Ray runner against the embedded one, and the exchange transport (workload i).

    python -m benchmarks.ray_bench tpch --sf 0.1             # TPC-H total, Ray vs embedded (goal <= 1.3x)
    python -m benchmarks.ray_bench link --sf 0.1             # workload i: LZ4 on/off, throttled and loopback
    python -m benchmarks.ray_bench choice --sf 0.1           # payload bytes vs Ray-pickled batches
    python -m benchmarks.ray_bench overhead --sf 0.01        # where a small query's time goes on Ray
    python -m benchmarks.ray_bench dml --rows 2000000        # DELETE / UPDATE of 1% on durable Ray leaves
    python -m benchmarks.ray_bench load --sf 0.1             # LOAD DATA lineitem streamed to the leaves

``tpch``: both runners load the same CSV files (2 leaves x 4 partitions each); every query runs once as a
warm-up on each, then ``--repeat`` times alternating; totals are sums of medians.

``link``: lineitem as Arrow batches of 16k rows through one :class:`cluster.transport.Sender` link, then
the payload moves through Ray's object store to a consumer actor that decodes it. ``throttled``: the
sender holds each frame for ``bytes / 100 MB/s`` (the benchmark mode of the transport, modelling a slow
network); ``loopback``: no throttle. Compression ``never``, ``always`` and ``adaptive`` (compress a batch
when more than 4 wait in the send queue).

``choice``: the same batches to an actor as our framed IPC payload vs as a list of RecordBatches that
Ray pickles itself, to justify the payload format.

``overhead``: small queries (a reference-table count, a sharded count, TPC-H q06, q14, q03, q05) on both
runners; for Ray each median is split into the driver before the runner (parse, plan cache), the
runner's wall time, and the leaf tasks' own time on the critical path (the slowest task of each stage,
summed), the rest being Ray's scheduling and transfer between stages. A bare actor round trip (ping of
both leaves) is the floor per stage boundary.

``dml``: a durable (data_dir) table of ``--rows`` rows on Ray leaves and, for reference, on the embedded
runner; DELETE and UPDATE of 1% of the rows (``id % 100 = c``: rows in every segment) in place (delete
bitmaps; an UPDATE's matched rows travel to the driver and back) against the rewrite every Ray DELETE
and UPDATE did before (still the path of a WHERE with a subquery: ``(SELECT c)`` forces it, same work
otherwise). Each statement changes fresh rows; ``--repeat`` rounds alternate the two paths.

``load``: LOAD DATA of TPC-H lineitem (``--sf``) into in-memory Ray leaves, which the driver streams to
the leaves as chunks while it parses (``cluster.load.StreamingLoad`` over ``cluster.ray_writes.RayLeaves``), with compression ``never``,
``always`` and ``adaptive`` (a chunk goes LZ4 when more than 4 to its leaf are unacknowledged), on
loopback and on links throttled to ``--throttle-mb`` MB/s per leaf (the transport's benchmark mode).
``--repeat`` rounds alternate the modes on one deployment (the table emptied between loads); MB/s is
the CSV file's size over the median time of the statement. The embedded runner's LOAD DATA of the same
file is the peer, measured in the same run.
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

import pyarrow as pa

from benchmarks.timing import median_seconds


def bench_tpch(args) -> int:
    import engine
    from engine.workloads import tpch

    data_dir = tpch.generate(args.sf, tpch.default_cache_dir())
    wanted = {q for q in args.queries.split(",") if q}
    queries = [(n, sql) for n, sql in tpch.queries() if not wanted or n in wanted]
    cons = {}
    for kind, options in (("embedded", {"cluster": "local"}),
                          ("ray", {"cluster": "ray", "leaf_cpus": args.leaf_cpus})):
        start = time.perf_counter()
        con = engine.connect(leaves=args.leaves, load_dir=str(data_dir), **options)
        tpch.create_schema(con)
        tpch.load(con, data_dir)
        cons[kind] = con
        print(f"{kind}: connect + load {time.perf_counter() - start:.2f} s")
    print(f"TPC-H SF {args.sf:g}, {args.leaves} leaves x 4 partitions, {os.cpu_count()} CPUs; "
          f"median of {args.repeat} after a warm-up\n")
    print(f"{'query':<6} {'embedded s':>11} {'ray s':>9} {'ratio':>7}")
    totals = {"embedded": 0.0, "ray": 0.0}
    for name, sql in queries:
        medians = {}
        for kind, con in cons.items():
            medians[kind] = median_seconds(lambda: con.execute(sql).fetch_arrow_table(), args.repeat)
            totals[kind] += medians[kind]
        print(f"{name:<6} {medians['embedded']:>11.4f} {medians['ray']:>9.4f} "
              f"{medians['ray'] / medians['embedded']:>7.2f}")
        sys.stdout.flush()
    print(f"{'total':<6} {totals['embedded']:>11.4f} {totals['ray']:>9.4f} "
          f"{totals['ray'] / totals['embedded']:>7.2f}")
    for con in cons.values():
        con.close()
    return 0


def bench_overhead(args) -> int:
    import ray

    import engine
    from engine.workloads import tpch

    data_dir = tpch.generate(args.sf, tpch.default_cache_dir())
    cons = {}
    for kind, options in (("embedded", {"cluster": "local"}), ("ray", {"cluster": "ray", "leaf_cpus": args.leaf_cpus})):
        con = engine.connect(leaves=args.leaves, load_dir=str(data_dir), **options)
        tpch.create_schema(con)
        tpch.load(con, data_dir)
        cons[kind] = con
    runner = cons["ray"].session.runner
    repeat = max(args.repeat, 10)
    ping = median_seconds(lambda: ray.get([leaf.ping.remote() for leaf in runner.leaves]), repeat)
    print(f"TPC-H SF {args.sf:g}, {args.leaves} leaves, {os.cpu_count()} CPUs, median of {repeat}; "
          f"actor round trip (ping every leaf) {ping * 1000:.2f} ms\n")
    queries = [("count reference", "SELECT COUNT(*) FROM nation"), ("count sharded", "SELECT COUNT(*) FROM orders")]
    queries += [(q, tpch.query(q)) for q in ("q06", "q14", "q03", "q05")]
    print(f"{'query':<16} {'embedded ms':>11} {'ray ms':>8} {'ratio':>6} {'driver':>7} {'runner':>7} "
          f"{'leaf path':>9} {'stages':>6}")
    run = runner.run
    for name, sql in queries:
        embedded = median_seconds(lambda: cons["embedded"].execute(sql).fetch_arrow_table(), repeat)
        samples = []

        def timed_run(*a, **k):
            start = time.perf_counter()
            try:
                return run(*a, **k)
            finally:
                samples[-1]["runner"] += time.perf_counter() - start

        runner.run = timed_run
        try:
            def one():
                samples.append({"runner": 0.0})
                start = time.perf_counter()
                cons["ray"].execute(sql).fetch_arrow_table()
                samples[-1]["total"] = time.perf_counter() - start
                slowest: dict[int, float] = {}
                for meta in runner.last_profile:
                    slowest[meta["stage"]] = max(slowest.get(meta["stage"], 0.0), meta["seconds"])
                samples[-1]["leaf"] = sum(slowest.values())
                samples[-1]["stages"] = len(slowest)

            median_seconds(one, repeat)
        finally:
            runner.run = run
        samples = samples[1:]                   # without the warm-up
        med = {k: statistics.median(s[k] for s in samples) for k in ("total", "runner", "leaf", "stages")}
        print(f"{name:<16} {embedded * 1000:>11.2f} {med['total'] * 1000:>8.2f} {med['total'] / embedded:>6.2f} "
              f"{(med['total'] - med['runner']) * 1000:>7.2f} {med['runner'] * 1000:>7.2f} "
              f"{med['leaf'] * 1000:>9.2f} {med['stages']:>6.0f}")
        sys.stdout.flush()
    for con in cons.values():
        con.close()
    return 0


def _lineitem_batches(sf: float, rows_per_batch: int = 16384) -> list[pa.RecordBatch]:
    import engine
    from engine.workloads import tpch

    data_dir = tpch.generate(sf, tpch.default_cache_dir())
    con = engine.connect(cluster="local", load_dir=str(data_dir))
    tpch.create_schema(con)
    tpch.load(con, data_dir)
    table = con.execute("SELECT * FROM lineitem").fetch_arrow_table()
    con.close()
    return table.combine_chunks().to_batches(max_chunksize=rows_per_batch)


def _consumer():
    import ray

    from cluster import transport

    @ray.remote(num_cpus=0.5)
    class Consumer:
        def take_payload(self, payload) -> int:
            return sum(b.num_rows for b in transport.decode(payload))

        def take_batches(self, batches) -> int:
            return sum(b.num_rows for b in batches)

    return Consumer.remote()


def bench_link(args) -> int:
    import ray

    from cluster import transport

    batches = _lineitem_batches(args.sf)
    raw_bytes = sum(b.nbytes for b in batches)
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, logging_level="WARNING")
    consumer = _consumer()
    ray.get(consumer.take_payload.remote(transport.encode(batches[:1], batches[0].schema)))
    print(f"lineitem SF {args.sf:g}: {len(batches)} batches, {raw_bytes / 1e6:.1f} MB in Arrow\n")
    print(f"{'link':<10} {'compression':<11} {'link s':>7} {'total s':>8} {'sent MB':>8} {'ratio':>6} "
          f"{'compressed':>11}")
    results = {}
    for link, throttle in (("throttled", 100e6), ("loopback", None)):
        for compression in ("never", "always", "adaptive"):
            counters = {}

            def transfer():
                start = time.perf_counter()
                sender = transport.Sender(batches[0].schema, 1, compression=compression,
                                          throttle_bytes_per_s=throttle)
                for batch in batches:
                    sender.send(0, batch)
                (payload,) = sender.finish()
                counters.setdefault("link_s", []).append(time.perf_counter() - start)
                rows = ray.get(consumer.take_payload.remote(ray.put(payload)))
                assert rows == sum(b.num_rows for b in batches)
                counters["link"] = sender.counters[0]

            seconds = median_seconds(transfer, args.repeat)
            link_s = statistics.median(counters["link_s"][1:])        # without the warm-up
            c = counters["link"]
            results[(link, compression)] = (link_s, seconds)
            print(f"{link:<10} {compression:<11} {link_s:>7.3f} {seconds:>8.3f} {c.bytes_sent / 1e6:>8.1f} "
                  f"{c.ratio:>6.2f} {c.batches_compressed:>5}/{c.batches:<5}")
        for i, what in ((0, "link"), (1, "end to end")):
            never, always, adaptive = (results[(link, c)][i] for c in ("never", "always", "adaptive"))
            print(f"  {link} {what}: LZ4 always {never / always:.2f}x, adaptive {never / adaptive:.2f}x "
                  f"the speed of raw")
        print()
    ray.shutdown()
    return 0


def bench_choice(args) -> int:
    import ray

    from cluster import transport

    batches = _lineitem_batches(args.sf)
    ray.init(num_cpus=os.cpu_count(), include_dashboard=False, logging_level="WARNING")
    consumer = _consumer()
    rows = sum(b.num_rows for b in batches)

    def as_payload():
        payload = transport.encode(batches, batches[0].schema, "never")
        assert ray.get(consumer.take_payload.remote(ray.put(payload))) == rows

    def as_batches():
        assert ray.get(consumer.take_batches.remote(ray.put(batches))) == rows

    for label, fn in (("framed IPC payload", as_payload), ("Ray-pickled batches", as_batches)):
        print(f"{label:<22} {median_seconds(fn, args.repeat):.3f} s")
    ray.shutdown()
    return 0


def bench_dml(args) -> int:
    import shutil
    import tempfile
    from pathlib import Path

    import numpy as np

    import engine

    rows = args.rows
    rng = np.random.default_rng(1)
    table = pa.table({"id": pa.array(rng.permutation(rows).astype(np.int64)),
                      "k": pa.array(np.sort(rng.integers(0, 10_000, rows)).astype(np.int32)),
                      "tag": pa.array(np.array(["red", "green", "blue", "gray"])[rng.integers(0, 4, rows)]),
                      "v": pa.array(rng.random(rows))})
    work = Path(tempfile.mkdtemp(prefix="canopy-dml-"))
    print(f"{rows:,} rows, durable, {args.leaves} leaves x 4 partitions, {os.cpu_count()} CPUs; "
          f"each statement changes 1% ({rows // 100:,} rows); {args.repeat} rounds, alternating")
    try:
        for kind, options in (("ray", {"cluster": "ray", "leaf_cpus": args.leaf_cpus}),
                              ("embedded", {"cluster": "local"})):
            con = engine.connect(leaves=args.leaves, data_dir=str(work / kind), progress=False, **options)
            con.execute("CREATE TABLE t (id BIGINT, k INT, tag VARCHAR(8), v DOUBLE, SHARD KEY (id), SORT KEY (k))")
            con.load_table("t", table)
            con.execute("OPTIMIZE TABLE t")
            times: dict[str, list[float]] = {}
            residue = 0
            for _ in range(args.repeat):
                for statement, sql in (("DELETE", "DELETE FROM t WHERE id % 100 = {c}"),
                                       ("UPDATE", "UPDATE t SET v = v + 1 WHERE id % 100 = {c}")):
                    paths = [("in place", str)] + ([("rewrite", lambda c: f"(SELECT {c})")] if kind == "ray" else [])
                    for path, literal in paths:
                        residue += 1
                        start = time.perf_counter()
                        cur = con.execute(sql.format(c=literal(residue)))
                        times.setdefault(f"{statement} {path}", []).append(time.perf_counter() - start)
                        assert cur.rowcount == rows // 100, (sql, cur.rowcount)
            deletes = sum(len(ts) for name, ts in times.items() if name.startswith("DELETE"))
            assert con.execute("SELECT COUNT(*) FROM t").fetchone()[0] == rows - rows // 100 * deletes
            con.close()
            line = "  ".join(f"{name} {statistics.median(ts):6.3f} s" for name, ts in times.items())
            print(f"{kind:<9} {line}")
            for statement in ("DELETE", "UPDATE"):
                if f"{statement} rewrite" in times:
                    print(f"{'':<9} {statement}: rewrite / in place = "
                          f"{statistics.median(times[statement + ' rewrite']) / statistics.median(times[statement + ' in place']):.1f}x")
    finally:
        shutil.rmtree(work, ignore_errors=True)
    return 0


def bench_load(args) -> int:
    import engine
    from engine.workloads import tpch

    data_dir = tpch.generate(args.sf, tpch.default_cache_dir())
    path = (data_dir / "lineitem.csv").resolve()
    megabytes = path.stat().st_size / 1e6
    sql = tpch.LOAD_DATA_SQL.format(path=str(path).replace("'", "''"), table="lineitem")
    ddl = next(s for s in tpch.schema_statements() if "lineitem" in s.split("(")[0].lower())
    cons = {"embedded": engine.connect(cluster="local", leaves=args.leaves, progress=False),
            "ray": engine.connect(cluster="ray", leaves=args.leaves, leaf_cpus=args.leaf_cpus, progress=False)}
    for con in cons.values():
        con.execute(ddl)
    runner = cons["ray"].session.runner
    modes = [("embedded", None, None)] + [(link, compression, throttle)
                                          for link, throttle in (("loopback", None), ("throttled", args.throttle_mb * 1e6))
                                          for compression in ("never", "always", "adaptive")]
    seconds: dict = {mode: [] for mode in modes}
    stats: dict = {}
    for _ in range(args.repeat):
        for mode in modes:
            link, compression, throttle = mode
            con = cons["embedded" if link == "embedded" else "ray"]
            if link != "embedded":
                runner.transport_options.update(compression=compression, throttle_bytes_per_s=throttle)
            con.execute("DELETE FROM lineitem")
            start = time.perf_counter()
            con.execute(sql)
            seconds[mode].append(time.perf_counter() - start)
            if link != "embedded":
                stats[mode] = runner.last_load
    print(f"LOAD DATA lineitem SF {args.sf:g} ({megabytes:.1f} MB CSV), {args.leaves} leaves x 4 partitions, "
          f"{os.cpu_count()} CPUs, machine load {os.getloadavg()[0]:.1f}; median of {args.repeat}, modes alternating; "
          f"throttled = {args.throttle_mb:g} MB/s per leaf\n")
    print(f"{'link':<10} {'compression':<11} {'s':>7} {'MB/s':>7} {'raw MB':>7} {'sent MB':>8} {'ratio':>6} "
          f"{'LZ4 chunks':>11} {'waits':>6}")
    for mode in modes:
        link, compression, _ = mode
        median = statistics.median(seconds[mode])
        line = f"{link:<10} {compression or '-':<11} {median:>7.2f} {megabytes / median:>7.1f}"
        if mode in stats:
            st = stats[mode]
            line += (f" {st.bytes_raw / 1e6:>7.1f} {st.bytes_sent / 1e6:>8.1f} {st.ratio:>6.2f} "
                     f"{st.chunks_compressed:>5}/{st.chunks:<5} {st.waits:>6}")
        print(line)
    for link in ("loopback", "throttled"):
        never, always, adaptive = (statistics.median(seconds[(link, c, t)]) for (l, c, t) in modes if l == link)
        print(f"  {link}: LZ4 always {never / always:.2f}x, adaptive {never / adaptive:.2f}x the speed of raw")
    for con in cons.values():
        con.close()
    return 0


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(prog="python -m benchmarks.ray_bench", description=__doc__.splitlines()[0])
    parser.add_argument("what", choices=["tpch", "link", "choice", "overhead", "dml", "load"])
    parser.add_argument("--sf", type=float, default=0.1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--queries", default="", help="comma-separated subset of TPC-H queries")
    parser.add_argument("--leaves", type=int, default=2)
    parser.add_argument("--leaf-cpus", type=float, default=0.5)
    parser.add_argument("--rows", type=int, default=2_000_000, help="dml: rows of the table")
    parser.add_argument("--throttle-mb", type=float, default=10.0, help="load: throttled link, MB/s per leaf")
    args = parser.parse_args(argv)
    return {"tpch": bench_tpch, "link": bench_link, "choice": bench_choice,
            "overhead": bench_overhead, "dml": bench_dml, "load": bench_load}[args.what](args)


if __name__ == "__main__":
    sys.exit(main())
