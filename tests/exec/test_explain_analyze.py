"""EXPLAIN ANALYZE / PROFILE: the query runs and every operator line shows actual rows beside the estimate."""
import re

import pytest

from engine.workloads import tpch

ACTUAL = (r"\(actual ([\d,]+) rows, \d+ batches, [\d.]+ ms, \d+ tasks(, held [\d.,]+ (B|KiB|MiB))?"
          r"(, bloom filter kept [\d,]+ of [\d,]+ rows)?(, read [\d,]+ segments, [\d,]+ rows from storage)?\)")
# over a transport (the Ray runner: leaves are processes) an exchange also says what went over its links
MOVED = (r"\(actual ([\d,]+) rows, [\d.,]+ (B|KiB|MiB) moved"
         r"(, [\d.,]+ (B|KiB|MiB) sent over \d+ links, \d+ of \d+ batches LZ4, busiest link [\d,]+ rows [\d.,]+ (B|KiB|MiB))?\)")


@pytest.mark.parametrize("name", ["q03", "q18"])
def test_explain_analyze_tpch(tpch_canopy_sf001, name):
    query = tpch.query(name)
    expected_rows = len(tpch_canopy_sf001.execute(query).fetchall())
    lines = [r[0] for r in tpch_canopy_sf001.execute("EXPLAIN ANALYZE " + query).fetchall()]
    *plan, total = lines
    assert re.fullmatch(r"Execution: [\d.]+ ms .*", total)
    for line in plan:
        pattern = MOVED if line.lstrip().startswith("Exchange") else ACTUAL
        assert re.search(r"\(est\. [\d,]+ rows: \w+( \w+)?\)  " + pattern + "$", line), line
    final = re.search(ACTUAL, plan[0])
    assert int(final.group(1).replace(",", "")) == expected_rows
    assert any("held" in line for line in plan)          # a hash join or sort collected its input
    scans = [line for line in plan if line.lstrip().startswith("Scan")]
    assert scans and all("rows from storage" in line for line in scans if "never ran" not in line)
    exchanges = [line for line in plan if line.lstrip().startswith("Exchange")]
    assert exchanges and all(int(re.search(MOVED, x).group(1).replace(",", "")) >= 0 for x in exchanges)


def test_profile_is_explain_analyze(tpch_canopy_sf001):
    lines = [r[0] for r in tpch_canopy_sf001.execute("PROFILE SELECT COUNT(*) FROM nation").fetchall()]
    assert re.search(r"\(actual 1 rows,", lines[0]), lines[0]
    scan = next(line for line in lines if "Scan" in line)
    assert re.search(r"\(actual 25 rows,", scan) or "actual 0 rows" not in scan, scan
    assert "Execution:" in lines[-1]
