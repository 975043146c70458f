"""A Ray actor of a run (`StagesActor`): one worker process holding the plan's stages
(`worker.init_worker`), running the calls it is sent, writing what it finishes where the
destination allows it, and the spool where it keeps documents it receives as bytes."""

from __future__ import annotations

import os
import shutil
import signal
import sys
import tempfile
from contextlib import suppress
from dataclasses import replace
from pathlib import Path
from typing import Any

from ingestflow.connectors.base import Destination
from ingestflow.patches import imports
from ingestflow.runner import worker
from ingestflow.runner.plan import Plan

#: A shipped file's modification time (ns) and whether it was in the temporary folder.
Stamp = tuple[int, bool]


class StagesActor:
    """What runs in one Ray actor: the plan's stages, opened once (when first needed), applied to
    the calls it is sent. Wrapped with `ray.remote` by `RayExecutor` (Ray is imported lazily)."""

    def __init__(
        self,
        plan: Plan,
        torch_threads: int,
        writer: Destination | None = None,
        dimension: int | None = None,
    ) -> None:
        # Ctrl-C is the driver's to handle: it stops the job between documents
        with suppress(ValueError):  # (not the main thread: nothing to ignore)
            signal.signal(signal.SIGINT, signal.SIG_IGN)
        if worker.torch_unused(plan):
            # as in a local worker: spaCy's thinc imports torch when it can (~1.3 s of CPU an
            # actor, benchmarks/RESULTS.md) though no stage of this plan uses it
            imports.block("torch")
        worker.init_worker(plan, torch_threads, in_process=True)
        from ingestflow.offline import quiet_libraries

        quiet_libraries()  # as in a local worker process: the job record says what matters
        self.spool = spool_root()
        self.spool.mkdir(parents=True, exist_ok=True)
        sweep_spool(self.spool)
        self.writer = writer  # this actor's own destination, opened when it first writes
        self.dimension = dimension
        self.opened = False

    def where(self) -> tuple[int, str]:
        """This actor's process id and the `ingestflow` package it runs (for checks)."""
        import ingestflow

        return os.getpid(), str(ingestflow.__file__)

    def warm(self) -> dict[str, bool]:
        """Open every stage now, as the first task would, and say which of the heavy libraries
        (torch, ONNX Runtime) this process then holds (for checks)."""
        for _, stage in worker.STAGES or []:
            worker.open_stage(stage)
        return {name: sys.modules.get(name) is not None for name in ("torch", "onnxruntime")}

    def process(self, sent: worker.Call, stamps: list[Stamp | None], write: bool = False) -> Any:
        """The call, run here; with `write`, each document it finishes is written to the
        destination here, and only its outcome goes back (`worker.write_results`)."""
        result = self._run(sent, stamps)
        if not write or self.writer is None:
            return result
        if not self.opened:
            try:
                self.writer.precheck(self.dimension)
            except Exception as exc:  # every document says why; the next call tries again
                error = f"destination: {worker.reason(exc)}"
                for r in result:
                    if r.ok:
                        r.written = worker.Written(len(r.doc.elements), error=error)
                        r.doc.elements = []
                return result
            self.opened = True
        return worker.write_results(result, self.writer)

    def _run(self, sent: worker.Call, stamps: list[Stamp | None]) -> Any:
        """The call, run here. A document shipped as bytes that was a file is written to a
        local spool file first, with the file's modification time, so its elements carry the
        same metadata (`last_modified`) as with the local executor. The spool is not under the
        temporary folder, where the library leaves out some types' file time, unless the
        driver's file was there too."""
        with (
            tempfile.TemporaryDirectory(prefix=f"{os.getpid()}-", dir=self.spool) as spool,
            tempfile.TemporaryDirectory(prefix="ingestflow-ray-") as temp,
        ):
            docs = [doc.fetch() for doc in sent.docs]  # a source's references, read here
            for index, (doc, stamp) in enumerate(zip(docs, stamps, strict=True)):
                if stamp is None or doc.data is None:
                    continue
                mtime, in_temp = stamp
                folder = temp if in_temp else spool
                path = Path(folder, str(index), Path(doc.filename).name or "document")
                path.parent.mkdir()
                path.write_bytes(doc.data)
                os.utime(path, ns=(mtime, mtime))
                docs[index] = replace(doc, path=path, data=None)
            return replace(sent, docs=tuple(docs))()


def spool_root() -> Path:
    """Where actors write the documents they receive as bytes: `$INGESTFLOW_CACHE/ray-spool`."""
    from ingestflow.local_model import cache_dir

    return cache_dir() / "ray-spool"


def sweep_spool(spool: Path) -> None:
    """Remove the spool folders of actors that died on this machine (named `PID-…`)."""
    import psutil

    for folder in spool.iterdir():
        pid = folder.name.split("-", 1)[0]
        if pid.isdigit() and not psutil.pid_exists(int(pid)):
            shutil.rmtree(folder, ignore_errors=True)
