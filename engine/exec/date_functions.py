"""MySQL's date functions, vectorised: EXTRACT, date + INTERVAL (days, months), DATEDIFF, CURRENT_DATE, NOW,
DATE_FORMAT (and MONTHNAME / DAYNAME), STR_TO_DATE,
TIMESTAMPDIFF, UNIX_TIMESTAMP, FROM_UNIXTIME, LAST_DAY, WEEK (mode 0) and SingleStore's DATE_TRUNC.

DATETIME values are Arrow ``timestamp[us]`` without a zone; the session time zone is UTC (Canopy's
``system_time_zone``), so UNIX_TIMESTAMP / FROM_UNIXTIME convert without a zone shift.
"""
from __future__ import annotations

import datetime

import numpy as np
import pyarrow as pa
import pyarrow.compute as pc

from engine.core.expressions import Call
from engine.date_formats import DIRECTIVES, TOKEN, format_pieces
from engine.errors import UnsupportedError
from engine.exec.evaluate import Datum, _is_scalar, function
from engine.exec.string_functions import plain

_MONTHS = pa.array(["January", "February", "March", "April", "May", "June", "July", "August", "September",
                    "October", "November", "December"])
_DAYS = pa.array(["Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday", "Sunday"])
_US_PER = {"MICROSECOND": 1, "SECOND": 10**6, "MINUTE": 60 * 10**6, "HOUR": 3600 * 10**6,
           "DAY": 86400 * 10**6, "WEEK": 7 * 86400 * 10**6}
_MONTHS_PER = {"MONTH": 1, "QUARTER": 3, "YEAR": 12}


def _as_array(d: Datum):
    """(array, was_scalar): the functions below work on arrays; a constant is a one-element array."""
    if isinstance(d, pa.Scalar):
        return pa.array([d.as_py()], d.type), True
    if isinstance(d, pa.ChunkedArray):
        return d.combine_chunks(), False
    return d, False


def _back(result: pa.Array, was_scalar: bool) -> Datum:
    return result[0] if was_scalar else result


def _mod(x, k: int):
    return pc.subtract(x, pc.multiply(pc.divide(x, k), k))


def _padded(x, width: int):
    return pc.utf8_lpad(x.cast(pa.string()), width, "0")


def _week0(d):
    """MySQL's WEEK(d, 0) = strftime's %U: weeks start on Sunday, days before the first Sunday are week 0."""
    day0 = pc.subtract(pc.day_of_year(d), 1)
    weekday = pc.day_of_week(d, count_from_zero=True, week_start=7)        # Sunday = 0
    return pc.divide(pc.add(pc.subtract(day0, weekday), 7), 7)


def _hour12(d):
    return pc.add(_mod(pc.add(pc.hour(d), 11), 12), 1)


# strftime directive (sqlglot's translation of MySQL's) -> vectorised piece
_DIRECTIVES = {
    "%Y": lambda d: _padded(pc.year(d), 4),
    "%y": lambda d: _padded(_mod(pc.year(d), 100), 2),
    "%m": lambda d: _padded(pc.month(d), 2),
    "%-m": lambda d: pc.month(d).cast(pa.string()),
    "%d": lambda d: _padded(pc.day(d), 2),
    "%-d": lambda d: pc.day(d).cast(pa.string()),
    "%H": lambda d: _padded(pc.hour(d), 2),
    "%-H": lambda d: pc.hour(d).cast(pa.string()),
    "%I": lambda d: _padded(_hour12(d), 2),
    "%-I": lambda d: _hour12(d).cast(pa.string()),
    "%M": lambda d: _padded(pc.minute(d), 2),
    "%S": lambda d: _padded(pc.second(d), 2),
    "%f": lambda d: _padded(pc.add(pc.multiply(pc.millisecond(d), 1000), pc.microsecond(d)), 6),
    "%B": lambda d: _MONTHS.take(pc.subtract(pc.month(d), 1)),
    "%b": lambda d: pc.utf8_slice_codeunits(_MONTHS.take(pc.subtract(pc.month(d), 1)), 0, 3),
    "%A": lambda d: _DAYS.take(pc.day_of_week(d)),
    "%a": lambda d: pc.utf8_slice_codeunits(_DAYS.take(pc.day_of_week(d)), 0, 3),
    "%j": lambda d: _padded(pc.day_of_year(d), 3),
    "%p": lambda d: pc.if_else(pc.less(pc.hour(d), 12), "AM", "PM"),
    "%U": lambda d: _padded(_week0(d), 2),
}


