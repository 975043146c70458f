"""Enrichment nodes against a real HTTP model server on loopback (both protocols), checking
what is sent and what lands in the elements, and that faults fail only the affected document."""

from __future__ import annotations

import base64
import io
import json
import threading
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from ingestflow.elements import Document
from ingestflow.errors import EnvironmentProblem, StageError
from ingestflow.providers import client as client_module
from ingestflow.providers.config import endpoints_from_env
from ingestflow.spec.settings import EmptySettings, NERSettings
from ingestflow.stages.base import NodeInputs, RunContext
from ingestflow.stages.prompter import PrompterStage
from tests.fakes.models import FakeModelServer, Fault, Request

KEY = "sk-test-0123456789"


def png() -> str:
    from PIL import Image, ImageDraw

    image = Image.new("RGB", (120, 40), "white")
    ImageDraw.Draw(image).text((5, 10), "PUMP 7", fill="black")
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    return base64.b64encode(buffer.getvalue()).decode()


IMAGE = png()


@pytest.fixture
def server() -> Iterator[FakeModelServer]:
    with FakeModelServer(key=KEY) as fake:
        yield fake


@pytest.fixture(autouse=True)
def fast_retries(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(client_module, "BACKOFF", 0.01)


def env(server: FakeModelServer, **extra: str) -> dict[str, str]:
    return {
        "INGESTFLOW_PROVIDER_C_BASE_URL": server.openai_url,
        "INGESTFLOW_PROVIDER_C_API_KEY": KEY,
        "INGESTFLOW_PROVIDER_A_BASE_URL": server.anthropic_url,
        "INGESTFLOW_PROVIDER_A_API_KEY": KEY,
        **extra,
    }


def stage(
    subtype: str,
    environ: dict[str, str],
    settings: Any = None,
    **inputs: Any,
) -> PrompterStage:
    """An open enrichment stage; `inputs`: what flows into it (`NodeInputs`: image_types,
    tasks, languages) as a plan would work them out."""
    ctx = RunContext(endpoints=endpoints_from_env(environ))
    st = PrompterStage("Enricher", subtype, settings or EmptySettings(), ctx, NodeInputs(**inputs))
    st.precheck()
    st.open()
    return st


def element(kind: str, text: str = "", image: bool = True, **metadata: Any) -> dict[str, Any]:
    meta: dict[str, Any] = {"page_number": 1}
    if image:
        meta.update(image_base64=IMAGE, image_mime_type="image/png")
    meta.update(metadata)
    return {"type": kind, "element_id": f"id-{kind}-{text[:8]}", "text": text, "metadata": meta}


def doc(*elements: dict[str, Any], name: str = "report.pdf") -> Document:
    return Document(name, name, name, elements=list(elements))


# --- what is sent, and where the answer lands ---------------------------------------------------
def test_image_description_sends_the_image_and_writes_json_text(server: FakeModelServer):
    server.reply(
        lambda r: '```json\n{"type": "diagram", "description": "A pump", "texts": ["PUMP 7"]}\n```'
    )
    out = stage("provider_c_image_description", env(server)).process(
        doc(element("Image"), element("NarrativeText", "Body text", image=False))
    )
    (request,) = server.requests
    assert request.path == "/v1/chat/completions" and request.model == "gpt-4o"
    assert request.headers["authorization"] == f"Bearer {KEY}"
    assert request.images == [IMAGE] and request.image_formats == ["image_url"]
    described = json.loads(out.elements[0]["text"])
    assert described == {"type": "diagram", "description": "A pump", "texts": ["PUMP 7"]}
    assert out.elements[0]["metadata"]["image_base64"] == IMAGE  # the image is kept
    assert out.elements[1]["text"] == "Body text"


def test_the_anthropic_protocol_sends_images_in_its_own_format(server: FakeModelServer):
    server.reply(lambda r: "A table of pump pressures by month.")
    out = stage("provider_a_table_description", env(server)).process(
        doc(element("Table", "raw cells", text_as_html="<table><tr><td>1</td></tr></table>"))
    )
    (request,) = server.requests
    assert request.path == "/v1/messages" and request.model == "claude-sonnet-4-20250514"
    assert request.image_formats == ["image"] and request.images == [IMAGE]
    assert "<td>1</td>" in request.text  # the cells read from the page go along
    table = out.elements[0]
    assert table["text"] == "A table of pump pressures by month."
    assert table["metadata"]["text_as_html"] == "<table><tr><td>1</td></tr></table>"


def test_the_model_variable_replaces_the_workflows_model(server: FakeModelServer):
    server.reply(lambda r: "<table><tr><td>a</td></tr></table>")
    st = stage("provider_c_table2html", env(server, INGESTFLOW_PROVIDER_C_MODEL="llava:13b"))
    out = st.process(doc(element("Table", "a")))
    assert server.requests[0].model == "llava:13b"
    assert out.elements[0]["metadata"]["text_as_html"] == "<table><tr><td>a</td></tr></table>"


def test_ner_default_prompt_and_fenced_json(server: FakeModelServer):
    answer = {
        "items": [
            {"entity": "Ada Lovelace", "type": "PERSON"},
            {"entity": "London", "type": "LOCATION"},
        ],
        "relationships": [{"from": "Ada Lovelace", "relationship": "lives_in", "to": "London"}],
    }
    server.reply(lambda r: f"Here you go:\n```json\n{json.dumps(answer)}\n```")
    out = stage("provider_c_ner", env(server)).process(
        doc(element("NarrativeText", "Ada Lovelace lived in London.", image=False))
    )
    prompt = server.requests[0].text
    for part in (
        "PERSON",
        "works_for",
        "[START OF TEXT]",
        "Ada Lovelace lived in London.",
        "[END OF TEXT]",
    ):
        assert part in prompt
    assert "{{text}}" not in prompt
    assert out.elements[0]["metadata"]["entities"] == answer


def test_ner_override_is_the_prompt_sent(server: FakeModelServer):
    override = (
        "Find people only.\nPERSON\nworks_for\n[START OF TEXT]\n{{text}}\n[END OF TEXT]\n"
        'Answer {"items": [], "relationships": []}'
    )
    settings = NERSettings.model_validate(
        {"prompt_interface_overrides": {"prompt": {"user": override}}}
    )
    server.reply(lambda r: '{"items": [{"entity": "Bo", "type": "PERSON"}], "relationships": []}')
    stage("provider_a_ner", env(server), settings).process(
        doc(element("Title", "Bo wrote this", image=False))
    )
    assert server.requests[0].text.startswith("Find people only.\nPERSON")
    assert "Bo wrote this" in server.requests[0].text


def test_bad_json_fails_the_document_with_the_node_and_provider(server: FakeModelServer):
    server.reply(lambda r: "I found some people, e.g. Ada.")
    with pytest.raises(
        StageError,
        match=r"Enricher: report.pdf: provider_c answered something unusable for ner: no JSON",
    ):
        stage("provider_c_ner", env(server)).process(doc(element("Title", "Ada", image=False)))


def test_generative_ocr_reads_only_the_listed_types_and_skips_described_ones(
    server: FakeModelServer,
):
    server.reply(lambda r: "PUMP 7")
    st = stage(
        "provider_a_ocr",
        env(server),
        image_types=("Image", "Table", "NarrativeText"),
        tasks=("image_description", "ocr"),
    )
    out = st.process(
        doc(
            element("Image", "old"),  # handled by the image description node
            element("Table", "old"),
            element("NarrativeText", "old"),
            element("Title", "old"),  # not listed
        )
    )
    assert [e["text"] for e in out.elements] == ["old", "PUMP 7", "PUMP 7", "old"]
    assert len(server.requests) == 2


def test_generative_ocr_asks_a_formula_for_latex_without_its_delimiters(server: FakeModelServer):
    from ingestflow.providers.prompts import FORMULA_PROMPT, OCR_PROMPT

    server.reply(lambda r: "\\[ e^{i\\pi}+1=0 \\]" if r.text == FORMULA_PROMPT else "PUMP 7")
    st = stage("provider_c_ocr", env(server), image_types=("Formula", "Image"))
    out = st.process(doc(element("Formula", "e iπ + 1 = 0"), element("Image", "old")))
    formula, image = out.elements
    assert formula["text"] == formula["metadata"]["latex"] == "e^{i\\pi}+1=0"
    assert image["text"] == "PUMP 7" and "latex" not in image["metadata"]
    assert sorted(r.text for r in server.requests) == sorted([FORMULA_PROMPT, OCR_PROMPT])
    assert out.warnings == []


def test_an_empty_latex_answer_fails_the_document_naming_the_node(server: FakeModelServer):
    server.reply(lambda r: "$$ $$")
    st = stage("provider_c_ocr", env(server), image_types=("Formula",))
    with pytest.raises(StageError, match=r"answered something unusable for ocr: no LaTeX"):
        st.process(doc(element("Formula", "x")))


def test_requests_of_one_document_run_concurrently_within_the_limit(server: FakeModelServer):
    slow: list[Request] = []

    def answer(request: Request) -> str:
        slow.append(request)
        import time

        time.sleep(0.1)
        return '{"items": [], "relationships": []}'

    server.reply(answer)
    st = stage("provider_c_ner", env(server, INGESTFLOW_PROVIDER_C_CONCURRENCY="4"))
    st.process(doc(*(element("NarrativeText", f"text {i}", image=False) for i in range(12))))
    assert len(server.requests) == 12
    assert 2 <= server.max_in_flight <= 4


# --- faults ---------------------------------------------------------------------------------------
def test_429_with_retry_after_and_5xx_are_retried(server: FakeModelServer):
    server.fault(Fault(429, headers={"Retry-After": "0.1"}), Fault(502), Fault(500))
    server.reply(lambda r: "PUMP 7")
    out = stage("provider_c_ocr", env(server), image_types=("Image",)).process(
        doc(element("Image", "x"))
    )
    assert out.elements[0]["text"] == "PUMP 7"
    assert len(server.requests) == 4


def test_a_timeout_is_retried_then_the_document_fails_in_one_line(server: FakeModelServer):
    server.fault(Fault(delay=2.0, times=None))
    st = stage(
        "provider_c_ocr",
        env(server, INGESTFLOW_PROVIDER_C_TIMEOUT="0.5"),
        image_types=("Image",),
    )
    with pytest.raises(StageError, match=r"no complete answer within 0\.5 s") as caught:
        st.process(doc(element("Image", "x")))
    assert len(server.requests) == client_module.ATTEMPTS
    assert "\n" not in str(caught.value)


def finish_within(seconds: float, call: Callable[[], Any]) -> Any:
    """`call()`'s result (or its exception), failing the test loudly when it has not returned
    after `seconds` (the call is left to its daemon thread, not waited for)."""
    outcome: list[Any] = []

    def target() -> None:
        try:
            outcome.append((True, call()))
        except BaseException as exc:
            outcome.append((False, exc))

    thread = threading.Thread(target=target, daemon=True)
    thread.start()
    thread.join(seconds)
    if not outcome:
        pytest.fail(f"still waiting for the model server after {seconds} s")
    ok, value = outcome[0]
    if not ok:
        raise value
    return value


@pytest.mark.parametrize(
    ("subtype", "headers"),
    [("provider_c_ner", False), ("provider_a_ner", True)],
    ids=["openai-body", "anthropic-headers"],
)
def test_a_trickling_server_fails_at_the_timeout_not_at_its_last_byte(
    server: FakeModelServer, monkeypatch: pytest.MonkeyPatch, subtype: str, headers: bool
):
    """INGESTFLOW_<P>_TIMEOUT bounds the whole request: a server that sends one byte every
    0.5 s (its answer would take ~20 minutes) fails each try when the timeout is up."""
    monkeypatch.setattr(client_module, "ATTEMPTS", 2)
    server.reply(lambda r: "x" * 2400)
    server.trickle(0.5, headers=headers)
    environ = env(server, INGESTFLOW_PROVIDER_C_TIMEOUT="2", INGESTFLOW_PROVIDER_A_TIMEOUT="2")
    st = stage(subtype, environ)
    variable = "INGESTFLOW_PROVIDER_" + subtype.split("_")[1].upper() + "_TIMEOUT"
    document = doc(element("NarrativeText", "Ada", image=False))
    with pytest.raises(StageError, match=rf"within 2 s \(2 tries\).*raise {variable}") as caught:
        finish_within(60, lambda: st.process(document))
    assert len(server.requests) == 2 and KEY not in str(caught.value)


def test_a_server_error_that_persists_fails_the_document_naming_the_provider(
    server: FakeModelServer,
):
    server.fault(Fault(500, times=None))
    with pytest.raises(
        StageError, match=r"provider_c \(openai protocol at http://127\.0\.0\.1:\d+/v1\): HTTP 500"
    ):
        stage("provider_c_table2html", env(server)).process(doc(element("Table", "a")))


def test_the_api_key_never_reaches_an_error(server: FakeModelServer):
    server.reply(
        lambda r: Fault(400, body=json.dumps({"error": {"message": f"bad key {KEY}"}}).encode())
    )
    with pytest.raises(StageError) as caught:
        stage("provider_c_table2html", env(server)).process(doc(element("Table", "a")))
    assert KEY not in str(caught.value) and "***" in str(caught.value)


def test_a_wrong_key_is_a_clear_401(server: FakeModelServer):
    with pytest.raises(StageError, match="HTTP 401: invalid api key"):
        stage(
            "provider_c_table2html", env(server, INGESTFLOW_PROVIDER_C_API_KEY="sk-wrong")
        ).process(doc(element("Table", "a")))


# --- configuration ------------------------------------------------------------------------------
def test_no_endpoint_stops_at_precheck_naming_the_variable():
    ctx = RunContext(endpoints={})
    st = PrompterStage("Enricher", "provider_c_ner", NERSettings(), ctx)
    with pytest.raises(EnvironmentProblem, match="set INGESTFLOW_PROVIDER_C_BASE_URL"):
        st.precheck()


def free_port() -> int:
    import socket

    with socket.socket() as sock:
        sock.bind(("127.0.0.1", 0))
        return int(sock.getsockname()[1])


@pytest.mark.parametrize(
    "variable", ["INGESTFLOW_PROVIDER_C_BASE_URL", "INGESTFLOW_OPENAI_BASE_URL"]
)
def test_a_model_server_that_is_not_running_stops_at_precheck(variable: str):
    # before any document is partitioned, not after each one; the variable the user set named
    url = f"http://127.0.0.1:{free_port()}/v1"
    ctx = RunContext(endpoints=endpoints_from_env({variable: url}))
    st = PrompterStage("Enricher", "provider_c_table_description", EmptySettings(), ctx)
    with pytest.raises(EnvironmentProblem, match=rf"no model server answers at {url}") as err:
        st.precheck()
    assert f"set {variable} to where it runs" in str(err.value)
    assert "cannot connect (Connection refused)" in str(err.value)


def test_a_running_model_server_passes_precheck_with_nothing_sent(server: FakeModelServer):
    ctx = RunContext(endpoints=endpoints_from_env(env(server)))
    PrompterStage("Enricher", "provider_c_table_description", EmptySettings(), ctx).precheck()
    assert server.requests == []


def test_vendor_spelled_variables_configure_the_same_provider(server: FakeModelServer):
    endpoints = endpoints_from_env({"INGESTFLOW_OPENAI_BASE_URL": server.openai_url})
    assert set(endpoints) == {"provider_c"} and endpoints["provider_c"].protocol == "openai"
    a = endpoints_from_env({"INGESTFLOW_ANTHROPIC_BASE_URL": server.anthropic_url})
    assert a["provider_a"].protocol == "anthropic"


def test_a_bad_protocol_is_named():
    with pytest.raises(EnvironmentProblem, match="INGESTFLOW_PROVIDER_C_PROTOCOL='grpc'"):
        endpoints_from_env(
            {"INGESTFLOW_PROVIDER_C_BASE_URL": "http://x", "INGESTFLOW_PROVIDER_C_PROTOCOL": "grpc"}
        )


# --- offline backends ---------------------------------------------------------------------------
LOCAL = {"INGESTFLOW_PROVIDER_C_BASE_URL": "local", "INGESTFLOW_PROVIDER_C_PROTOCOL": "local"}


@pytest.mark.slow
def test_local_ner_uses_spacy_and_says_so():
    st = stage("provider_c_ner", LOCAL)
    out = st.process(
        doc(
            element(
                "NarrativeText", "Ada Lovelace met Charles Babbage in London in 1833.", image=False
            )
        )
    )
    metadata = out.elements[0]["metadata"]
    items = {(i["entity"], i["type"]) for i in metadata["entities"]["items"]}
    assert ("London", "LOCATION") in items and ("1833", "DATE") in items
    assert any(kind == "PERSON" for _, kind in items)
    assert metadata["entities"]["relationships"] == []
    assert "spaCy" in metadata["enriched_by"]["Enricher"]


@pytest.mark.slow
def test_local_ocr_uses_tesseract_and_says_so():
    from PIL import Image, ImageDraw, ImageFont

    image = Image.new("RGB", (600, 120), "white")
    ImageDraw.Draw(image).text(
        (20, 30), "Harbour pump seven", fill="black", font=ImageFont.load_default(size=48)
    )
    buffer = io.BytesIO()
    image.save(buffer, format="PNG")
    encoded = base64.b64encode(buffer.getvalue()).decode()
    st = stage("provider_c_ocr", LOCAL, image_types=("Image",))
    out = st.process(doc(element("Image", "", image_base64=encoded)))
    assert "Harbour pump seven" in out.elements[0]["text"]
    assert "tesseract" in out.elements[0]["metadata"]["enriched_by"]["Enricher"]


@pytest.mark.slow
def test_local_ocr_of_a_formula_gives_text_and_says_there_is_no_latex():
    from ingestflow.stages.prompter import LOCAL_FORMULAS

    st = stage("provider_c_ocr", LOCAL, image_types=("Formula",))
    out = st.process(doc(element("Formula", "x"), element("Formula", "y")))
    assert all("latex" not in e["metadata"] for e in out.elements)
    assert out.warnings == [LOCAL_FORMULAS]


def test_local_protocol_refuses_tasks_that_need_a_model():
    with pytest.raises(EnvironmentProblem, match="offline backends do only NER"):
        stage("provider_c_image_description", LOCAL)


# --- review findings ----------------------------------------------------------------------------
def test_one_spelling_per_provider_never_mixes_keys():
    endpoints = endpoints_from_env(
        {
            "INGESTFLOW_PROVIDER_C_BASE_URL": "http://127.0.0.1:9/v1",
            "INGESTFLOW_OPENAI_API_KEY": "sk-for-the-real-api",
        }
    )
    assert endpoints["provider_c"].api_key is None
    only_embedder = endpoints_from_env({"INGESTFLOW_BEDROCK_BASE_URL": "http://127.0.0.1:9/v1"})
    assert set(only_embedder) == {"bedrock"}  # not a PROVIDER_B chat endpoint too


@pytest.mark.parametrize("value", ["inf", "nan", "-3"])
def test_unusable_numbers_are_named(value: str):
    with pytest.raises(EnvironmentProblem, match="INGESTFLOW_PROVIDER_C_CONCURRENCY"):
        endpoints_from_env(
            {
                "INGESTFLOW_PROVIDER_C_BASE_URL": "http://x/v1",
                "INGESTFLOW_PROVIDER_C_CONCURRENCY": value,
            }
        )


def test_a_long_retry_after_fails_at_once_instead_of_waiting(
    server: FakeModelServer, monkeypatch: pytest.MonkeyPatch
):
    server.fault(Fault(503, times=None, headers={"Retry-After": "3600"}))
    waits: list[float] = []
    wait = client_module._wait

    def no_wait(state: Any) -> float:
        waits.append(wait(state))
        return 0.0

    monkeypatch.setattr(client_module, "_wait", no_wait)
    with pytest.raises(StageError, match="HTTP 503"):
        stage("provider_c_table2html", env(server)).process(doc(element("Table", "a")))
    # one request, no retry, and no wait was asked for (honouring the hour would have waited
    # MAX_RETRY_AFTER, its cap): measured by what the retry loop asked, not by a clock
    assert len(server.requests) == 1
    assert waits == []


def test_after_one_element_fails_the_others_are_not_requested(server: FakeModelServer):
    server.fault(Fault(500, times=None))
    st = stage("provider_c_ner", env(server, INGESTFLOW_PROVIDER_C_CONCURRENCY="1"))
    with pytest.raises(StageError, match="HTTP 500"):
        st.process(doc(*(element("NarrativeText", f"text {i}", image=False) for i in range(12))))
    assert len(server.requests) == client_module.ATTEMPTS  # the first element's tries only


def test_credentials_in_a_url_never_reach_a_message(server: FakeModelServer):
    url = server.openai_url.replace("http://", "http://user:hunter2@") + "?api-key=hunter2"
    server.fault(Fault(500, times=None))
    st = stage("provider_c_table2html", {"INGESTFLOW_PROVIDER_C_BASE_URL": url})
    with pytest.raises(StageError) as caught:
        st.process(doc(element("Table", "a")))
    assert "hunter2" not in str(caught.value)
