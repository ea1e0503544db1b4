"""SingleStore's pipeline statements, which sqlglot cannot parse, as frozen dataclasses.

Grammar::

    CREATE [OR REPLACE] PIPELINE [IF NOT EXISTS] name AS
        LOAD DATA S3 'bucket[/prefix]'
        [CONFIG '{"region": "...", "endpoint_url": "...", "full_listing_interval_s": 30}']
        [CREDENTIALS '{"aws_access_key_id": "...", "aws_secret_access_key": "...", "aws_session_token": "..."}']
                                             -- '{}' or none: boto3's default credential chain
        [BATCH_INTERVAL milliseconds]
        <the rest of a LOAD DATA statement: [SKIP ... ERRORS] INTO TABLE t [FIELDS ...] ... [FORMAT ...]>
    START PIPELINE name [FOREGROUND]         -- FOREGROUND: not supported
    STOP PIPELINE name
    DROP PIPELINE [IF EXISTS] name
    SHOW PIPELINES [LIKE 'pattern']
    SHOW CREATE PIPELINE name                -- the definition, CREDENTIALS' values redacted
    ALTER PIPELINE name <change> [<change> ...]   -- SingleStore's clauses:
        SET OFFSETS {EARLIEST | LATEST}          -- load everything again / skip what is there now
        SET BATCH_INTERVAL milliseconds
        SET MAX_PARTITIONS_PER_BATCH n           -- an S3 pipeline's partitions are its files
        SET CREDENTIALS '{...}'                  -- new keys (rotation, a fix); '{}': the default chain
        DROP FILE 'key'                          -- forget one file's mark: it loads again
    (SingleStore's other ALTER clauses — OFFSETS '<json>', CONFIG, TRANSFORM, RESOURCE
    POOL, DROP ORPHAN FILES, FIELDS, ... — fail with UnsupportedError naming the clause.)

The part after the source options is LOAD DATA's own grammar: it is parsed by
:func:`engine.load.load_data.parse_load_data` with the source spelled as ``INFILE``.

>>> s = parse_pipeline_statement(
...     "CREATE PIPELINE p AS LOAD DATA S3 'b/in/' CONFIG '{\\"region\\": \\"us-east-1\\"}' "
...     "INTO TABLE t FIELDS TERMINATED BY ','")
>>> (s.name, s.bucket, s.prefix, s.config["region"], s.load.table, s.load.fields_terminated_by)
('p', 'b', 'in/', 'us-east-1', 't', ',')
"""
from __future__ import annotations

import dataclasses
import json
from dataclasses import dataclass, field
from typing import Optional

from sqlglot.tokens import Token, TokenType

from engine.errors import ParseError, UnsupportedError
from engine.load.load_data import LoadDataStatement, parse_load_data

DEFAULT_BATCH_INTERVAL_MS = 500
CREDENTIAL_KEYS = ("aws_access_key_id", "aws_secret_access_key", "aws_session_token")
REDACTED = "<redacted>"          # what is shown and stored in place of each CREDENTIALS value


@dataclass(frozen=True)
class CreatePipeline:
    name: str
    bucket: str
    prefix: str
    load: LoadDataStatement               # path: 's3://bucket/prefix'; each file loads with its own path
    config: dict = field(default_factory=dict, hash=False)
    credentials: dict = field(default_factory=dict, hash=False, repr=False)
    batch_interval_ms: int = DEFAULT_BATCH_INTERVAL_MS
    or_replace: bool = False
    if_not_exists: bool = False
    # The statement's text with every CREDENTIALS value replaced by REDACTED: what SHOW CREATE PIPELINE
    # prints and what the definitions table stores (the credentials themselves go to a 0600 file, see
    # engine.pipelines.durable). It never holds a secret.
    sql: str = field(default="", compare=False, repr=False)


@dataclass(frozen=True)
class AlterPipeline:
    name: str
    offsets: Optional[str] = None                 # 'EARLIEST' | 'LATEST'
    batch_interval_ms: Optional[int] = None
    max_partitions_per_batch: Optional[int] = None
    drop_file: Optional[str] = None
    credentials: Optional[dict] = field(default=None, repr=False)   # SET CREDENTIALS '{...}'