@function("date_format")
def _date_format(expr, d, fmt):
    """DATE_FORMAT(d, format) with MySQL's English month and day names; each directive is one
    vectorised column, then all are joined."""
    if not isinstance(fmt, pa.Scalar):
        raise UnsupportedError("DATE_FORMAT with a non-constant format")
    if not fmt.is_valid:
        return pa.scalar(None, pa.string())
    pieces = format_pieces(fmt.as_py())
    arr, was_scalar = _as_array(d)
    columns = [_DIRECTIVES[p](arr) if p in _DIRECTIVES else pa.scalar(p) for p in pieces]
    if not any(isinstance(c, (pa.Array, pa.ChunkedArray)) for c in columns):
        columns.append(pc.if_else(arr.is_valid(), "", pa.scalar(None, pa.string())))
    return _back(pc.binary_join_element_wise(*columns, ""), was_scalar)


@function("str_to_date")
def _str_to_date(expr, s, fmt):
    """STR_TO_DATE: NULL where the string does not match (MySQL: NULL and a warning)."""
    if not isinstance(fmt, pa.Scalar):
        raise UnsupportedError("STR_TO_DATE with a non-constant format")
    if not fmt.is_valid:
        return pa.scalar(None, expr.type.to_arrow())
    f = fmt.as_py()
    for token in TOKEN.findall(f):
        if token.startswith("%") and token not in _PARSEABLE:
            from sqlglot.dialects.mysql import MySQL
            raise UnsupportedError(f"STR_TO_DATE directive {MySQL.INVERSE_TIME_MAPPING.get(token, token)}")
    arr, was_scalar = _as_array(plain(s))
    parsed = pc.strptime(arr, f.replace("%-", "%"), unit="us", error_is_null=True)
    if any(t in ("%d", "%-d") for t in TOKEN.findall(f)):
        parsed = _without_rolled_days(arr, f, parsed)
    return _back(parsed.cast(expr.type.to_arrow()), was_scalar)


_PARSEABLE = {"%Y", "%y", "%m", "%-m", "%d", "%-d", "%H", "%-H", "%I", "%-I", "%M", "%S", "%b", "%B", "%p", "%%"}
# what each directive matches, to find the day of the month in the text (the rest as written)
_MATCHES = {"%Y": r"\d{4}", "%y": r"\d{2}", "%m": r"\d{1,2}", "%-m": r"\d{1,2}", "%H": r"\d{1,2}", "%-H": r"\d{1,2}",
            "%I": r"\d{1,2}", "%-I": r"\d{1,2}", "%M": r"\d{1,2}", "%S": r"\d{1,2}", "%b": r"[A-Za-z]{3}",
            "%B": r"[A-Za-z]+", "%p": r"[AaPp][Mm]", "%%": "%", "%d": r"(?P<day>\d{1,2})", "%-d": r"(?P<day>\d{1,2})"}


def _without_rolled_days(arr, fmt: str, parsed):
    """NULL where the text's day of the month is not the parsed date's: Arrow's strptime rolls
    '2024-02-30' over to March 1, MySQL's STR_TO_DATE answers NULL (a date that does not exist)."""
    import re
    pattern = "".join(_MATCHES.get(t, re.escape(t)) for t in TOKEN.findall(fmt))
    if pattern.count("(?P<day>") != 1:
        return parsed
    day = pc.struct_field(pc.extract_regex(arr, "^" + pattern), "day").cast(pa.int64())
    return pc.if_else(pc.equal(pc.day(parsed), day), parsed, pa.scalar(None, parsed.type))


