"""/sources and /destinations: connectors, with connection checks."""

from typing import Annotated, Any

from fastapi import APIRouter, BackgroundTasks, Query

from ingestflow.server.bodies import JsonBody, json_doc
from ingestflow.server.deps import ServiceDep, StateDep, both
from ingestflow.server.errors import responses
from ingestflow.service.records import ConnectionCheck, ConnectorInformation, Deleted

router = APIRouter(tags=["connectors"])
_CREATE_DOC = json_doc(
    "A connector: name (unique), type, config.",
    {
        "vectordb": {
            "value": {
                "name": "milvus lite",
                "type": "vectordb",
                "config": {
                    "uri": "milvus.db",
                    "user": "",
                    "password": "x",
                    "db_name": "default",
                    "collection_name": "elements",
                },
            }
        }
    },
)
_UPDATE_DOC = json_doc('`{"config": {...}}`')


def _routes(role: str) -> None:
    plural = f"/{role}s"

    @both(router, "GET", plural, name=f"list_{role}s")
    def list_(
        svc: ServiceDep,
        source_type: Annotated[str | None, Query(include_in_schema=role == "source")] = None,
        destination_type: Annotated[
            str | None, Query(include_in_schema=role == "destination")
        ] = None,
    ) -> list[ConnectorInformation]:
        """Stored connectors of this role (secrets masked)."""
        return svc.connectors.list(role, source_type or destination_type)

    @both(
        router,
        "POST",
        plural,
        name=f"create_{role}",
        openapi_extra=_CREATE_DOC,
        responses=responses(413, 422),
    )
    def create(body: JsonBody, svc: ServiceDep) -> ConnectorInformation:
        """Store a connector: name (unique), type, config."""
        return svc.connectors.create(body, role)

    @both(router, "GET", plural + "/{connector_id}", name=f"get_{role}", responses=responses(404))
    def get(connector_id: str, svc: ServiceDep) -> ConnectorInformation:
        """One connector (secrets masked)."""
        return svc.connectors.get(connector_id, role)

    @both(
        router,
        "PUT",
        plural + "/{connector_id}",
        name=f"update_{role}",
        openapi_extra=_UPDATE_DOC,
        responses=responses(404, 413),
    )
    def update(connector_id: str, body: JsonBody, svc: ServiceDep) -> ConnectorInformation:
        """Replace the config; a secret sent back masked keeps its stored value."""
        return svc.connectors.update(connector_id, body, role)

    @both(
        router,
        "DELETE",
        plural + "/{connector_id}",
        name=f"delete_{role}",
        responses=responses(404, 409),
    )
    def delete(connector_id: str, svc: ServiceDep) -> Deleted:
        """Delete a connector no workflow uses."""
        return svc.connectors.delete(connector_id, role)

    @both(
        router,
        "POST",
        plural + "/{connector_id}/connection-check",
        name=f"check_{role}",
        status_code=202,
        responses=responses(404),
    )
    def start_check(
        connector_id: str, svc: ServiceDep, state: StateDep, tasks: BackgroundTasks
    ) -> ConnectionCheck:
        """Start a connection check; GET the same path for its outcome."""
        record = svc.connectors.start_check(connector_id, role)
        tasks.add_task(_run_check, state, record.id)
        return record

    @both(
        router,
        "GET",
        plural + "/{connector_id}/connection-check",
        name=f"last_check_{role}",
        responses=responses(404),
    )
    def last_check(connector_id: str, svc: ServiceDep) -> ConnectionCheck:
        """The latest connection check of the connector."""
        return svc.connectors.last_check(connector_id, role)


def _run_check(state: Any, check_id: str) -> None:
    from ingestflow.service import Service

    with Service(state.workspace, lite=state.lite) as svc:
        svc.connectors.run_check(check_id)


_routes("source")
_routes("destination")