@dataclass(frozen=True)
class StartPipeline:
    name: str


@dataclass(frozen=True)
class StopPipeline:
    name: str


@dataclass(frozen=True)
class DropPipeline:
    name: str
    if_exists: bool = False


@dataclass(frozen=True)
class ShowPipelines:
    like: Optional[str] = None


@dataclass(frozen=True)
class ShowCreatePipeline:
    name: str


def is_pipeline_statement(tokens: list[Token]) -> bool:
    """True for the statements this module parses, judged by their first words."""
    words = [t.text.upper() for t in tokens[:4] if t.token_type not in (TokenType.STRING, TokenType.IDENTIFIER)]
    if not words:
        return False
    if words[0] in ("START", "STOP", "DROP", "ALTER") and len(words) > 1 and words[1] == "PIPELINE":
        return True
    if words[0] == "SHOW" and len(words) > 1 and words[1] == "PIPELINES":
        return True
    if words[:3] == ["SHOW", "CREATE", "PIPELINE"]:
        return True
    return words[0] == "CREATE" and "PIPELINE" in words[1:4]


def parse_pipeline_statement(sql: str):
    from engine.load.load_data import _Parser     # the LOAD DATA token cursor, errors with positions

    p = _Parser(sql)
    verb = p.expect_word("CREATE", "START", "STOP", "DROP", "SHOW", "ALTER")
    if verb == "SHOW":
        if p.word("CREATE"):
            p.expect_word("PIPELINE")
            name = p.expect_name("a pipeline name")
            _end(p)
            return ShowCreatePipeline(name)
        p.expect_word("PIPELINES")
        like = None
        if p.word("LIKE"):
            like = p.expect_string("LIKE")
        _end(p)
        return ShowPipelines(like)
    if verb == "ALTER":
        return _parse_alter(p)
    if verb != "CREATE":
        p.expect_word("PIPELINE")
        if_exists = False
        if verb == "DROP" and p.word("IF"):
            p.expect_word("EXISTS")
            if_exists = True
        name = p.expect_name("a pipeline name")
        if verb == "START" and p.word("FOREGROUND"):
            raise UnsupportedError("START PIPELINE ... FOREGROUND")
        _end(p)
        return {"START": StartPipeline(name), "STOP": StopPipeline(name),
                "DROP": DropPipeline(name, if_exists)}[verb]

    or_replace = False
    if p.word("OR"):
        p.expect_word("REPLACE")
        or_replace = True
    p.expect_word("PIPELINE")
    if_not_exists = False
    if p.word("IF"):
        p.expect_word("NOT")
        p.expect_word("EXISTS")
        if_not_exists = True
    name = p.expect_name("a pipeline name")
    p.expect_word("AS")
    p.expect_word("LOAD")
    p.expect_word("DATA")
    kind = p.expect_word("S3", "KAFKA", "FS", "AZURE", "GCS", "HDFS", "LINK")
    if kind != "S3":
        raise UnsupportedError(f"pipelines from {kind}: Canopy's pipelines read S3 (LOAD DATA S3 'bucket/prefix')")
    location_token = p.peek()
    location = p.expect_string("LOAD DATA S3")
    bucket, _, prefix = location.partition("/")
    if not bucket:
        raise p.error("LOAD DATA S3 needs 'bucket' or 'bucket/prefix'", location_token)
    options: dict = {}
    credentials_token = None
    while True:
        token = p.peek()
        word = p.word("CONFIG", "CREDENTIALS", "BATCH_INTERVAL")
        if word is None:
            break
        if word in options:
            raise p.error(f"{word} given twice", token)
        if word == "BATCH_INTERVAL":
            number = p.peek()
            if number is None or number.token_type != TokenType.NUMBER or not number.text.isdigit():
                raise p.error("BATCH_INTERVAL needs a whole number of milliseconds")
            options[word] = int(p.advance().text)
        else:
            text_token = p.peek()
            options[word] = _json_object(p, p.expect_string(word), word, text_token)
            if word == "CREDENTIALS":
                credentials_token = text_token
                _check_credentials(p, options[word], text_token)
    rest = p.peek()
    if rest is None:
        raise p.error("CREATE PIPELINE needs INTO TABLE after the source")
    # The remainder is a LOAD DATA statement with the S3 source in INFILE's place.
    load_text = "LOAD DATA INFILE 'pipeline' " + sql[rest.start:]
    try:
        load = parse_load_data(load_text)
    except ParseError as error:
        raise ParseError(f"CREATE PIPELINE {name}: {error}") from None
    load = dataclasses.replace(load, path=f"s3://{bucket}/{prefix}")
    credentials = options.get("CREDENTIALS", {})
    if credentials_token is not None:
        sql = sql[:credentials_token.start] + _redacted_literal(credentials) + sql[credentials_token.end + 1:]
    return CreatePipeline(name, bucket, prefix, load, options.get("CONFIG", {}), credentials,
                          options.get("BATCH_INTERVAL", DEFAULT_BATCH_INTERVAL_MS), or_replace, if_not_exists,
                          sql.strip())