@function("timestampdiff")
def _timestampdiff(expr, a, b):
    """TIMESTAMPDIFF(unit, a, b) = b - a in whole units, truncated toward zero; months count only
    when b's day and time of day have reached a's (MySQL)."""
    unit = expr.options[0]
    a_us, b_us = a.cast(pa.timestamp("us")).cast(pa.int64()), b.cast(pa.timestamp("us")).cast(pa.int64())
    if unit in _US_PER:
        diff = pc.subtract(b_us, a_us)
        step = _US_PER[unit]
        # integer division toward zero, as MySQL truncates
        return pc.multiply(pc.sign(diff), pc.divide(pc.abs(diff), step))
    a_t, b_t = a.cast(pa.timestamp("us")), b.cast(pa.timestamp("us"))
    months = pc.subtract(pc.add(pc.multiply(pc.year(b_t), 12), pc.month(b_t)),
                         pc.add(pc.multiply(pc.year(a_t), 12), pc.month(a_t)))
    a_rest = pc.subtract(a_us, pc.floor_temporal(a_t, unit="month").cast(pa.int64()))
    b_rest = pc.subtract(b_us, pc.floor_temporal(b_t, unit="month").cast(pa.int64()))
    months = pc.subtract(months, pc.if_else(pc.and_(pc.greater(months, 0), pc.less(b_rest, a_rest)), 1, 0))
    months = pc.add(months, pc.if_else(pc.and_(pc.less(months, 0), pc.greater(b_rest, a_rest)), 1, 0))
    step = _MONTHS_PER[unit]
    return pc.multiply(pc.sign(months), pc.divide(pc.abs(months), step)).cast(pa.int64())


@function("unix_timestamp")
def _unix_timestamp(expr, d):
    """Seconds since 1970-01-01 00:00:00 UTC (whole seconds: the fraction is dropped)."""
    us = d.cast(pa.timestamp("us")).cast(pa.int64())
    return pc.divide(pc.subtract(us, _mod_floor(us, 10**6)), 10**6)


def _mod_floor(x, k: int):
    """x mod k, non-negative also for negative x."""
    m = _mod(x, k)
    return pc.if_else(pc.less(m, 0), pc.add(m, k), m)


@function("from_unixtime")
def _from_unixtime(expr, n):
    """FROM_UNIXTIME(n): the DATETIME n seconds after the epoch; NULL for a negative n (MySQL)."""
    us = pc.multiply_checked(n.cast(pa.int64()), 10**6)
    return pc.if_else(pc.less(us, 0), pa.scalar(None, pa.int64()), us).cast(pa.timestamp("us"))


@function("last_day")
def _last_day(expr, d):
    arr, was_scalar = _as_array(d)
    days = arr.cast(pa.date32()).cast(pa.int32()).to_numpy(zero_copy_only=False).astype("datetime64[D]")
    last = (days.astype("datetime64[M]") + np.timedelta64(1, "M")).astype("datetime64[D]") - np.timedelta64(1, "D")
    result = pa.array(last.astype(np.int64).astype(np.int32), mask=arr.is_null().to_numpy(zero_copy_only=False))
    return _back(result.cast(pa.date32()), was_scalar)


@function("week0")
def _week(expr, d):
    return _week0(d).cast(pa.int64())


@function("date_trunc")
def _date_trunc(expr, d):
    """SingleStore's DATE_TRUNC('unit', d): weeks start on Monday."""
    return pc.floor_temporal(d.cast(pa.timestamp("us")), unit=expr.options[0].lower())


@function("date_add_micros")
def _date_add_micros(expr, d, micros):
    """DATETIME + INTERVAL n HOUR / MINUTE / SECOND / MICROSECOND (the binder made n microseconds)."""
    return pc.add_checked(d.cast(pa.timestamp("us")), micros.cast(pa.int64()).cast(pa.duration("us")))


