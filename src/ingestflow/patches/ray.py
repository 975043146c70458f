"""Ray: a local cluster started without the helpers a one-run cluster never uses, and Ray's
lines kept off the terminal (`runner.executors.ray_cluster`). Ray has no public switch for
either from `ray.init`; where its private names no longer match, each is left out, as before."""

from __future__ import annotations

from collections.abc import Callable
from contextlib import AbstractContextManager
from typing import Any

from ingestflow.patches import guard
from ingestflow.patches.guard import Patch

LIBRARY = "ray"
#: Checked on ray 2.60.0 (the `ray` extra's pin).
SUPPORTED: dict[str, str] = {"ray": ">=2.60,<2.61"}
_PARAMS = (
    "(self, redis_address=None, gcs_address=None, num_cpus=None, num_gpus=None, resources=None, "
    "labels=None, memory=None, object_store_memory=None, redis_port=None, "
    "redis_shard_ports=None, object_manager_port=None, node_manager_port=0, "
    "gcs_server_port=None, node_ip_address=None, node_name=None, min_worker_port=None, "
    "max_worker_port=None, worker_port_list=None, ray_client_server_port=None, "
    "redirect_output=None, log_to_stderr=None, external_addresses=None, num_redis_shards=None, "
    "redis_max_clients=None, redis_username='', redis_password='', plasma_directory=None, "
    "object_spilling_directory=None, worker_path=None, setup_worker_path=None, "
    "huge_pages=False, include_dashboard=None, dashboard_host='127.0.0.1', "
    "dashboard_port=8265, dashboard_agent_listen_port=52365, runtime_env_agent_port=None, "
    "plasma_store_socket_name=None, raylet_socket_name=None, temp_dir=None, "
    "runtime_env_dir_name=None, include_log_monitor=None, autoscaling_config=None, "
    "ray_debugger_external=False, _system_config=None, enable_object_reconstruction=False, "
    "metrics_agent_port=None, metrics_export_port=None, tracing_startup_hook=None, "
    "no_monitor=False, env_vars=None, session_name=None, webui=None, cluster_id=None, "
    "node_id=None, resource_isolation_config=None, proxy_server_url=None)"
)
PATCHES: dict[str, Patch] = {
    "ray_params_init": Patch(
        "ray._private.parameter",
        "RayParams.__init__",
        _PARAMS,
        "a one-run local cluster starts without the monitor and the log monitor",
        LIBRARY,
        True,
    ),
    "ray_print_to_stdstream": Patch(
        "ray._private.worker",
        "print_to_stdstream",
        "(data, ignore_prefix)",
        "Ray's own lines stay off the terminal during a run",
        LIBRARY,
        True,
    ),
}
guard.declare(LIBRARY, SUPPORTED, PATCHES)


def params_init(make: Callable[[Any], Any]) -> AbstractContextManager[None]:
    """While open, `RayParams.__init__` is `make(current)` (left out where it differs)."""
    return guard.replaced(("ray_params_init", make))


def print_to_stdstream(make: Callable[[Any], Any]) -> AbstractContextManager[None]:
    """While open, Ray's printer of worker lines is `make(current)` (left out where it
    differs)."""
    return guard.replaced(("ray_print_to_stdstream", make))
