"""`ingestflow jobs`: list, show, download a node's output, cancel, resume, prune."""

from __future__ import annotations

from pathlib import Path
from typing import Annotated

import typer

from ingestflow.cli.app import DEFAULT_WORKSPACE, JsonOpt, WorkspaceOpt, group
from ingestflow.cli.output import echo_json, failing_cleanly, seconds

jobs_app = group("jobs", "Inspect jobs: records, failed files, per-node outputs.")
JobArg = Annotated[str, typer.Argument(help="Job id (a unique prefix is enough).")]


def _service(workspace: object, create: bool = False):
    from ingestflow.service import Service

    return Service(workspace, create=create)  # type: ignore[arg-type]


@jobs_app.command("list")
def jobs_list(
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
    as_json: JsonOpt = False,
    limit: Annotated[int, typer.Option("--limit", min=1)] = 20,
    workflow: Annotated[
        str | None, typer.Option("--workflow", help="Only this workflow's jobs (its id).")
    ] = None,
    status: Annotated[
        str | None, typer.Option("--status", help="Only jobs in this status.")
    ] = None,
) -> None:
    """List jobs, newest first."""
    from ingestflow.errors import NotFound

    with failing_cleanly():
        try:
            with _service(workspace) as service:
                service.sweep()
                records = service.jobs.list(workflow, status, limit)
        except NotFound:  # no workspace yet: no jobs
            records = []
    if as_json:
        echo_json(records)
        return
    from rich.console import Console
    from rich.table import Table

    table = Table("id", "workflow", "status", "files", "failed", "runtime", "created")
    for r in records:
        table.add_row(
            r["id"][:8],
            r["workflow_name"],
            r["status"],
            str(len(r["input_file_ids"])),
            str(len(r["failed_files"])),
            seconds(r),
            r["created_at"][:19],
        )
    Console().print(table)


@jobs_app.command("show")
def jobs_show(
    job_id: JobArg, workspace: WorkspaceOpt = DEFAULT_WORKSPACE, as_json: JsonOpt = False
) -> None:
    """Show a job: status, per-node counts, each file's outcome."""
    from ingestflow.cli.output import summary

    with failing_cleanly(), _service(workspace) as service:
        service.sweep()
        record = service.jobs.get(job_id)
    if as_json:
        echo_json(record)
        return
    from ingestflow.errors import printable

    summary(record, settings=True)
    # a file's name (and so its error) may hold a CR, a BEL or an escape sequence: escaped
    for f in record["files"]:
        mark = {"SUCCESS": "✓", "FAILED": "✗", "SKIPPED": "="}[f["status"]]
        detail = printable(f["error"], 1000) if f["error"] else f"{f['elements']} elements"
        typer.echo(f"  {mark} {f['file_id'][:8]}  {printable(f['filename'])}  {detail}")
        for warning in f["warnings"]:
            typer.echo(f"      ! {printable(warning, 1000)}")
    for d in record.get("deleted_files") or []:  # left the source: output removed
        mark, detail = ("-", "removed (left the source)") if not d["error"] else ("✗", d["error"])
        name = printable(d["filename"])
        typer.echo(f"  {mark} {printable(d['record_id'][:8])}  {name}  {printable(detail, 1000)}")


@jobs_app.command("download")
def jobs_download(
    job_id: JobArg,
    file: Annotated[
        str | None, typer.Option("--file", help="File id (or prefix) or file name.")
    ] = None,
    node: Annotated[
        str | None, typer.Option("--node", help="Node id or name (default: the last node).")
    ] = None,
    to: Annotated[
        Path | None,
        typer.Option(
            "--to",
            metavar="FOLDER",
            help="Without --file: the folder to write into (default: JOB-NODE).",
        ),
    ] = None,
    as_format: Annotated[
        str,
        typer.Option(
            "--format",
            metavar="json|markdown",
            help="json: the elements; markdown: the document as a reader wants it (headings, "
            "lists, tables as HTML, formulas; running heads left out).",
        ),
    ] = "json",
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
) -> None:
    """Print one file's elements after one node (JSON, or Markdown with --format markdown);
    without --file, write every file's into a folder, one file per document named by its path
    (`.json`, or `.md`). Nodes other than the last are kept with --trace."""
    from ingestflow.service.jobs import download_format

    with failing_cleanly(), _service(workspace) as service:
        form = download_format(as_format)
        if file is not None and form == "markdown":
            typer.echo(service.jobs.markdown(job_id, file, node), nl=False)
            return
        if file is not None:
            echo_json(service.jobs.download(job_id, file, node))
            return
        record = service.jobs.get(job_id)
        folder = to or Path(f"{record['id'][:8]}-{_slug(node or 'output')}")
        written = service.jobs.export_node(record["id"], node, folder, form)
    typer.echo(f"wrote {len(written)} files into {folder}")


def _slug(text: str) -> str:
    import re

    return re.sub(r"[^A-Za-z0-9_.-]+", "-", text).strip("-") or "node"