# EXTRACT's compound units: (part, its factor) each
_COMPOUND = {
    "YEAR_MONTH": (("YEAR", 100), ("MONTH", 1)),
    "DAY_HOUR": (("DAY", 100), ("HOUR", 1)),
    "DAY_MINUTE": (("DAY", 10**4), ("HOUR", 100), ("MINUTE", 1)),
    "DAY_SECOND": (("DAY", 10**6), ("HOUR", 10**4), ("MINUTE", 100), ("SECOND", 1)),
    "HOUR_MINUTE": (("HOUR", 100), ("MINUTE", 1)),
    "HOUR_SECOND": (("HOUR", 10**4), ("MINUTE", 100), ("SECOND", 1)),
    "MINUTE_SECOND": (("MINUTE", 100), ("SECOND", 1)),
}


# --- dates ----------------------------------------------------------------------------------------
@function("extract")
def _extract(expr, d):
    unit = expr.options[0]
    if unit in _COMPOUND:       # YEAR_MONTH, DAY_HOUR, ...: the parts' digits side by side (202001)
        value = None
        for part, factor in _COMPOUND[unit]:
            piece = pc.multiply(_extract(Call("extract", expr.args, expr.type, (part,)), d), factor)
            value = piece if value is None else pc.add(value, piece)
        return value
    fn = {"YEAR": pc.year, "MONTH": pc.month, "DAY": pc.day, "QUARTER": pc.quarter,
          "HOUR": pc.hour, "MINUTE": pc.minute, "SECOND": pc.second, "WEEK": pc.week,
          "DAYOFWEEK": pc.day_of_week, "DAYOFYEAR": pc.day_of_year,
          "MICROSECOND": lambda d: pc.add(pc.multiply(pc.millisecond(d), 1000), pc.microsecond(d))}.get(unit)
    if fn is None:
        raise UnsupportedError(f"EXTRACT({unit} ...)")
    result = fn(d)
    if unit == "DAYOFWEEK":   # MySQL: 1 = Sunday
        result = pc.add(pc.day_of_week(d, count_from_zero=False, week_start=7), 0)
    return result.cast(pa.int64())


@function("date_add_days")
def _date_add_days(expr, d, days):
    if pa.types.is_timestamp(d.type):
        return pc.add(d, pc.multiply(days.cast(pa.int64()), 86_400_000_000).cast(pa.duration("us")))
    as_int = d.cast(pa.int32())
    return pc.add_checked(as_int, days.cast(pa.int32())).cast(pa.date32())


@function("date_add_months")
def _date_add_months(expr, d, months):
    """Calendar month arithmetic; the day is clamped to the target month's last day (MySQL)."""
    if not _is_scalar(months):
        raise UnsupportedError("INTERVAL with a non-constant number of months")
    n = months.as_py()
    if n is None:
        return pa.scalar(None, d.type)
    is_scalar = _is_scalar(d)
    arr = pa.array([d.as_py()], d.type) if is_scalar else d
    if isinstance(arr, pa.ChunkedArray):
        arr = arr.combine_chunks()
    date_part = arr.cast(pa.date32()) if pa.types.is_timestamp(arr.type) else arr
    days = date_part.cast(pa.int32()).to_numpy(zero_copy_only=False).astype("datetime64[D]")
    mask = arr.is_null().to_numpy(zero_copy_only=False)
    months_since = days.astype("datetime64[M]")
    day_of_month = (days - months_since).astype(np.int64)
    target_month = months_since + np.timedelta64(n, "M")
    month_length = ((target_month + np.timedelta64(1, "M")).astype("datetime64[D]")
                    - target_month.astype("datetime64[D]")).astype(np.int64)
    result_days = target_month.astype("datetime64[D]") + np.minimum(day_of_month, month_length - 1)
    result = pa.array(result_days.astype(np.int64).astype(np.int32), mask=mask).cast(pa.date32())
    if pa.types.is_timestamp(arr.type):
        time_of_day = pc.subtract(arr.cast(pa.int64()), date_part.cast(pa.timestamp("us")).cast(pa.int64()))
        result = pc.add(result.cast(pa.timestamp("us")).cast(pa.int64()), time_of_day).cast(arr.type)
    return result[0] if is_scalar else result


@function("datediff")
def _datediff(expr, a, b):
    return pc.subtract(a.cast(pa.date32()).cast(pa.int32()), b.cast(pa.date32()).cast(pa.int32())).cast(pa.int64())


@function("current_date")
def _current_date(expr):
    return pa.scalar(_utc_now().date(), pa.date32())


