"""The MySQL wire server against the in-process DB-API, in the same run: ``python -m benchmarks.server``.

Three figures:

1. ``SELECT 1`` round trips: mean and median milliseconds of ``--round-trips`` sequential queries through
   PyMySQL, and through the DB-API in this process;
2. TPC-H (``--sf``, default 0.1): each query warmed up twice, then the median of ``--repeat`` runs,
   fetched as Python rows on both sides (PyMySQL's ``fetchall`` and the DB-API's), the ratio server /
   DB-API per query and in total;
3. ``--clients`` (default 32) PyMySQL connections for ``--duration`` seconds, each running a mix of point
   queries (an order by key) and TPC-H queries (``--mix``): queries done, errors, latency percentiles.

The server is ``python -m engine.server`` in a child process (its own embedded cluster, loaded by
``LOAD DATA INFILE`` through PyMySQL from the same CSV files as the in-process connection).

    python -m benchmarks.server --sf 0.01 --repeat 3 --clients 8 --duration 10
"""
from __future__ import annotations

import argparse
import json
import random
import statistics
import sys
import threading
import time


def _median_seconds(run, repeat: int) -> float:
    run()
    run()
    times = []
    for _ in range(repeat):
        start = time.perf_counter()
        run()
        times.append(time.perf_counter() - start)
    return statistics.median(times)


def round_trips(execute, count: int) -> tuple[float, float]:
    """(mean ms, median ms) of ``count`` SELECT 1."""
    for _ in range(20):
        execute("SELECT 1")
    times = []
    for _ in range(count):
        start = time.perf_counter()
        execute("SELECT 1")
        times.append(time.perf_counter() - start)
    return statistics.fmean(times) * 1000, statistics.median(times) * 1000


def concurrent_mix(server, clients: int, duration: float, mix: list[tuple[str, str]], orderkeys: list[int]) -> dict:
    """``orderkeys``: the keys of ``orders`` (a point query that finds no row counts as an error)."""
    import pymysql
    done: list[tuple[str, float]] = []
    errors: list[str] = []
    lock = threading.Lock()
    stop_at = time.monotonic() + duration

    def client(number: int) -> None:
        rng = random.Random(number)
        try:
            con = pymysql.connect(host=server.host, port=server.port, user=server.user, password=server.password,
                                  database="canopy", autocommit=True)
        except pymysql.MySQLError as error:
            with lock:
                errors.append(f"connect: {error}")
            return
        cur = con.cursor()
        while time.monotonic() < stop_at:
            if rng.random() < 0.8:
                kind, sql, params = "point", "SELECT * FROM orders WHERE o_orderkey = %s", \
                    (rng.choice(orderkeys),)
            else:
                kind, sql = rng.choice(mix)
                params = None
            start = time.perf_counter()
            try:
                cur.execute(sql, params)
                rows = cur.fetchall()
            except pymysql.MySQLError as error:
                with lock:
                    errors.append(f"{kind}: {error}")
                continue
            if kind == "point" and len(rows) != 1:
                with lock:
                    errors.append(f"point: {len(rows)} rows for o_orderkey = {params[0]}")
                continue
            with lock:
                done.append((kind, time.perf_counter() - start))
        con.close()

    threads = [threading.Thread(target=client, args=(n,)) for n in range(clients)]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()

    def percentiles(kind: str) -> dict:
        values = sorted(t for k, t in done if k == kind or (kind != "point" and k != "point"))
        if not values:
            return {"count": 0}
        pick = lambda q: values[min(len(values) - 1, int(q * len(values)))] * 1000   # noqa: E731
        return {"count": len(values), "p50_ms": pick(0.5), "p99_ms": pick(0.99)}

    return {"clients": clients, "seconds": duration, "queries": len(done), "qps": len(done) / duration,
            "errors": len(errors), "first_errors": errors[:5], "point": percentiles("point"),
            "tpch": percentiles("tpch")}