def _redacted_literal(credentials: dict) -> str:
    """The CREDENTIALS literal as shown and stored: the keys that are set, each value REDACTED."""
    return "'" + json.dumps({key: REDACTED for key in credentials}) + "'"


def with_credentials(definition: CreatePipeline, credentials: dict) -> CreatePipeline:
    """``definition`` with other credentials (ALTER PIPELINE ... SET CREDENTIALS, or the stored ones
    put back on open): its text's CREDENTIALS literal shows the new keys, redacted."""
    from engine.load.load_data import _Parser

    p = _Parser(definition.sql)
    sql = definition.sql
    for i, token in enumerate(p.tokens[:-1]):
        if p.is_word(token, "CREDENTIALS") and p.tokens[i + 1].token_type == TokenType.STRING:
            literal = p.tokens[i + 1]
            sql = sql[:literal.start] + _redacted_literal(credentials) + sql[literal.end + 1:]
            break
    else:
        if credentials:   # none before: the clause goes right after the S3 location
            location = next(t for t in p.tokens if t.token_type == TokenType.STRING)
            sql = (sql[:location.end + 1] + " CREDENTIALS " + _redacted_literal(credentials)
                   + sql[location.end + 1:])
    return dataclasses.replace(definition, credentials=dict(credentials), sql=sql)


def _check_credentials(p, credentials: dict, token: Token) -> None:
    """Known keys with string values, the key id and the secret together. Errors name keys, never
    values (nor the literal: no 'near' text)."""
    def error(message: str) -> ParseError:
        located = p.error(message, token)
        return ParseError(message, located.line, located.column)

    unknown = sorted(set(credentials) - set(CREDENTIAL_KEYS))
    if unknown:
        raise error(f"CREDENTIALS: unknown key {unknown[0]!r} (the keys are {', '.join(CREDENTIAL_KEYS)})")
    for key, value in credentials.items():
        if not isinstance(value, str) or not value:
            raise error(f"CREDENTIALS: {key} must be a non-empty string")
    if credentials and not {"aws_access_key_id", "aws_secret_access_key"} <= set(credentials):
        raise error("CREDENTIALS needs both aws_access_key_id and aws_secret_access_key "
                    "(or '{}' for boto3's default credential chain)")


# SingleStore ALTER PIPELINE clauses Canopy parses only to refuse them by name.
_UNSUPPORTED_SET = ("CONFIG", "MAX_OFFSETS_PER_BATCH_PARTITION", "MAX_RETRIES_PER_BATCH_PARTITION",
                    "RESOURCE", "TRANSFORM", "OFFSET", "BATCH_MATCHES_SNAPSHOT", "RETRY_OPTIONS", "LINK")
_UNSUPPORTED_CLAUSES = ("ENABLE", "DISABLE", "STOP_ON_ERROR", "RELOAD", "FIELDS", "COLUMNS", "LINES")