@function("now")
def _now(expr):
    return pa.scalar(_utc_now().replace(microsecond=0), pa.timestamp("us"))


def _utc_now() -> datetime.datetime:
    """The clock in Canopy's session time zone, UTC (``system_time_zone``; SET time_zone accepts only UTC),
    whatever the host's TZ."""
    return datetime.datetime.now(datetime.timezone.utc).replace(tzinfo=None)


# --- MySQL's week numbering (WEEK / YEARWEEK / WEEKOFYEAR, DATE_FORMAT's %u %V %v %X %x) ------------
_MONDAY_FIRST, _WEEK_YEAR, _FIRST_WEEKDAY = 1, 2, 4


def _behaviour(mode: int) -> int:
    """MySQL's week_mode(): the mode's three flags, the 'first weekday' one flipped for Sunday weeks."""
    flags = mode & 7
    if not flags & _MONDAY_FIRST:
        flags ^= _FIRST_WEEKDAY
    return flags


def _days_in_year(year: np.ndarray) -> np.ndarray:
    leap = ((year % 4 == 0) & (year % 100 != 0)) | (year % 400 == 0)
    return np.where(leap, 366, 365)


def week_and_year(d, mode: int, year_of_week: bool):
    """(week, year, validity) of each date as MySQL's calc_week() numbers them, vectorised over numpy:
    ``mode`` is WEEK's 0-7; ``year_of_week`` asks for YEARWEEK's reading (weeks 1-53, a week at the turn
    of the year counted in the year holding the most of it, per the mode)."""
    arr, _ = _as_array(d)
    valid = np.asarray(arr.is_valid())
    days = np.asarray(arr.cast(pa.date32()).cast(pa.int32()).fill_null(0), np.int64)
    flags = _behaviour(mode) | (_WEEK_YEAR if year_of_week else 0)
    monday_first, first_weekday = flags & _MONDAY_FIRST, flags & _FIRST_WEEKDAY
    years = days.astype("datetime64[D]").astype("datetime64[Y]")
    year = years.astype(np.int64) + 1970
    first_day = years.astype("datetime64[D]").astype(np.int64)
    daynr, first_daynr = days + 719528, first_day + 719528        # MySQL's day numbers (calc_daynr)
    weekday = (first_daynr + 5 + (0 if monday_first else 1)) % 7   # the year's first day (calc_weekday)

    def late(weekday):
        """Whether the year's first days (before ``weekday``'s week starts) are not its week 1."""
        return (weekday != 0) if first_weekday else (weekday >= 4)

    early = days - first_day <= 6 - weekday                 # January, before the first full week starts
    week_zero = early & late(weekday) & (not flags & _WEEK_YEAR)
    moved = early & ~week_zero                              # counted in the previous year's weeks
    week_year = moved | bool(flags & _WEEK_YEAR)
    year = np.where(moved, year - 1, year)
    length = _days_in_year(year)
    first_daynr = np.where(moved, first_daynr - length, first_daynr)
    weekday = np.where(moved, (weekday + 53 * 7 - length) % 7, weekday)
    offset = np.where(late(weekday), daynr - (first_daynr + 7 - weekday), daynr - (first_daynr - weekday))
    week = offset // 7 + 1
    next_weekday = (weekday + _days_in_year(year)) % 7      # the following year's first day
    rolls = week_year & (offset >= 52 * 7) & ~late(next_weekday)
    week = np.where(rolls, 1, np.where(week_zero, 0, week))
    year = np.where(rolls, year + 1, year)
    return week, year, valid


@function("week")
def _week_mode(expr, d):
    week, _, valid = week_and_year(d, expr.options[0], False)
    return _back(pa.array(week, mask=~valid), isinstance(d, pa.Scalar))


@function("yearweek")
def _yearweek(expr, d):
    week, year, valid = week_and_year(d, expr.options[0], True)
    return _back(pa.array(year * 100 + week, mask=~valid), isinstance(d, pa.Scalar))


