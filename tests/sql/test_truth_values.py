"""MySQL reads any value as a truth value: text, DECIMAL and DOUBLE under IS TRUE, NOT, AND / OR,
WHERE and HAVING are compared with 0 (text read as a number, with MySQL's warning); and TO_DAYS,
which sqlglot writes as a DATEDIFF from the year 0 outside the DATE range. Checked against Python's
own reading of the same rows (``float(prefix) != 0``; ``date.toordinal() + 365``)."""
import datetime
import re

import pytest

import engine

TEXTS = ["a", "2", "0", "0.0", "1x", " 3", "-0", "0.5", None, "", "abc1"]
DECIMALS = ["0.50", "0.00", "-1.25", None, "0.01", "3.00", None, "0.00", "9.99", "-0.00", "1.00"]


def _number(text):
    """MySQL's numeric reading of text: its longest numeric prefix, 0 when there is none."""
    match = re.match(r"\s*[-+]?(\d+\.?\d*|\.\d+)([eE][-+]?\d+)?", text)
    return float(match.group(0)) if match else 0.0


def _truth(value):
    if value is None:
        return None
    return (_number(value) if isinstance(value, str) else float(value)) != 0


@pytest.fixture(scope="module")
def con():
    c = engine.connect()
    c.execute("CREATE TABLE tv (id INT, s VARCHAR(10), d DECIMAL(5, 2), g INT)")
    rows = ", ".join(f"({i}, {'NULL' if s is None else repr(s)}, {'NULL' if d is None else d}, {i % 3})"
                     for i, (s, d) in enumerate(zip(TEXTS, DECIMALS)))
    c.execute(f"INSERT INTO tv VALUES {rows}")
    yield c
    c.close()


def test_is_true_and_not_read_text_and_decimals_as_numbers(con):
    got = con.execute("SELECT s IS TRUE, s IS NOT TRUE, NOT s, d IS FALSE, NOT d FROM tv ORDER BY id").fetchall()
    want = []
    for s, d in zip(TEXTS, DECIMALS):
        ts, td = _truth(s), _truth(d)
        want.append((ts is True, ts is not True, None if ts is None else not ts, td is False,
                     None if td is None else not td))
    assert [tuple(None if v is None else bool(v) for v in row) for row in got] == want


def test_and_or_of_text_and_decimals_follow_three_valued_logic(con):
    got = con.execute("SELECT s AND d, s OR d FROM tv ORDER BY id").fetchall()
    want = []
    for s, d in zip(TEXTS, DECIMALS):
        ts, td = _truth(s), _truth(d)
        conj = False if False in (ts, td) else (None if None in (ts, td) else True)
        disj = True if True in (ts, td) else (None if None in (ts, td) else False)
        want.append((conj, disj))
    assert [tuple(None if v is None else bool(v) for v in row) for row in got] == want


def test_where_and_having_take_non_boolean_conditions(con):
    ids = [r[0] for r in con.execute("SELECT id FROM tv WHERE s ORDER BY id").fetchall()]
    assert ids == [i for i, s in enumerate(TEXTS) if _truth(s)]
    ids = [r[0] for r in con.execute("SELECT id FROM tv WHERE d OR s ORDER BY id").fetchall()]
    assert ids == [i for i, (s, d) in enumerate(zip(TEXTS, DECIMALS)) if _truth(s) or _truth(d)]
    groups = [r[0] for r in con.execute("SELECT g FROM tv GROUP BY g HAVING SUM(d) ORDER BY g").fetchall()]
    sums = {}
    for i, d in enumerate(DECIMALS):
        if d is not None:
            sums[i % 3] = sums.get(i % 3, 0) + float(d)
    assert groups == sorted(g for g, total in sums.items() if round(total, 2) != 0)


def test_text_read_as_a_number_warns(con):
    con.execute("SELECT 'abc' IS TRUE").fetchall()
    warnings = con.execute("SHOW WARNINGS").fetchall()
    assert any(w[1] in (1292, "1292") and "'abc'" in w[2] for w in warnings)


def test_to_days_counts_days_from_year_zero():
    c = engine.connect()
    days = [datetime.date(1970, 1, 1), datetime.date(2024, 1, 1), datetime.date(1999, 12, 31),
            datetime.date(1, 1, 1), datetime.date(9999, 12, 31)]
    c.execute("CREATE TABLE dd (id INT, d DATE)")
    c.execute("INSERT INTO dd VALUES " + ", ".join(f"({i}, '{d}')" for i, d in enumerate(days)) + ", (9, NULL)")
    got = c.execute("SELECT TO_DAYS(d) FROM dd ORDER BY id").fetchall()
    assert [r[0] for r in got] == [d.toordinal() + 365 for d in days] + [None]
    assert c.execute("SELECT TO_DAYS('2024-01-01'), TO_DAYS('2024-01-01 23:59:59')").fetchall() == [(739251, 739251)]
    c.close()