@jobs_app.command("diff")
def jobs_diff(
    job_a: Annotated[str, typer.Argument(help="The first job (id or unique prefix).")],
    job_b: Annotated[str, typer.Argument(help="The second job.")],
    node: Annotated[str | None, typer.Option("--node", help="Only this node (name).")] = None,
    file: Annotated[
        str | None, typer.Option("--file", help="Only this file; shows the changed texts.")
    ] = None,
    as_json: JsonOpt = False,
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
) -> None:
    """Compare two jobs per node and per file: element counts, types, text lengths, the settings
    that differ, and (with --file, or in --json) the elements that changed."""
    from ingestflow.cli.diff import print_diff

    with failing_cleanly(), _service(workspace) as service:
        result = service.jobs.diff(job_a, job_b, node, file)
    if as_json:
        echo_json(result)
    else:
        print_diff(result, texts=file is not None)


@jobs_app.command("report")
def jobs_report(
    job_id: JobArg,
    html_file: Annotated[
        Path, typer.Option("--html", metavar="FILE", help="Where to write the HTML page.")
    ],
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
) -> None:
    """Write one self-contained HTML page about a job: per-node counts and timings, a table per
    file, each node's elements colour-coded by type with chunk boundaries drawn."""
    with failing_cleanly(), _service(workspace) as service:
        page = service.jobs.report(job_id)
    html_file.parent.mkdir(parents=True, exist_ok=True)
    html_file.write_text(page, encoding="utf-8")
    typer.echo(f"wrote {html_file} ({len(page) >> 10} KB); open it in a browser")


@jobs_app.command("prune")
def jobs_prune(
    older_than: Annotated[
        float | None,
        typer.Option(
            "--older-than", metavar="DAYS", help="Finished jobs that ended more than DAYS ago."
        ),
    ] = None,
    keep: Annotated[
        int | None,
        typer.Option("--keep", metavar="N", help="Never the newest N finished jobs."),
    ] = None,
    dry_run: Annotated[
        bool, typer.Option("--dry-run", help="Say what would go; remove nothing.")
    ] = False,
    workspace: WorkspaceOpt = DEFAULT_WORKSPACE,
    as_json: JsonOpt = False,
) -> None:
    """Remove finished jobs (older than DAYS, beyond the newest N, or both) with their uploads,
    kept node outputs and output folders inside the workspace; never a scheduled or running
    job, nor the node-output cache."""
    with failing_cleanly(), _service(workspace) as service:
        answer = service.jobs.prune(older_than, keep, dry_run)
    if as_json:
        echo_json(answer)
        return
    kept = f"{answer['kept']} finished jobs kept"
    if not answer["jobs"]:
        typer.echo(f"no finished job to prune ({kept})")
        return
    typer.echo(
        f"{'would remove' if dry_run else 'removed'} {len(answer['jobs'])} finished jobs, "
        f"{'would free' if dry_run else 'freed'} {_size(answer['bytes'])} ({kept})"
        + ("; nothing was removed (--dry-run)" if dry_run else "")
    )
    for job in answer["jobs"]:
        typer.echo(
            f"  {job['id'][:8]}  {job['workflow_name']}  {job['status']}  "
            f"ended {str(job['finished_at'])[:19]}  {_size(job['bytes'])}"
        )
    for path in answer["left"]:
        typer.echo(f"! could not remove all of {path} (see its permissions)", err=True)


def _size(count: int) -> str:
    """Bytes as KB, MB or GB with one decimal."""
    for unit, shift in (("GB", 30), ("MB", 20)):
        if count >= 1 << shift:
            return f"{count / (1 << shift):.1f} {unit}"
    return f"{count / 1024:.1f} KB"


@jobs_app.command("cancel")
def jobs_cancel(job_id: JobArg, workspace: WorkspaceOpt = DEFAULT_WORKSPACE) -> None:
    """Stop a job: one not started yet at once, a running one after the documents in progress."""
    with failing_cleanly(), _service(workspace) as service:
        answer = service.jobs.cancel(job_id)
    typer.echo(f"{answer.id}: {answer.message}")


@jobs_app.command("resume")
def jobs_resume(
    job_id: JobArg, workspace: WorkspaceOpt = DEFAULT_WORKSPACE, as_json: JsonOpt = False
) -> None:
    """Continue a stopped or interrupted job in place, in the foreground: the same job id, only
    the documents it had not written yet. Refused for a job still running, one that finished,
    or one whose workflow changed since (see docs/resume.md). Exit codes as for `run`."""
    from ingestflow.cli.output import summary
    from ingestflow.cli.progress import Display
    from ingestflow.service.resume import resume_here

    with failing_cleanly(), _service(workspace) as service:
        prepared = resume_here(service.runs, job_id)
        with Display(as_json, prepared.total) as display:
            record = service.runs.start(prepared, display)
    if as_json:
        echo_json(record)
    else:
        summary(record)
    if record["status"] == "STOPPED":
        raise typer.Exit(130)
    raise typer.Exit(1 if record["failed_files"] else 0)
