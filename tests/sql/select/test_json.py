"""JSON columns and functions (engine/exec/json_functions.py, engine/plan/bind_json.py). MariaDB's answers
for the functions it shares are in tests/sql/test_function_library.py; here the MySQL / SingleStore forms
MariaDB lacks (``->``, ``->>``, JSON_EXTRACT_<type>), JSON built from JSON, and the checks on writes —
against Python's own reading of the documents."""
from __future__ import annotations

import json

import pytest

import engine

DOCS = ['{"a": {"b": [1, 2.50, {"c": "x"}]}, "n": 7, "s": "it\\"s", "t": true, "z": null}',
        '[1, [2, 3], {"k": "v"}]', '"plain"', '{"n": "12", "f": 1.5e2, "big": 123456789012}', '{}']


@pytest.fixture(scope="module")
def cur():
    connection = engine.connect()
    cursor = connection.cursor()
    cursor.execute("CREATE TABLE docs (id INT, j JSON)")
    cursor.executemany("INSERT INTO docs VALUES (%s, %s)", list(enumerate(DOCS)) + [(len(DOCS), None)])
    yield cursor
    connection.close()


def rows(cursor, sql):
    cursor.execute(sql)
    return cursor.fetchall()


@pytest.mark.parametrize("path", ["$.a", "$.a.b", "$.a.b[2]", "$.a.b[2].c", "$.n", "$.s", "$.t", "$.z", "$[1]",
                                  "$[1][0]", "$[2].k", "$.missing", "$"])
def test_arrows_are_json_extract_and_unquote(cur, path):
    got = rows(cur, f"SELECT id, j->'{path}', j->>'{path}', JSON_EXTRACT(j, '{path}'), "
                    f"JSON_UNQUOTE(JSON_EXTRACT(j, '{path}')) FROM docs ORDER BY id")
    for doc_id, arrow, unquoted, extracted, unquoted_extract in got:
        assert arrow == extracted and unquoted == unquoted_extract
        if doc_id == len(DOCS):
            assert arrow is None
            continue
        found = _follow(json.loads(DOCS[doc_id]), path)
        if found is _NONE:
            assert arrow is None
        else:
            assert json.loads(arrow) == found
            assert unquoted == (found if isinstance(found, str) else arrow)


def test_written_as_mysql_writes_json(cur):
    assert rows(cur, "SELECT j->'$.a' FROM docs WHERE id = 0") == [('{"b": [1, 2.50, {"c": "x"}]}',)]
    # a JSON value inside JSON_OBJECT / JSON_ARRAY is embedded, text is quoted
    assert rows(cur, "SELECT JSON_OBJECT('inner', j->'$.a.b', 'text', j->>'$.s', 'n', j->'$.n'), "
                     "JSON_ARRAY(j->'$.t', 'x', 1.5, TRUE) FROM docs WHERE id = 0") == \
        [('{"inner": [1, 2.50, {"c": "x"}], "text": "it\\"s", "n": 7}', '[true, "x", 1.5, true]')]


def test_singlestore_typed_extraction(cur):
    got = rows(cur, "SELECT id, JSON_EXTRACT_STRING(j, 'n'), JSON_EXTRACT_BIGINT(j, 'n'), "
                    "JSON_EXTRACT_DOUBLE(j, 'f'), JSON_EXTRACT_JSON(j, 'a', 'b', 2), JSON_EXTRACT_STRING(j, 1, 0), "
                    "JSON_EXTRACT_BIGINT(j, 'big') FROM docs ORDER BY id")
    assert got[0] == (0, "7", 7, None, '{"c": "x"}', None, None)
    assert got[1] == (1, None, None, None, None, "2", None)
    assert got[3] == (3, "12", 12, 150.0, None, None, 123456789012)
    assert got[-1] == (len(DOCS), None, None, None, None, None, None)


def test_writes_are_checked(cur):
    with pytest.raises(engine.DataError, match=r"Invalid JSON text.*column 'docs.j' at row 2"):
        cur.execute("INSERT INTO docs VALUES (10, '[1]'), (11, '{\"a\": }')")
    with pytest.raises(engine.DataError, match="Invalid JSON text"):
        cur.execute("UPDATE docs SET j = 'nope' WHERE id = 0")
    with pytest.raises(engine.DataError, match="Invalid JSON text"):
        cur.execute("INSERT INTO docs VALUES (12, 'NaN')")
    assert rows(cur, "SELECT COUNT(*) FROM docs") == [(len(DOCS) + 1,)]
    assert rows(cur, "SELECT j FROM docs WHERE id = 0") == [(DOCS[0],)]
    assert rows(cur, "SELECT CAST('[1,2]' AS JSON), CAST(2.5 AS JSON), JSON_VALID('{'), JSON_TYPE(CAST(1 AS JSON))") \
        == [("[1,2]", "2.5", False, "INTEGER")]


def test_load_data_checks_json(tmp_path):
    (tmp_path / "docs.tsv").write_text('20\t{"ok": 1}\n21\t{broken\n')
    with engine.connect(load_dir=str(tmp_path)) as connection:
        cursor = connection.cursor()
        cursor.execute("CREATE TABLE loaded (id INT, j JSON)")
        with pytest.raises(engine.DataError, match="line 2.*Invalid JSON text"):
            cursor.execute(f"LOAD DATA INFILE '{tmp_path / 'docs.tsv'}' INTO TABLE loaded")
        assert rows(cursor, "SELECT COUNT(*) FROM loaded") == [(0,)]


def test_paths_refused_or_rejected(cur):
    with pytest.raises(engine.NotSupportedError, match="wildcards"):
        cur.execute("SELECT j->'$.a[*]' FROM docs")
    with pytest.raises(engine.DataError, match="Invalid JSON path"):
        cur.execute("SELECT JSON_EXTRACT(j, '$.') FROM docs")


_NONE = object()


def _follow(value, path: str):
    import re
    for member, index in re.findall(r'\.([A-Za-z_]\w*)|\[(\d+)\]', path[1:]):
        if member:
            if not isinstance(value, dict) or member not in value:
                return _NONE
            value = value[member]
        else:
            i = int(index)
            if isinstance(value, list):
                if i >= len(value):
                    return _NONE
                value = value[i]
            elif i:
                return _NONE
    return value
