"""Collations: which ones Canopy has, how an expression's collation is derived, and the collation keys
that make every comparison a binary one.

Canopy has MySQL's / SingleStore's default ``utf8mb4_general_ci`` (case- and accent-insensitive by the
weights of kernels/general_ci_weights.py) and ``utf8mb4_bin`` (exact), both PAD SPACE (trailing spaces
do not count, as in MariaDB), and their ``utf8`` (utf8mb3) names; and MySQL 8's ``utf8mb4_0900_ai_ci``
(accent- and case-insensitive by UCA primary weights, kernels/uca_ai_ci_weights.py),
``utf8mb4_0900_as_cs`` (accent- and case-sensitive, kernels/uca_as_cs_weights.py) and
``utf8mb4_0900_bin``, all NO PAD. A string column or expression without
a declared collation has the server's, ``utf8mb4_general_ci``.

The binder turns every comparison of strings into a comparison of their *collation keys*
(``collation_key(x)``, kernels/collation.pyx): equal keys are equal strings under the collation, and
keys order as the strings do. Equality, IN, LIKE, joins, GROUP BY, DISTINCT, ORDER BY, MIN / MAX and set
operations then run on the keys with the binary kernels unchanged. A key of a dictionary-encoded column
is a key of its dictionary only (the codes are kept), see ``engine.exec.evaluate``.

Which collation a comparison uses follows MySQL's coercibility: an explicit ``COLLATE`` / ``BINARY``
beats a column's, which beats a literal's or parameter's; between equals a ``_bin`` collation beats a
``_ci`` one; two different explicit collations are an error ("Illegal mix of collations").
"""
from __future__ import annotations

from contextvars import ContextVar
from dataclasses import dataclass
from typing import Callable, Optional

from engine.errors import BindError, UnsupportedError

GENERAL_CI = "utf8mb4_general_ci"
BIN = "utf8mb4_bin"
DEFAULT = GENERAL_CI            # collation_server / collation_database / a string column's default


@dataclass(frozen=True)
class Collation:
    name: str
    charset: str
    id: int                     # MySQL's collation id (SHOW COLLATION, the wire protocol)
    binary: bool                # exact comparison (PAD SPACE: only trailing spaces ignored)
    is_default: bool            # the character set's default collation
    pad_space: bool = True      # PAD SPACE ('a ' = 'a'); False: NO PAD, as MySQL 8's 0900 collations
    weighing: str = "general"   # the keys: general_ci's weights, "uca" (kernels/uca_ai_ci_weights.py),
    #                             "uca_cs" (and kernels/uca_as_cs_weights.py), "binary"


COLLATIONS = {c.name: c for c in (
    Collation("utf8mb4_general_ci", "utf8mb4", 45, False, True),
    Collation("utf8mb4_bin", "utf8mb4", 46, True, False, weighing="binary"),
    Collation("utf8_general_ci", "utf8", 33, False, True),
    Collation("utf8_bin", "utf8", 83, True, False, weighing="binary"),
    # MySQL 8's default (and mysql-connector-python's): accent- and case-insensitive by UCA primary
    # weights, NO PAD; where Canopy's keys differ from MySQL's, see kernels/uca_ai_ci_weights.py
    Collation("utf8mb4_0900_ai_ci", "utf8mb4", 255, False, False, pad_space=False, weighing="uca"),
    Collation("utf8mb4_0900_bin", "utf8mb4", 309, True, False, pad_space=False, weighing="binary"),
    # accent- and case-sensitive: UCA primary order, then the characters' full weights
    # (kernels/uca_as_cs_weights.py), NO PAD
    Collation("utf8mb4_0900_as_cs", "utf8mb4", 278, False, False, pad_space=False, weighing="uca_cs"),
)}
BY_ID = {c.id: c.name for c in COLLATIONS.values()}
_ALIASES = {"utf8mb3_general_ci": "utf8_general_ci", "utf8mb3_bin": "utf8_bin"}
CHARSETS = {"utf8mb4": "utf8mb4_general_ci", "utf8": "utf8_general_ci", "utf8mb3": "utf8_general_ci"}


