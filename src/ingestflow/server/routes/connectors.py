"""/sources and /destinations: connectors, with connection checks."""

from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Body, Query

from ingestflow.server.deps import ServiceDep, StateDep, both

router = APIRouter(tags=["connectors"])
ConnectorBody = Annotated[
    dict[str, Any],
    Body(
        openapi_examples={
            "vectordb": {
                "value": {
                    "name": "milvus lite",
                    "type": "vectordb",
                    "config": {
                        "uri": "/data/milvus.db",
                        "user": "",
                        "password": "x",
                        "db_name": "default",
                        "collection_name": "elements",
                    },
                }
            }
        }
    ),
]
UpdateBody = Annotated[dict[str, Any], Body(description='`{"config": {...}}`')]


def _routes(role: str) -> None:
    plural = f"/{role}s"

    @both(router, "GET", plural, name=f"list_{role}s")
    def list_(
        svc: ServiceDep,
        source_type: Annotated[str | None, Query(include_in_schema=role == "source")] = None,
        destination_type: Annotated[
            str | None, Query(include_in_schema=role == "destination")
        ] = None,
    ) -> list[dict[str, Any]]:
        """Stored connectors of this role (secrets masked)."""
        return svc.connectors.list(role, source_type or destination_type)

    @both(router, "POST", plural, name=f"create_{role}")
    def create(body: ConnectorBody, svc: ServiceDep) -> dict[str, Any]:
        """Store a connector: name (unique), type, config."""
        return svc.connectors.create(body, role)

    @both(router, "GET", plural + "/{connector_id}", name=f"get_{role}")
    def get(connector_id: str, svc: ServiceDep) -> dict[str, Any]:
        """One connector (secrets masked)."""
        return svc.connectors.get(connector_id, role)

    @both(router, "PUT", plural + "/{connector_id}", name=f"update_{role}")
    def update(connector_id: str, body: UpdateBody, svc: ServiceDep) -> dict[str, Any]:
        """Replace the config; a secret sent back masked keeps its stored value."""
        return svc.connectors.update(connector_id, body, role)

    @both(router, "DELETE", plural + "/{connector_id}", name=f"delete_{role}")
    def delete(connector_id: str, svc: ServiceDep) -> dict[str, Any]:
        """Delete a connector no workflow uses."""
        return svc.connectors.delete(connector_id, role)

    @both(
        router,
        "POST",
        plural + "/{connector_id}/connection-check",
        name=f"check_{role}",
        status_code=202,
    )
    def start_check(
        connector_id: str, svc: ServiceDep, state: StateDep, tasks: BackgroundTasks
    ) -> dict[str, Any]:
        """Start a connection check; GET the same path for its outcome."""
        record = svc.connectors.start_check(connector_id, role)
        tasks.add_task(_run_check, state, record["id"])
        return record

    @both(router, "GET", plural + "/{connector_id}/connection-check", name=f"last_check_{role}")
    def last_check(connector_id: str, svc: ServiceDep) -> dict[str, Any]:
        """The latest connection check of the connector."""
        return svc.connectors.last_check(connector_id, role)


def _run_check(state: Any, check_id: str) -> None:
    from ingestflow.service import Service

    with Service(state.workspace, lite=state.lite) as svc:
        svc.connectors.run_check(check_id)


_routes("source")
_routes("destination")
