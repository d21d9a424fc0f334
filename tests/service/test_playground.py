"""The playground page in real headless chromium (Debian's chromium and chromium-driver, no
browser download): start a session, send three turns, read each turn's trace, check a file."""

from __future__ import annotations

import shutil
import tempfile
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from pedrag.runtime.store.session_store import SessionStore
from tests.service.servers import running_server

CHROMIUM = "/usr/bin/chromium"
CHROMEDRIVER = "/usr/bin/chromedriver"

pytestmark = pytest.mark.skipif(
    not (Path(CHROMIUM).exists() and Path(CHROMEDRIVER).exists()),
    reason="Debian's chromium and chromium-driver are not installed (.ci/run installs them)",
)


@pytest.fixture(scope="module")
def page(tmp_path_factory: pytest.TempPathFactory) -> Iterator[dict[str, Any]]:
    from selenium import webdriver
    from selenium.webdriver.chrome.service import Service

    folder = tmp_path_factory.mktemp("playground")
    db = str(folder / "db.sqlite")
    with SessionStore(db) as store:
        store.tenants.create("designers")
        key = store.tenants.issue_key("designers", role="instructor")
        learner_key = store.tenants.issue_key("designers", role="learner")
    profile = tempfile.mkdtemp(prefix="pedrag-chromium-")
    options = webdriver.ChromeOptions()
    options.binary_location = CHROMIUM
    for flag in (
        "--headless",
        "--no-sandbox",
        "--disable-gpu",
        "--disable-background-networking",
        "--disable-component-update",
        "--disable-sync",
        "--no-first-run",
        "--disable-dev-shm-usage",
        f"--user-data-dir={profile}",
    ):
        options.add_argument(flag)
    with running_server(db, workers=1, log=folder / "serve.log") as base:
        driver = webdriver.Chrome(service=Service(CHROMEDRIVER), options=options)
        try:
            driver.set_page_load_timeout(60)
            yield {
                "driver": driver,
                "base": base,
                "key": key,
                "learner_key": learner_key,
                "db": db,
                "folder": folder,
            }
        finally:
            driver.quit()
            shutil.rmtree(profile, ignore_errors=True)