@function("makedate")
def _makedate(expr, year, day_of_year):
    """MAKEDATE(year, n): day n of the year (NULL for n < 1, or past year 9999)."""
    y, was_scalar = _as_array(year.cast(pa.int64()))
    n, _ = _as_array(day_of_year.cast(pa.int64()))
    valid = np.asarray(pc.and_(y.is_valid(), n.is_valid())) if len(y) == len(n) else \
        np.asarray(y.is_valid()) & np.asarray(n.is_valid())
    yy, nn = np.asarray(y.fill_null(2000)), np.asarray(n.fill_null(1))
    yy = np.where(yy < 70, yy + 2000, np.where(yy < 100, yy + 1900, yy))      # MySQL's two-digit years
    inside = valid & (nn >= 1) & (nn <= 366 * 10_000) & (yy >= 1) & (yy <= 9999)
    start = (np.clip(yy, 1, 9999) - 1970).astype("datetime64[Y]").astype("datetime64[D]").astype(np.int64)
    days = start + np.where(inside, nn - 1, 0)
    inside &= days <= _LAST_DAY
    result = pa.array(np.where(inside, days, 0).astype(np.int32), mask=~inside).cast(pa.date32())
    return _back(result, was_scalar and isinstance(day_of_year, pa.Scalar))


_LAST_DAY = 2932896         # 9999-12-31 as days since 1970-01-01
_FIRST_MYSQL_DAY = 366      # FROM_DAYS(n) below this is MySQL's '0000-00-00', which Canopy holds as NULL


@function("from_days")
def _from_days(expr, n):
    arr, was_scalar = _as_array(n.cast(pa.int64()))
    values = np.asarray(arr.fill_null(0))
    inside = np.asarray(arr.is_valid()) & (values >= _FIRST_MYSQL_DAY) & (values - 719528 <= _LAST_DAY)
    days = np.where(inside, values - 719528, 0).astype(np.int32)
    return _back(pa.array(days, mask=~inside).cast(pa.date32()), was_scalar)


@function("to_seconds")
def _to_seconds(expr, d):
    """TO_SECONDS(d): seconds since MySQL's year 0 (TO_DAYS(d) * 86400 + the time of day)."""
    seconds = pc.divide(d.cast(pa.timestamp("us")).cast(pa.int64()), 1_000_000)
    return pc.add(seconds, 719528 * 86400)


@function("weekday")
def _weekday(expr, d):
    return pc.day_of_week(d).cast(pa.int64())           # Monday = 0


def _day_suffixed(d):
    """%D: the day of the month with its English suffix (1st, 2nd, 3rd, 4th, 11th, 21st ...)."""
    day = pc.day(d)
    last, tens = _mod(day, 10), pc.divide(day, 10)
    suffix = pc.if_else(pc.equal(tens, 1), "th",
                        pc.if_else(pc.equal(last, 1), "st",
                                   pc.if_else(pc.equal(last, 2), "nd", pc.if_else(pc.equal(last, 3), "rd", "th"))))
    return pc.binary_join_element_wise(day.cast(pa.string()), suffix, "")


def _week_piece(mode: int, year_of_week: bool, width: int):
    def piece(d):
        week, year, valid = week_and_year(d, mode, year_of_week)
        value = pa.array(year if width == 4 else week, mask=~valid)
        return _padded(value, width)
    return piece


# DATE_FORMAT directives past strftime's (sqlglot's names for MySQL's %D %u %V %v %X %x %w)
_DIRECTIVES.update({
    "%D": _day_suffixed,
    "%W": _week_piece(1, False, 2),         # MySQL %u: WEEK(d, 1)
    "%V": _week_piece(2, True, 2),          # WEEK(d, 2)
    "%v": _week_piece(3, True, 2),          # WEEK(d, 3), the ISO week
    "%X": _week_piece(2, True, 4),          # the year of %V's week
    "%G": _week_piece(3, True, 4),          # MySQL %x: the year of %v's week
    "%w": lambda d: pc.day_of_week(d, count_from_zero=True, week_start=7).cast(pa.string()),   # Sunday = 0
})
assert set(_DIRECTIVES) == DIRECTIVES, "engine.date_formats.DIRECTIVES names what this table implements"
