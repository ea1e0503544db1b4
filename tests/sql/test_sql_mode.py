"""``SET sql_mode`` and ``SET time_zone`` as clients send them on connect: the values Canopy behaves as
are accepted and reported back, the others refused naming the mode or zone; the clock is UTC whatever the
host's TZ. (tests/sql/statement_effects.py has the cases MariaDB checks too, division by 0 among them.)"""
from __future__ import annotations

import datetime
import os
import re
import time

import pytest

import engine
from engine import errors


@pytest.fixture
def con():
    with engine.connect() as connection:
        yield connection


def value(con, sql):
    return con.execute(sql).fetchall()[0][0]


@pytest.mark.parametrize("mode, shown", [
    ("STRICT_TRANS_TABLES", "STRICT_TRANS_TABLES"),
    # Django, Laravel (strict) and MariaDB's default, as they send them
    ("STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION",
     "STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION"),
    ("ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,"
     "NO_ENGINE_SUBSTITUTION", "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
                               "ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"),
    ("traditional", "STRICT_TRANS_TABLES,STRICT_ALL_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,"
                    "ERROR_FOR_DIVISION_BY_ZERO,TRADITIONAL,NO_ENGINE_SUBSTITUTION"),     # MySQL 8.0's spelling
])
def test_modes_canopy_follows_are_accepted_and_reported(con, mode, shown):
    con.execute(f"SET sql_mode = '{mode}'")
    assert value(con, "SELECT @@sql_mode") == shown
    assert ("sql_mode", shown) in con.execute("SHOW VARIABLES LIKE 'sql_mode'").fetchall()


@pytest.mark.parametrize("mode, named", [
    ("ANSI_QUOTES,STRICT_TRANS_TABLES", "ANSI_QUOTES"), ("STRICT_TRANS_TABLES,PIPES_AS_CONCAT", "PIPES_AS_CONCAT"),
    ("STRICT_ALL_TABLES,NO_UNSIGNED_SUBTRACTION", "NO_UNSIGNED_SUBTRACTION"), ("ANSI", "ANSI"),
    ("NO_BACKSLASH_ESCAPES,STRICT_TRANS_TABLES", "NO_BACKSLASH_ESCAPES"),
    ("", "without STRICT_TRANS_TABLES"), ("NO_ENGINE_SUBSTITUTION", "without STRICT_TRANS_TABLES"),
])
def test_modes_canopy_does_not_follow_are_refused_by_name(con, mode, named):
    before = value(con, "SELECT @@sql_mode")
    with pytest.raises(errors.NotSupportedError, match=named):
        con.execute(f"SET sql_mode = '{mode}'")
    assert value(con, "SELECT @@sql_mode") == before


def test_unknown_mode_is_mysqls_wrong_value_error(con):
    with pytest.raises(errors.ProgrammingError, match="can't be set to the value of 'NO_SUCH_MODE'"):
        con.execute("SET sql_mode = 'STRICT_TRANS_TABLES,NO_SUCH_MODE'")


@pytest.mark.parametrize("zone, shown", [("+00:00", "+00:00"), ("UTC", "UTC"), ("utc", "UTC"),
                                         ("SYSTEM", "SYSTEM"), ("+0:00", "+00:00"), ("-00:00", "-00:00")])
def test_utc_zones_are_accepted(con, zone, shown):
    con.execute(f"SET time_zone = '{zone}'")
    assert value(con, "SELECT @@time_zone") == shown
    con.execute("SET time_zone = DEFAULT")
    assert value(con, "SELECT @@time_zone") == "SYSTEM"


@pytest.mark.parametrize("zone", ["+02:00", "-05:30", "Europe/Paris", "America/New_York"])
def test_other_zones_are_refused_by_name(con, zone):
    with pytest.raises(errors.NotSupportedError, match=re.escape(f"time_zone = '{zone}'")):
        con.execute(f"SET time_zone = '{zone}'")


def test_the_clock_is_utc_whatever_the_host_zone(con, monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Tokyo")         # nine hours from UTC, no daylight saving
    time.tzset()
    try:
        now, today, epoch = con.execute("SELECT NOW(), CURDATE(), UNIX_TIMESTAMP()").fetchall()[0]
        utc = datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)
        assert abs((utc - now).total_seconds()) < 60
        assert today in (utc.date(), (utc - datetime.timedelta(minutes=1)).date())
        assert abs(epoch - time.time()) < 60
    finally:
        monkeypatch.delenv("TZ")
        time.tzset()
    assert "TZ" not in os.environ or os.environ["TZ"] != "Asia/Tokyo"
