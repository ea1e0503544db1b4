"""The S3 side of a pipeline: its client (whose credentials go to AWS endpoints only, unless the pipeline
names its own), the listing of a prefix page by page, and S3 errors as SHOW PIPELINES words them."""
from __future__ import annotations

import urllib.parse
from typing import Optional

from engine.errors import ExecutionError
from engine.pipelines.statements import REDACTED, CreatePipeline

DOWNLOAD_THREADS = 16           # files of a batch downloaded at once (a client's pool has room for them)


def endpoint_is_aws(url: Optional[str]) -> bool:
    """Whether S3 requests go to AWS: no ``endpoint_url`` (the region's endpoint), or an https URL of a
    host under amazonaws.com."""
    if url is None:
        return True
    parsed = urllib.parse.urlparse(url)
    host = (parsed.hostname or "").lower().rstrip(".")
    return parsed.scheme == "https" and host.endswith((".amazonaws.com", ".amazonaws.com.cn"))


def check_credentials_destination(definition: CreatePipeline) -> None:
    """The process's own AWS credentials (boto3's default chain: environment, ~/.aws, an instance
    role) are signed into requests to AWS only: a pipeline whose ``endpoint_url`` is anything else
    must name its own CREDENTIALS, or it could hand them to any server a statement names."""
    endpoint = definition.config.get("endpoint_url")
    if not endpoint_is_aws(endpoint) and not definition.credentials.get("aws_access_key_id"):
        raise ExecutionError(
            f"pipeline {definition.name!r}: endpoint_url {endpoint!r} is not an AWS endpoint, so the process's own "
            f"AWS credentials are not sent to it; give the pipeline its own CREDENTIALS "
            f"'{{\"aws_access_key_id\": ..., \"aws_secret_access_key\": ...}}' for that endpoint")


def make_client(definition: CreatePipeline):
    import boto3
    from botocore.config import Config

    check_credentials_destination(definition)
    config, credentials = definition.config, definition.credentials
    if REDACTED in credentials.values():
        raise ExecutionError(f"pipeline {definition.name!r}: its credentials are missing from the data_dir's "
                             f"pipeline_credentials.json; give them again with ALTER PIPELINE "
                             f"{definition.name} SET CREDENTIALS '{{...}}'")
    # No CREDENTIALS (or '{}'), AWS endpoints only: every value None, and boto3 takes its default
    # credential chain (environment variables, ~/.aws, an instance or container role).
    return boto3.session.Session().client(
        "s3", region_name=config.get("region") or "us-east-1", endpoint_url=config.get("endpoint_url"),
        aws_access_key_id=credentials.get("aws_access_key_id"),
        aws_secret_access_key=credentials.get("aws_secret_access_key"),
        aws_session_token=credentials.get("aws_session_token"),
        config=Config(retries={"max_attempts": 2, "mode": "standard"}, connect_timeout=5, read_timeout=60,
                      max_pool_connections=DOWNLOAD_THREADS + 4))


def list_pages(client, bucket: str, prefix: str, start_after: Optional[str]):
    """Pages (lists of (key, size), at most 1000 each) of the objects under ``prefix`` after
    ``start_after`` (all of them when None), in key order; folder markers left out."""
    kwargs = {"Bucket": bucket, "Prefix": prefix}
    if start_after:
        kwargs["StartAfter"] = start_after
    for page in client.get_paginator("list_objects_v2").paginate(**kwargs):
        yield [(item["Key"], item["Size"]) for item in page.get("Contents", ()) if not item["Key"].endswith("/")]


# Download errors that are the object's own: the file is marked Failed (others leave it Unloaded, retried).
_FILE_ERRORS = frozenset({"NoSuchKey", "InvalidObjectState"})


def _error_code(error: Exception) -> str:
    response = getattr(error, "response", None)
    return response.get("Error", {}).get("Code", "") if isinstance(response, dict) else ""


def describe_error(error: Exception, definition: CreatePipeline) -> str:
    """A short message for SHOW PIPELINES / PIPELINES_FILES, S3 error codes spelled out, with any
    credential value that appears in it (an endpoint echoing what it got) replaced by REDACTED."""
    response = getattr(error, "response", None)
    if isinstance(response, dict) and "Error" in response:
        code = response["Error"].get("Code", "")
        message = response["Error"].get("Message", "")
        hint = {"NoSuchBucket": f"bucket {definition.bucket!r} does not exist",
                "InvalidAccessKeyId": "bad credentials (unknown access key)",
                "SignatureDoesNotMatch": "bad credentials (secret key does not match)",
                "AccessDenied": "access denied", "NoSuchKey": "the object was deleted"}.get(code)
        text = f"S3 {code}: {hint or message}"
    else:
        text = f"{type(error).__name__}: {error}"
    for value in definition.credentials.values():
        if isinstance(value, str) and len(value) >= 4 and value != REDACTED:
            text = text.replace(value, REDACTED)
    return text