def test_three_turns_in_the_playground_show_their_trace(page: dict[str, Any]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support import expected_conditions as ready
    from selenium.webdriver.support.select import Select
    from selenium.webdriver.support.ui import WebDriverWait

    driver = page["driver"]
    wait = WebDriverWait(driver, 60)
    driver.get(page["base"] + "/")  # redirects to /playground/
    assert driver.title == "pedrag playground"
    driver.find_element(By.ID, "api-key").send_keys(page["key"], Keys.TAB)  # change on blur
    wait.until(lambda d: "theories loaded" in d.find_element(By.ID, "status").text)
    Select(driver.find_element(By.ID, "theory")).select_by_value("socratic")
    Select(driver.find_element(By.ID, "exercise")).select_by_value("intro/mult_7x8")
    driver.find_element(By.ID, "start").click()
    wait.until(lambda d: d.find_element(By.ID, "session-id").text.startswith("session "))
    session_id = driver.find_element(By.ID, "session-id").get_attribute("data-session-id")

    messages = ["How do I start?", "Is it 54?", "Just tell me the answer."]
    for index, message in enumerate(messages, 1):
        wait.until(ready.element_to_be_clickable((By.ID, "send")))
        box = driver.find_element(By.ID, "message")
        box.send_keys(message)
        driver.find_element(By.ID, "send").click()
        wait.until(lambda d, i=index: f"turn {i} committed" in d.find_element(By.ID, "status").text)

    traces = driver.find_elements(By.CSS_SELECTOR, "#trace .turn-trace")
    assert [trace.get_attribute("data-turn") for trace in traces] == ["3", "2", "1"]

    import httpx

    audit = httpx.get(
        f"{page['base']}/v1/sessions/{session_id}/audit",
        headers={"Authorization": f"Bearer {page['key']}"},
    ).json()["records"]
    assert [record["turn"] for record in audit] == [1, 2, 3]
    for trace in traces:
        record = audit[int(trace.get_attribute("data-turn")) - 1]
        fields = {
            dd.get_attribute("data-field"): dd.text for dd in trace.find_elements(By.TAG_NAME, "dd")
        }
        choice = record["choice"]
        assert fields["action"].startswith(f"{choice['action']} ({choice['rung']})")
        assert fields["eligible rules"] == (", ".join(choice["eligible"]) or "none")
        assert fields["matched rules"] == (", ".join(choice["matched"]) or "none")
        assert fields["contract"].startswith(f"ceiling {record['contract']['ceiling']}")
        assert fields["detector"] == "clear"
        assert fields["why"] == choice["reason"]
    # For a person to look at: the chat, the trace and its ceiling explanation.
    driver.set_window_size(1400, 1000)
    shot = page["folder"] / "playground-three-turns.png"
    assert driver.save_screenshot(str(shot)) and shot.stat().st_size > 10_000
    print(f"playground screenshot: {shot}")
    for trace in traces:
        labels = [dt.text for dt in trace.find_elements(By.TAG_NAME, "dt")]
        assert {"ceiling set by", "step trace", "classified", "grade"} <= set(labels)
    students = driver.find_elements(By.CSS_SELECTOR, "#transcript li.student")
    assert [li.text.split(":")[0] for li in students] == [f"student (turn {i})" for i in (1, 2, 3)]
    # The key stays in the page's memory: nothing in localStorage or sessionStorage.
    stored = driver.execute_script(
        "return Object.keys(localStorage).concat(Object.keys(sessionStorage))"
    )
    assert stored == []
    page_headers = httpx.get(f"{page['base']}/playground/").headers
    assert "frame-ancestors 'none'" in page_headers["content-security-policy"]
    assert "script-src 'self'" in page_headers["content-security-policy"]
    assert page_headers["x-frame-options"] == "DENY"
    replies = driver.find_elements(By.CSS_SELECTOR, "#transcript li.tutor")
    assert [reply.text for reply in replies] == [record["tutor"] for record in audit]
    assert all("56" not in reply.text for reply in replies)


def test_the_editor_pane_shows_the_checks_diagnostics(page: dict[str, Any]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    driver = page["driver"]
    source = driver.find_element(By.ID, "theory-source")
    source.clear()
    source.send_keys("pedrag: 1\ntheory: {id: draft, name: Draft}\nmetrics: {}\n")
    driver.find_element(By.ID, "check").click()
    WebDriverWait(driver, 60).until(lambda d: d.find_elements(By.ID, "check-summary"))
    summary = driver.find_element(By.ID, "check-summary").text
    items = [item.text for item in driver.find_elements(By.CSS_SELECTOR, "#diagnostics li")]
    errors = sum(": error [" in item for item in items)
    assert errors >= 2 and summary.startswith(f"{errors} error(s), ")
    assert any(
        item.startswith("playground.yaml:") and "[syntax-error]" in item and "actions" in item
        for item in items
    ), items


def test_a_learner_key_is_told_why_before_any_session_is_created(page: dict[str, Any]) -> None:
    from selenium.webdriver.common.by import By
    from selenium.webdriver.common.keys import Keys
    from selenium.webdriver.support.ui import WebDriverWait

    def sessions() -> int:
        with SessionStore(page["db"]) as store:
            return len(store.for_tenant("designers").list_sessions(1000))

    driver = page["driver"]
    wait = WebDriverWait(driver, 60)
    driver.get(page["base"] + "/playground/")
    before = sessions()
    driver.find_element(By.ID, "api-key").send_keys(page["learner_key"], Keys.TAB)
    wait.until(lambda d: "role is learner" in d.find_element(By.ID, "status").text)
    assert "needs an instructor key" in driver.find_element(By.ID, "status").text
    driver.execute_script("document.getElementById('status').textContent = ''")
    driver.find_element(By.ID, "start").click()  # the refusal is said again, nothing sent
    wait.until(lambda d: "role is learner" in d.find_element(By.ID, "status").text)
    assert driver.find_element(By.ID, "session-id").text == ""
    assert sessions() == before  # the learner's key created nothing it could not read
