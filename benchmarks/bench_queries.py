"""asv suite: TPC-H queries at SF 0.01 on Canopy, timed, and Canopy's time relative to DuckDB's tracked.

``setup_cache`` generates the data once per asv run (cached under ``.data/tpch`` across runs too);
``setup`` loads it into both engines, once per process. The ``track_ratio`` numbers are the ones to watch
over time: wall-clock times drift with the machine, the ratio much less (``shared/bench/WORKLOADS.md``).
For SF 1 and all 22 queries use ``python -m benchmarks.tpch`` instead.
"""
from benchmarks.timing import median_seconds

SF = 0.01
QUERIES = ["q01", "q03", "q05", "q06", "q09", "q13", "q18", "q21"]

_loaded = {}  # data_dir -> (canopy, duckdb), so the parameters run in one process share one load


def _connections(data_dir):
    if data_dir not in _loaded:
        import duckdb

        import engine
        from engine.workloads import tpch

        canopy = engine.connect(load_dir=str(data_dir))
        tpch.create_schema(canopy)
        tpch.load(canopy, data_dir)
        duck = duckdb.connect(":memory:")
        tpch.load_duckdb(duck, data_dir)
        _loaded[data_dir] = canopy, duck
    return _loaded[data_dir]


class TPCHQueries:
    params = QUERIES
    param_names = ["query"]
    timeout = 300

    def setup_cache(self):
        from engine.workloads import tpch

        return str(tpch.generate(SF, tpch.default_cache_dir()))

    def setup(self, data_dir, query):
        from engine.workloads import tpch

        self.canopy, self.duck = _connections(data_dir)
        self.sql = tpch.query(query)

    def time_canopy(self, data_dir, query):
        self.canopy.execute(self.sql).fetch_arrow_table()

    def time_duckdb(self, data_dir, query):
        self.duck.sql(self.sql).to_arrow_table()

    def track_ratio_canopy_duckdb(self, data_dir, query):
        canopy = median_seconds(lambda: self.canopy.execute(self.sql).fetch_arrow_table())
        duck = median_seconds(lambda: self.duck.sql(self.sql).to_arrow_table())
        return canopy / duck

    track_ratio_canopy_duckdb.unit = "canopy/duckdb"


class TPCHLoad:
    """LOAD DATA of the two biggest tables at SF 0.01 into a fresh embedded cluster."""

    timeout = 300
    # Loading appends: every timed call needs its own fresh cluster from setup, so one call per sample.
    number = 1
    repeat = 5
    warmup_time = 0

    def setup_cache(self):
        from engine.workloads import tpch

        return str(tpch.generate(SF, tpch.default_cache_dir()))

    def setup(self, data_dir):
        import engine
        from engine.workloads import tpch

        self.con = engine.connect(load_dir=str(data_dir))
        tpch.create_schema(self.con)

    def teardown(self, data_dir):
        self.con.close()

    def time_load_orders_lineitem(self, data_dir):
        from engine.workloads import tpch

        for table in ("orders", "lineitem"):
            tpch.load_table(self.con, data_dir, table)
