"""Which Ray a :class:`cluster.ray_runner.RayRunner` runs on, when this process has none yet.

``address=None`` means "the Ray this machine already runs, else a private one". Ray's own ``ray.init()``
resolves ``None`` through ``RAY_ADDRESS`` and the cluster file ``ray start --head`` leaves behind
(``/tmp/ray/ray_current_cluster``), and then refuses ``num_cpus`` ("When connecting to an existing
cluster, num_cpus and num_gpus must not be provided"), or hangs on a recorded cluster that is gone.
So the choice is made here, first, and said in one log line:

- a recorded cluster that answers is joined as it is (no resource arguments);
- a recorded cluster that does not answer is ignored, and a private local Ray is started;
- with nothing recorded a private local Ray is started, quietly.

A private Ray listens on 127.0.0.1 only (:func:`loopback_only`); a cluster the caller names, or one
started outside Canopy, is the caller's to secure.

A private Ray keeps Ray's token authentication and says so once here instead of Ray's warning at every
start: ``RAY_AUTH_MODE`` set explicitly is what Ray reads as "chosen", and an explicit setting by the
user is left as it is.
"""
from __future__ import annotations

import contextlib
import logging
import os
import socket
from typing import Optional

import ray

logger = logging.getLogger("canopy.cluster")

_AUTH_MODE = "RAY_AUTH_MODE"


def recorded_cluster() -> Optional[str]:
    """``host:port`` of the cluster ``ray.init()`` would join for ``address=None``, or None."""
    from ray._private import services    # Ray's own resolution, so the two cannot disagree

    env = os.environ.get("RAY_ADDRESS", "")
    if env and env not in ("auto", "local"):
        return env
    try:
        return services.find_bootstrap_address(None)
    except Exception as exc:   # an unreadable cluster file is "nothing recorded", said in the log
        logger.info("could not read Ray's current-cluster file: %s", exc)
        return None


def answers(address: str, timeout_s: float = 1.0) -> bool:
    """Whether something accepts connections at ``host:port`` (a GCS that is gone refuses at once)."""
    host, _, port = address.rpartition(":")
    try:
        with socket.create_connection((host or "127.0.0.1", int(port)), timeout=timeout_s):
            return True
    except (OSError, ValueError):
        return False


def _enable_token_auth() -> None:
    """What Ray does for a new local cluster when RAY_AUTH_MODE is unset, less its warning."""
    try:
        from ray._private.authentication.authentication_token_setup import _enable_token_auth as enable
    except ImportError:         # a Ray without token authentication: nothing to choose
        return
    enable()


def _use_token_if_available() -> None:
    """What Ray does before joining a recorded cluster (take the token ``ray start`` saved, if any),
    which it only does for ``address=None``, less its warning."""
    if _AUTH_MODE in os.environ:
        return
    try:
        from ray._private.authentication import authentication_token_setup as setup
    except ImportError:
        return
    quiet = logging.getLogger(setup.__name__)
    level = quiet.level
    quiet.setLevel(logging.ERROR)
    try:
        setup.maybe_enable_token_auth_if_token_available(warn_if_disabled=False)
    finally:
        quiet.setLevel(level)


@contextlib.contextmanager
def loopback_only():
    """A Ray this process starts serves this machine only: its GCS, raylets, object managers and
    workers listen on 127.0.0.1, not on every interface (a Ray port reachable from the network runs
    anyone's code). Ray binds its servers to the node's IP, which it takes from the machine's outward
    interface unless its "cluster" mode is off (``RAY_ENABLE_WINDOWS_OR_OSX_CLUSTER=0``: then the
    loopback address, as on a laptop, ``ray._private.services.get_node_ip_address``); ``ray.init``'s
    own ``_node_ip_address="127.0.0.1"`` is turned back into the outward IP. Set while Ray starts: the
    processes it spawns inherit it, and a later ``address=`` connection of this process is unchanged."""
    from ray._private import ray_constants

    saved_env = os.environ.get(ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR)
    saved = ray_constants.ENABLE_RAY_CLUSTER
    os.environ[ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR] = "0"
    ray_constants.ENABLE_RAY_CLUSTER = False
    try:
        yield
    finally:
        ray_constants.ENABLE_RAY_CLUSTER = saved
        if saved_env is None:
            os.environ.pop(ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR, None)
        else:
            os.environ[ray_constants.ENABLE_RAY_CLUSTERS_ENV_VAR] = saved_env


def init_ray(address: Optional[str], num_cpus: Optional[int]) -> str:
    """Start or join Ray for this process; return what was done, in words (also logged)."""
    init = dict(include_dashboard=False, logging_level="WARNING")
    if address is not None:                       # the caller named a cluster ("auto" or host:port)
        ray.init(address=address, **init)
        return f"joined the Ray cluster at {address}"
    recorded = recorded_cluster()
    if recorded is not None and answers(recorded):
        _use_token_if_available()
        ray.init(address=recorded, **init)
        said = f"joined the running Ray cluster at {recorded} (started outside Canopy)"
        logger.warning("canopy: %s", said)
        return said
    if _AUTH_MODE not in os.environ:
        _enable_token_auth()
    # "local" makes ray.init start a new instance instead of resolving RAY_ADDRESS / the cluster file
    # again, and the pair of variables is what a child process of ours would see, so it is cleared too.
    stale_env = os.environ.pop("RAY_ADDRESS", None) if recorded is not None else None
    try:
        with loopback_only():
            ray.init(address="local", num_cpus=num_cpus or os.cpu_count() or 2, dashboard_host="127.0.0.1", **init)
    finally:
        if stale_env is not None:
            os.environ["RAY_ADDRESS"] = stale_env
    if recorded is not None:
        said = f"the Ray cluster recorded at {recorded} is not running: started a private local Ray"
        logger.warning("canopy: %s", said)
    else:
        said = "started a private local Ray"
        logger.info("canopy: %s (token authentication: %s)", said, os.environ.get(_AUTH_MODE))
    return said