def resolve(name: str, charset: Optional[str] = None) -> str:
    """The canonical name of collation ``name`` (case-insensitive), checked against ``charset`` when
    given; unknown or unsupported collations are refused by name."""
    key = name.lower().strip("`'\"")
    key = _ALIASES.get(key, key)
    if key not in COLLATIONS:
        raise UnsupportedError(f"collation '{name}' is not supported: Canopy has "
                               + ", ".join(sorted(COLLATIONS)))
    if charset is not None:
        cs = charset.lower().strip("`'\"")
        if cs not in CHARSETS:
            raise UnsupportedError(f"character set '{charset}' is not supported (Canopy speaks utf8mb4)")
        if COLLATIONS[key].charset != {"utf8mb3": "utf8"}.get(cs, cs):
            raise BindError(f"COLLATION '{name}' is not valid for CHARACTER SET '{charset}'")
    return key


def of_charset(charset: str) -> str:
    """The default collation of a character set."""
    cs = charset.lower().strip("`'\"")
    if cs not in CHARSETS:
        raise UnsupportedError(f"character set '{charset}' is not supported (Canopy speaks utf8mb4)")
    return CHARSETS[cs]


def is_binary(name: Optional[str]) -> bool:
    return COLLATIONS[name or DEFAULT].binary


def pads(name: Optional[str]) -> bool:
    """Whether trailing spaces are ignored in comparisons (PAD SPACE)."""
    return COLLATIONS[name or DEFAULT].pad_space


def weighing(name: Optional[str]) -> str:
    return COLLATIONS[name or DEFAULT].weighing


def charset_of(name: Optional[str]) -> str:
    return COLLATIONS[name or DEFAULT].charset


# Coercibility (MySQL's COERCIBILITY()): lower wins.
EXPLICIT, IMPLICIT, COERCIBLE = 0, 2, 4


def combine(a: tuple[str, int], b: tuple[str, int], where: str) -> tuple[str, int]:
    """The collation (name, coercibility) of an operation on operands collated ``a`` and ``b``."""
    if a[1] != b[1]:
        return a if a[1] < b[1] else b
    if a[0] == b[0] or (COLLATIONS[a[0]].weighing, COLLATIONS[a[0]].pad_space) == \
            (COLLATIONS[b[0]].weighing, COLLATIONS[b[0]].pad_space):
        return a             # the same comparison under two names (utf8mb4_general_ci, utf8_general_ci)
    if a[1] == EXPLICIT or is_binary(a[0]) == is_binary(b[0]):
        # MySQL's error 1267 (general_ci beside 0900_ai_ci, two explicit collations)
        level = {EXPLICIT: "EXPLICIT", IMPLICIT: "IMPLICIT"}.get(a[1], "COERCIBLE")
        raise BindError(f"Illegal mix of collations ({a[0]},{level}) and ({b[0]},{level}) for {where}")
    return a if is_binary(a[0]) else b      # MySQL: between a _bin and a _ci collation, _bin


# The session's collation_connection (SET NAMES ... COLLATE, SET collation_connection): the collation
# of string literals (coercible, so a column's collation still wins over it, as in MySQL). The session
# sets a lookup of its current value for the duration of each call (a SET earlier in the same call
# counts), so the binder needs no session.
connection_lookup: ContextVar[Optional[Callable[[], str]]] = ContextVar("collation_connection", default=None)


def connection() -> Optional[str]:
    """The collation of string literals now: the session's collation_connection, or None for the
    default (``utf8mb4_general_ci``, which a type without a collation already means)."""
    lookup = connection_lookup.get()
    name = resolve(lookup()) if lookup is not None else DEFAULT
    return None if name == DEFAULT else name
