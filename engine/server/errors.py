"""Engine errors as MySQL error packets: one table from error class to (error code, SQLSTATE).

Clients branch on MySQL's codes (PyMySQL and mysqlclient pick their PEP 249 class from them, ORMs
retry on some), so each engine error gets the code MySQL gives the same mistake. The message is the
engine's own (it already says what and where); an unexpected Python exception becomes 1105 with its
type named and no traceback.
"""
from __future__ import annotations

from engine import errors as E
from engine.accounts import AccountOperationError

# (code, SQLSTATE) per engine error class; the most specific class present in an error's MRO wins.
ERROR_CODES: dict[type, tuple[int, str]] = {
    E.ParseError: (1064, "42000"),                  # ER_PARSE_ERROR
    E.BindError: (1105, "HY000"),                   # refined by BindError.unknown below
    E.TypeMismatchError: (1210, "HY000"),           # ER_WRONG_ARGUMENTS
    E.UnsupportedError: (1235, "42000"),            # ER_NOT_SUPPORTED_YET
    E.VariableError: (1193, "HY000"),               # ER_UNKNOWN_SYSTEM_VARIABLE (refined below)
    E.QueryCancelledError: (1317, "70100"),         # ER_QUERY_INTERRUPTED
    E.QueryTimeoutError: (3024, "HY000"),           # ER_QUERY_TIMEOUT
    E.MemoryLimitError: (1041, "HY000"),            # ER_OUT_OF_RESOURCES
    E.ExecutionError: (1105, "HY000"),              # ER_UNKNOWN_ERROR
    E.BadDataError: (1264, "22003"),                # ER_WARN_DATA_OUT_OF_RANGE
    E.ConstraintError: (1048, "23000"),             # ER_BAD_NULL_ERROR
    E.AccessDeniedError: (1142, "42000"),           # ER_TABLEACCESS_DENIED_ERROR (refined below)
    E.CanopyInternalError: (1105, "HY000"),
    E.IntegrityError: (1062, "23000"),              # ER_DUP_ENTRY: a key violation from the engine
    E.InterfaceError: (2014, "HY000"),              # the session was closed under the client
    E.Error: (1105, "HY000"),
}
UNKNOWN_NAME_CODES = {"database": (1049, "42000"), "table": (1146, "42S02"), "column": (1054, "42S22")}
ACCESS_CODES = {"database": (1044, "42000"), "table": (1142, "42000"), "column": (1143, "42000"),
                "global": (1227, "42000"),
                "thread": (1095, "HY000")}
# a BadDataError's own code (its ``code``): SQLSTATE as MariaDB sends it
BAD_DATA_STATES = {1264: "22003", 1292: "22007", 1366: "22007"}
LOGIN_DENIED = (1045, "28000")                      # ER_ACCESS_DENIED_ERROR (wrong password, no such user)
NO_DATABASE = (1046, "3D000")                       # ER_NO_DB_ERROR
SECURE_FILE_PRIV = (1290, "HY000")                  # ER_OPTION_PREVENTS_STATEMENT
ACCOUNT_OPERATION = (1396, "HY000")                 # ER_CANNOT_USER: CREATE USER of one that exists, ...


def mysql_error(error: BaseException) -> tuple[int, str, str]:
    """(code, SQLSTATE, message) for ``error``."""
    message = str(error) or type(error).__name__
    if not isinstance(error, E.Error):
        return 1105, "HY000", f"internal error ({type(error).__name__}): {message}"
    if isinstance(error, E.BindError) and getattr(error, "unknown", None) in UNKNOWN_NAME_CODES:
        return (*UNKNOWN_NAME_CODES[error.unknown], message)
    if isinstance(error, E.BindError) and message.startswith("no database selected"):
        return (*NO_DATABASE, message)
    if isinstance(error, E.VariableError):
        code = (1238, "HY000") if error.read_only else (1231, "42000") if error.wrong_value else (1193, "HY000")
        return (*code, message)
    if isinstance(error, AccountOperationError):
        return (*ACCOUNT_OPERATION, message)
    if isinstance(error, E.BadDataError) and error.code in BAD_DATA_STATES:
        return error.code, BAD_DATA_STATES[error.code], message
    if isinstance(error, E.AccessDeniedError):
        return (*ACCESS_CODES.get(error.scope, ACCESS_CODES["table"]), message)
    for cls in type(error).__mro__:
        if cls in ERROR_CODES:
            return (*ERROR_CODES[cls], message)
    return 1105, "HY000", message
