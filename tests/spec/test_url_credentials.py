"""Passwords written into URLs: masked in records, refused in a connector's url/uri, whatever
characters they hold."""

from __future__ import annotations

import pytest
from pydantic import SecretStr

from ingestflow.connectors.vectordb import VectorDBConfig
from ingestflow.spec.record import mask_url_credentials
from ingestflow.spec.validate import url_credential_problems

ODD = ["p?ss", "p/ss", "p#ss", "p@ss", "plain"]


@pytest.mark.parametrize("password", ODD)
def test_a_password_in_a_url_is_masked_whatever_it_holds(password: str) -> None:
    text = f"failed at https://ada:{password}@wiki.example.com/wiki/x?y=1 just now"
    masked = mask_url_credentials(text)
    assert password not in masked
    assert masked == "failed at https://ada:********@wiki.example.com/wiki/x?y=1 just now"


@pytest.mark.parametrize(
    "text", ["https://wiki.example.com:8443/wiki?q=a:b", "https://host/p?mail=a@b", "no url"]
)
def test_urls_without_credentials_are_left_as_they_are(text: str) -> None:
    assert mask_url_credentials(text) == text


@pytest.mark.parametrize("password", ODD)
def test_a_connector_uri_with_a_password_is_refused(password: str) -> None:
    config = VectorDBConfig(
        uri=f"https://u:{password}@milvus.example.com:19530",
        user="",
        password=SecretStr(""),
        db_name="",
        collection_name="c",
    )
    problems = url_credential_problems(config)
    assert [p.path for p in problems] == ["config.uri"]
    assert password not in str(problems[0].found)