def _parse_alter(p) -> AlterPipeline:
    """``ALTER PIPELINE name`` and one or more SET / DROP changes (after ALTER has been read)."""
    p.expect_word("PIPELINE")
    name = p.expect_name("a pipeline name")
    changes: dict = {}

    def put(key: str, value, token) -> None:
        if key in changes:
            raise p.error(f"ALTER PIPELINE: {key.upper()} given twice", token)
        changes[key] = value

    while not p.at_end():
        token = p.peek()
        if p.word("SET"):
            while True:
                setting_token = p.peek()
                setting = p.word("OFFSETS", "BATCH_INTERVAL", "MAX_PARTITIONS_PER_BATCH", "CREDENTIALS",
                                 *_UNSUPPORTED_SET)
                if setting is None:
                    raise p.error("ALTER PIPELINE ... SET needs OFFSETS, BATCH_INTERVAL, MAX_PARTITIONS_PER_BATCH "
                                  "or CREDENTIALS")
                if setting in _UNSUPPORTED_SET:
                    raise UnsupportedError(f"ALTER PIPELINE ... SET {setting}")
                if setting == "CREDENTIALS":
                    text_token = p.peek()
                    credentials = _json_object(p, p.expect_string("SET CREDENTIALS"), "CREDENTIALS", text_token)
                    _check_credentials(p, credentials, text_token)
                    put("credentials", credentials, setting_token)
                elif setting == "OFFSETS":
                    value_token = p.peek()
                    if value_token is not None and value_token.token_type == TokenType.STRING:
                        raise UnsupportedError("ALTER PIPELINE ... SET OFFSETS '<json offsets>' "
                                               "(EARLIEST and LATEST are supported)")
                    put("offsets", p.expect_word("EARLIEST", "LATEST"), setting_token)
                else:
                    number = p.peek()
                    if number is None or number.token_type != TokenType.NUMBER or not number.text.isdigit():
                        raise p.error(f"{setting} needs a whole number")
                    value = int(p.advance().text)
                    if setting == "MAX_PARTITIONS_PER_BATCH" and value < 1:
                        raise p.error("MAX_PARTITIONS_PER_BATCH must be at least 1", number)
                    put("batch_interval_ms" if setting == "BATCH_INTERVAL" else "max_partitions_per_batch",
                        value, setting_token)
                following = p.peek()
                if following is not None and following.text == ",":
                    p.advance()
                    continue
                if following is None or p.is_word(following, "SET", "DROP", *_UNSUPPORTED_CLAUSES):
                    break
        elif p.word("DROP"):
            what = p.expect_word("FILE", "PARTITION", "ORPHAN")
            if what != "FILE":
                raise UnsupportedError(f"ALTER PIPELINE ... DROP {what}"
                                       f"{' FILES' if what == 'ORPHAN' else ''} (DROP FILE 'key' is supported)")
            put("drop_file", p.expect_string("DROP FILE"), token)
        elif p.word(*_UNSUPPORTED_CLAUSES):
            raise UnsupportedError(f"ALTER PIPELINE ... {token.text.upper()}")
        else:
            raise p.error("ALTER PIPELINE needs SET ... or DROP FILE 'key'")
    if not changes:
        raise p.error("ALTER PIPELINE needs SET ... or DROP FILE 'key'")
    return AlterPipeline(name, **changes)


def _json_object(p, text: str, what: str, token: Token) -> dict:
    def error(message: str) -> ParseError:
        located = p.error(message, token)
        if what == "CREDENTIALS":          # the literal holds secrets: the position only
            return ParseError(message, located.line, located.column)
        return located

    try:
        value = json.loads(text) if text.strip() else {}
    except json.JSONDecodeError as error_:
        raise error(f"{what} is not valid JSON: {error_.msg} at character {error_.pos}") from None
    if not isinstance(value, dict):
        raise error(f"{what} must be a JSON object")
    return value


def _end(p) -> None:
    if not p.at_end():
        raise p.error("unexpected token")