def main(argv=None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--sf", type=float, default=0.1)
    parser.add_argument("--repeat", type=int, default=3)
    parser.add_argument("--round-trips", type=int, default=2000)
    parser.add_argument("--queries", help="comma-separated TPC-H queries (default: all 22)")
    parser.add_argument("--clients", type=int, default=32)
    parser.add_argument("--duration", type=float, default=60.0)
    parser.add_argument("--mix", default="q01,q03,q06,q10,q14",
                        help="TPC-H queries the concurrent clients draw from (with point queries)")
    parser.add_argument("--json", help="write the figures to this file too")
    args = parser.parse_args(argv)

    import pymysql

    import engine
    from engine.server.process import ServerProcess
    from engine.workloads import tpch

    data_dir = tpch.generate(args.sf, tpch.default_cache_dir()).resolve()
    wanted = set(args.queries.split(",")) if args.queries else None
    queries = [(n, q) for n, q in tpch.queries() if wanted is None or n in wanted]
    figures: dict = {"sf": args.sf}

    local = engine.connect(load_dir=str(data_dir))
    tpch.create_schema(local)
    tpch.load(local, data_dir)
    with ServerProcess("--load-dir", str(data_dir)) as server:
        # autocommit as the DB-API's: PyMySQL's default (off) kept the loads in a transaction never
        # committed, so the other clients saw empty tables and this one ran without the plan cache
        remote = pymysql.connect(host=server.host, port=server.port, user=server.user, password=server.password,
                                 database="canopy", autocommit=True)
        cur = remote.cursor()
        for statement in tpch.schema_statements():
            cur.execute(statement)
        for table in tpch.TABLES:
            cur.execute(tpch.LOAD_DATA_SQL.format(path=str(data_dir / f"{table}.csv"), table=table))

        def remote_execute(sql):
            cur.execute(sql)
            return cur.fetchall()

        def local_execute(sql):
            return local.execute(sql).fetchall()

        server_mean, server_median = round_trips(remote_execute, args.round_trips)
        local_mean, local_median = round_trips(local_execute, args.round_trips)
        figures["select1_ms"] = {"server_mean": server_mean, "server_median": server_median,
                                 "dbapi_mean": local_mean, "dbapi_median": local_median}
        print(f"SELECT 1 round trip: server {server_mean:.3f} ms mean ({server_median:.3f} median), "
              f"DB-API {local_mean:.3f} ms mean ({local_median:.3f} median), {args.round_trips} queries")

        print(f"\nTPC-H SF {args.sf}: median of {args.repeat} after 2 warm-ups, rows fetched as Python tuples")
        print(f"{'query':6} {'server s':>9} {'DB-API s':>9} {'ratio':>6}")
        totals = [0.0, 0.0]
        per_query = {}
        for name, sql in queries:
            server_s = _median_seconds(lambda: remote_execute(sql), args.repeat)
            local_s = _median_seconds(lambda: local_execute(sql), args.repeat)
            totals[0] += server_s
            totals[1] += local_s
            per_query[name] = (server_s, local_s)
            print(f"{name:6} {server_s:9.3f} {local_s:9.3f} {server_s / local_s:6.2f}")
        print(f"{'total':6} {totals[0]:9.3f} {totals[1]:9.3f} {totals[0] / totals[1]:6.2f}")
        figures["tpch"] = {"per_query": per_query, "server_total": totals[0], "dbapi_total": totals[1],
                           "ratio": totals[0] / totals[1]}

        orderkeys = local.execute("SELECT o_orderkey FROM orders").fetch_arrow_table().column(0).to_pylist()
        mix = [("tpch", tpch.query(name)) for name in args.mix.split(",")]
        remote.close()
        print(f"\n{args.clients} concurrent clients for {args.duration:g} s (80% point queries, 20% TPC-H "
              f"{args.mix}) ...")
        mixed = concurrent_mix(server, args.clients, args.duration, mix, orderkeys)
        figures["concurrent"] = mixed
        print(f"{mixed['queries']} queries ({mixed['qps']:.1f}/s), {mixed['errors']} errors; point p50 "
              f"{mixed['point'].get('p50_ms', 0):.1f} ms p99 {mixed['point'].get('p99_ms', 0):.1f} ms; TPC-H p50 "
              f"{mixed['tpch'].get('p50_ms', 0):.1f} ms p99 {mixed['tpch'].get('p99_ms', 0):.1f} ms "
              f"({mixed['tpch'].get('count', 0)} run)")
        for error in mixed["first_errors"]:
            print("  error:", error)
    local.close()
    if args.json:
        with open(args.json, "w") as out:
            json.dump(figures, out, indent=1, default=str)
    return 1 if figures["concurrent"]["errors"] else 0


if __name__ == "__main__":
    sys.exit(main())
