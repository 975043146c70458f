"""`ingestflow vectordb create-collection` and `search` through CliRunner, on Milvus Lite."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
from pydantic import SecretStr
from typer.testing import CliRunner

from ingestflow.cli import vectordb as cli_vectordb
from ingestflow.cli.vectordb import app
from ingestflow.connectors.vectordb import VectorDBConfig
from ingestflow.connectors.vectordb_destination import VectorDBDestination
from ingestflow.elements import Document
from ingestflow.service import admin

runner = CliRunner()
SECRET = "cli-S3cret-pw"


@pytest.fixture(scope="module")
def db(tmp_path_factory: pytest.TempPathFactory) -> str:
    return str(tmp_path_factory.mktemp("cli-milvus") / "cli.db")


def invoke(*args: str, env: dict[str, str] | None = None) -> Any:
    return runner.invoke(app, list(args), env=env)


def one_hot(i: int, dim: int = 384) -> list[float]:
    return [1.0 if j == i else 0.0 for j in range(dim)]


def fill(db: str, collection: str, docs: dict[str, list[tuple[str, list[float]]]]) -> None:
    """Write documents (record id -> [(text, vector)]) through the destination."""
    config = VectorDBConfig(
        user="", uri=db, db_name="", password=SecretStr(""), collection_name=collection
    )
    dest = VectorDBDestination(config)
    dest.precheck(len(next(iter(docs.values()))[0][1]))
    for record_id, items in docs.items():
        elements = [
            {
                "type": "NarrativeText",
                "element_id": f"{record_id}-{i}",
                "text": text,
                "metadata": {"filename": f"{record_id}.txt"},
                "embeddings": vector,
            }
            for i, (text, vector) in enumerate(items)
        ]
        dest.write(Document(record_id, record_id, f"{record_id}.txt", elements=elements))
    dest.close()


def test_help_lists_the_commands_and_import_stays_light() -> None:
    result = invoke("--help")
    assert result.exit_code == 0
    assert "create-collection" in result.output and "search" in result.output
    probe = "import sys, ingestflow.cli.vectordb; print('pymilvus' in sys.modules)"
    out = subprocess.run([sys.executable, "-c", probe], capture_output=True, text=True, check=True)
    assert out.stdout.strip() == "False"


def test_create_collection_minimal_and_recommended(db: str) -> None:
    result = invoke("create-collection", "--uri", db, "--collection", "docs")
    assert result.exit_code == 0, result.output
    assert "created collection 'docs' (minimal schema, COSINE index on embeddings)" in result.output
    for line in [
        "element_id: VARCHAR(max_length=200), primary key",
        "embeddings: FLOAT_VECTOR(dim=384)",
        "record_id: VARCHAR(max_length=200)",
        "text: VARCHAR(max_length=65535)",
        "type: VARCHAR(max_length=200), nullable",
    ]:
        assert line in result.output
    result = invoke(
        "create-collection", "--uri", db, "--collection", "rich", "--schema", "recommended"
    )
    assert result.exit_code == 0, result.output
    assert "languages: ARRAY<VARCHAR>(max_capacity=10), nullable" in result.output
    assert "entities_relationships: JSON, nullable" in result.output


def test_create_collection_that_exists_is_a_connector_problem(db: str) -> None:
    invoke("create-collection", "--uri", db, "--collection", "twice", "--dim", "8")
    result = invoke("create-collection", "--uri", db, "--collection", "twice", "--dim", "8")
    assert result.exit_code == 3
    assert "collection 'twice' already exists" in result.output


@pytest.mark.parametrize(
    ("args", "code", "message"),
    [
        (["--collection", "c", "--schema", "huge"], 2, "Invalid value for '--schema'"),
        (["--collection", "c", "--dim", "0"], 2, "dim must be between 1 and 32768"),
        (["--collection", "c", "--dim", "many"], 2, "Invalid value for '--dim'"),
        (["--collection", "bad name"], 2, "collection name 'bad name' is invalid"),
        (["--collection", "c", "--uri", "{tmp}/store.sqlite"], 3, "Lite path must end in .db"),
    ],
    ids=["schema", "dim-zero", "dim-word", "name", "lite-suffix"],
)
def test_create_collection_bad_input(
    db: str, tmp_path: Path, args: list[str], code: int, message: str
) -> None:
    args = [a.format(tmp=tmp_path) for a in args]
    uri = [] if "--uri" in args else ["--uri", db]
    result = invoke("create-collection", *uri, *args)
    assert result.exit_code == code, result.output
    assert message in result.output


def test_password_from_the_environment_is_never_printed() -> None:
    result = invoke(
        "create-collection",
        "--uri",
        "http://127.0.0.1:1",
        "--collection",
        "c",
        "--user",
        "bob",
        env={cli_vectordb.PASSWORD_ENV: SECRET},
    )
    assert result.exit_code == 3
    assert "cannot open Milvus at http://127.0.0.1:1" in result.output
    assert SECRET not in result.output


def test_search_prints_ranked_hits(db: str, monkeypatch: pytest.MonkeyPatch) -> None:
    invoke("create-collection", "--uri", db, "--collection", "hits", "--schema", "recommended")
    fill(
        db,
        "hits",
        {
            "cats": [("Cats purr and sleep all day long.", one_hot(0))],
            "dogs": [("Dogs bark at the postman.\nEvery single morning.", one_hot(1))],
        },
    )
    monkeypatch.setattr(admin, "embed_query", lambda text: one_hot(1))
    result = invoke("search", "--uri", db, "--collection", "hits", "barking dogs", "-k", "2")
    assert result.exit_code == 0, result.output
    lines = result.output.splitlines()
    assert lines[0] == " 1. 1.0000  record dogs  file dogs.txt  element dogs-0"
    assert lines[1] == "    Dogs bark at the postman. Every single morning."
    assert lines[2].startswith(" 2. 0.0000  record cats  file cats.txt")


def test_search_on_a_missing_collection_fails_before_loading_the_model(
    db: str, monkeypatch: pytest.MonkeyPatch
) -> None:
    def no_model(text: str) -> list[float]:
        raise AssertionError("the model must not load")

    monkeypatch.setattr(admin, "embed_query", no_model)
    result = invoke("search", "--uri", db, "--collection", "absent", "anything")
    assert result.exit_code == 3
    assert "collection 'absent' does not exist" in result.output
    assert "ingestflow vectordb create-collection" in result.output
    invoke("create-collection", "--uri", db, "--collection", "small", "--dim", "4")
    result = invoke("search", "--uri", db, "--collection", "small", "anything")
    assert result.exit_code == 3
    assert "has 4-dimensional embeddings; the local model makes 384-dimensional" in result.output


@pytest.mark.parametrize(
    ("extra", "message"),
    [
        (["--model", "provider/big-model"], "cannot embed a query offline"),
        (["-k", "0"], "Invalid value for '-k'"),
    ],
    ids=["remote-model", "k-zero"],
)
def test_search_bad_input(db: str, extra: list[str], message: str) -> None:
    result = invoke("search", "--uri", db, "--collection", "docs", "query", *extra)
    assert result.exit_code == 2
    assert message in result.output


@pytest.mark.slow
def test_search_with_the_local_model(db: str) -> None:
    from ingestflow.stages.embed import encode

    texts = {
        "pets": "Cats and kittens are popular household pets that purr.",
        "finance": "The central bank raised interest rates to fight inflation.",
        "space": "The rocket carried a satellite into low Earth orbit.",
    }
    vectors = encode(list(texts.values()))
    invoke("create-collection", "--uri", db, "--collection", "semantic")
    fill(
        db,
        "semantic",
        {
            rid: [(text, [float(x) for x in vec])]
            for (rid, text), vec in zip(texts.items(), vectors, strict=True)
        },
    )
    result = invoke("search", "--uri", db, "--collection", "semantic", "monetary policy", "-k", "3")
    assert result.exit_code == 0, result.output
    assert result.output.splitlines()[0].split()[3] == "finance"
