"""ingestflow: document-ingestion workflows, run locally and offline.

The Python API (nothing heavy is imported until it is used):

    import ingestflow
    wf = ingestflow.load_workflow("workflow.json")
    result = ingestflow.run(wf, ["docs/"])
    ingestflow.elements_frame(result.elements)
"""

from __future__ import annotations

# the API module imports nothing heavy itself (its functions do, when called): one list of
# public names, its own
from ingestflow.api import *  # noqa: F403
from ingestflow.api import __all__  # noqa: F401
