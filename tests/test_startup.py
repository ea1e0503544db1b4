"""What ``import engine`` + ``connect()`` + a first query load: not pandas (pyarrow would import it on
its first list conversion; engine.lazy_pandas defers that), while pandas objects, once the program
imports pandas, are recognised by pyarrow as before."""
import subprocess
import sys

SCRIPT = """
import sys
import engine
con = engine.connect(partitions_per_leaf=1)
con.execute("CREATE TABLE t (a BIGINT, s VARCHAR(5))")
con.execute("INSERT INTO t VALUES (1, 'x'), (2, NULL)")
assert con.execute("SELECT a, s FROM t ORDER BY a").fetchall() == [(1, 'x'), (2, None)]
assert "pandas" not in sys.modules, "pandas was imported"
import pandas as pd
import pyarrow as pa
assert pa.array(pd.Categorical(["a", "b", "a"])).type.value_type in (pa.string(), pa.large_string())
assert pa.array(pd.Series([1.0, float("nan")]), from_pandas=True).null_count == 1
assert con.execute("SELECT a, s FROM t ORDER BY a").fetch_df()["a"].tolist() == [1, 2]
con.load_table("t", pd.DataFrame({"a": [3], "s": ["z"]}))
assert con.execute("SELECT COUNT(*) FROM t").fetchall() == [(3,)]
print("ok")
"""


def test_first_query_without_pandas_and_pandas_after():
    done = subprocess.run([sys.executable, "-c", SCRIPT], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0 and done.stdout.strip() == "ok", done.stderr[-3000:]


DEFERRED = """
import sys
import engine
con = engine.connect()
assert con.execute("SELECT 1").fetchall() == [(1,)]
print(sorted(m for m in ("engine.load.delimited", "engine.load.load_data", "pyarrow.csv", "ray", "engine.server",
                         "cluster.ray_runner") if m in sys.modules))
con.execute("CREATE TABLE t (a BIGINT, s VARCHAR(5))")
con.execute("INSERT INTO t VALUES (1, 'x'), (2, 'X')")
assert con.execute("SELECT COUNT(*) FROM t WHERE s = 'x'").fetchall() == [(2,)]    # the weights, built on use
from engine.load import read_delimited, parse_load_data                            # the lazy exports still serve
print(read_delimited.__module__, parse_load_data.__module__)
"""


def test_start_up_defers_what_a_first_query_does_not_use():
    """The file reader (pyarrow's CSV module), Ray and the wire server wait for their first use."""
    done = subprocess.run([sys.executable, "-c", DEFERRED], capture_output=True, text=True, timeout=300)
    assert done.returncode == 0, done.stderr[-3000:]
    assert done.stdout.split("\n")[:2] == ["[]", "engine.load.delimited engine.load.load_data"], done.stdout
