"""The documentation site (mkdocs.yml, docs/): it builds with `mkdocs build --strict`, every page of
the navigation is there, nothing is fetched when it is read (opened from file:// in headless
Chromium: no console error on any page, search works), and the generated references are complete:
every config key, metric and command-line option has its description, so adding one without it
fails here. The daemon's own scrape is held to the metrics reference.

(Every fenced block of the pages runs in tests/test_readme.py, as the README's do.)
"""

from __future__ import annotations

import importlib.util
import os
import re
import subprocess
import sys
import urllib.request
from pathlib import Path
from types import ModuleType
from typing import Any

import pytest
import yaml

from browser import chromium
from daemon_harness import DaemonProcess, wait_until, write_config
from swssd.orch.config import Config
from swssd.redis.embedded_redis import EmbeddedRedis, free_port

ROOT = Path(__file__).resolve().parent.parent
#: What the issue asks the site to have, each a page of the navigation.
PAGES = ("Get started", "The library", "Porting swsscommon code", "Writing and testing plugins", "Operating",
         "Config reference", "Metrics reference", "Capture, replay and the report", "Replay on a Spark cluster",
         "CLI reference", "Design", "Benchmarks", "API reference")


def load_references() -> ModuleType:
    """docs/hooks/references.py, the module mkdocs runs as a hook."""
    spec = importlib.util.spec_from_file_location("references", ROOT / "docs" / "hooks" / "references.py")
    assert spec and spec.loader
    module = importlib.util.module_from_spec(spec)
    sys.modules[spec.name] = module  # its dataclasses look their module up
    spec.loader.exec_module(module)
    return module


references = load_references()


def nav() -> dict[str, str]:
    """title -> page, flattened."""
    config = yaml.safe_load((ROOT / "mkdocs.yml").read_text())
    found: dict[str, str] = {}

    def walk(items: list[Any]) -> None:
        for item in items:
            for title, value in item.items():
                if isinstance(value, list):
                    walk(value)
                else:
                    found[title] = value

    walk(config["nav"])
    return found


@pytest.fixture(scope="module")
def site(tmp_path_factory: pytest.TempPathFactory) -> Path:
    """`mkdocs build --strict` into a temp dir, as CI and a contributor run it."""
    out = tmp_path_factory.mktemp("site")
    env = {**os.environ, "NO_MKDOCS_2_WARNING": "1"}
    done = subprocess.run([sys.executable, "-m", "mkdocs", "build", "--strict", "--site-dir", str(out)],
                          capture_output=True, text=True, timeout=300, cwd=ROOT, env=env)
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-5000:]
    assert "WARNING" not in done.stderr, done.stderr[-5000:]
    return out


def html_of(site: Path, page: str) -> str:
    return (site / page.replace(".md", ".html")).read_text()


def test_every_page_is_in_the_navigation_and_built(site: Path) -> None:
    pages = nav()
    assert set(PAGES) <= set(pages), sorted(set(PAGES) - set(pages))
    on_disk = {p.name for p in (ROOT / "docs").glob("*.md")}
    assert on_disk == set(pages.values()), "a page outside the navigation, or a missing one"
    for page in pages.values():
        assert (site / page.replace(".md", ".html")).is_file(), page


def test_nothing_is_fetched_from_the_network(site: Path) -> None:
    """No script, style sheet, font or image from another host: the site reads offline."""
    fetched = re.compile(r"""<(?:script|img|link|iframe)\b[^>]*\b(?:src|href)=["'](?:https?:)?//""", re.I)
    for page in site.rglob("*.html"):
        found = fetched.findall(page.read_text())
        assert not found, f"{page.name}: {found}"
    assert not any("fonts.googleapis" in p.read_text(errors="replace") for p in site.rglob("*.css"))


def test_every_config_key_has_its_description_and_default(site: Path) -> None:
    keys = list(references.config_keys())
    undocumented = [k.dotted for k in keys if not k.description]
    assert not undocumented, f"config keys without a description (a `#:` comment above the field): {undocumented}"
    # every key the model accepts, walked from its JSON schema (not the reference's own walk)
    schema = Config.model_json_schema()

    def accepted(node: dict[str, Any], prefix: str) -> set[str]:
        if "$ref" in node:
            node = schema["$defs"][node["$ref"].split("/")[-1]]
        if "items" in node:
            return accepted(node["items"], prefix)
        for option in node.get("anyOf", []):
            if "$ref" in option or "items" in option:
                return accepted(option, prefix)
        found = set()
        for name, sub in node.get("properties", {}).items():
            section = "$ref" in sub or any("$ref" in option for option in sub.get("anyOf", []))
            if not section:  # a [section] (an optional one too) is a table of keys, not a key;
                found.add(prefix + name)  # a list of tables is both
            found |= accepted(sub, f"{prefix}{name}.")
        return found

    assert {k.dotted for k in keys} == accepted(schema, "")
    page = html_of(site, "config.md")
    for k in keys:
        assert f"<code>{k.key}</code>" in page, k.dotted
    assert "<code>20000</code>" in page  # [daemon] pending_limit's default, as the model has it


def test_every_metric_has_help_and_is_on_the_page(site: Path) -> None:
    found = references.metrics()
    assert {"swssd_popped_total", "swssd_pending", "swssd_handler_latency_seconds", "swssd_ready"} <= \
        {m.name for m in found}
    assert not [m.name for m in found if not m.help]
    page = html_of(site, "metrics.md")
    assert all(f"<code>{m.name}</code>" in page for m in found)


def test_every_command_and_option_has_help_and_is_on_the_page(site: Path) -> None:
    options = list(references.cli_options())
    assert not [f"{o.command} {o.option}" for o in options if not o.help]
    commands = references.cli_commands()
    assert {"swssd run", "swssd produce", "swssd replay report"} <= {c for c, _ in commands}
    assert not [c for c, text in commands if not text]
    page = html_of(site, "cli.md")
    for o in options:
        assert f"<code>{references._cell(o.option)}</code>".replace("\\|", "|") in page.replace("\\|", "|"), o
    for command, _ in commands:
        assert f'<code>{command}</code>' in page, command


def test_an_undocumented_key_option_or_metric_is_caught() -> None:
    """The checks above can fail: a field without a `#:` comment, an option without help."""
    from pydantic import BaseModel

    class Section(BaseModel):
        #: documented
        kept: int = 1
        bare: int = 2

    assert [k.key for k in references.config_keys(Section, "[x]") if not k.description] == ["bare"]
    import argparse

    parser = argparse.ArgumentParser()
    parser.add_argument("--quiet-one")
    assert [references._documented(a) and not a.help for a in parser._actions] == [False, True]


def test_the_daemons_scrape_names_exactly_the_reference_metrics(tmp_path: Path, clean_redis: EmbeddedRedis) -> None:
    """A running daemon with a key-set table, a zmq table and a plugin with timers, scraped: each
    family it exports is in the reference, and each one of the reference is exported."""
    port = free_port()
    config = write_config(tmp_path, clean_redis, {
        "metrics": {"enabled": True, "port": port},
        "orchs": [{"plugin": "orch_plugins:RecordingOrch", "tables": [
            {"db": "APPL_DB", "table": "DOC_T"},
            {"db": "APPL_DB", "table": "DOC_Z", "kind": "zmq", "endpoint": f"tcp://127.0.0.1:{free_port()}"},
        ], "options": {"record": str(tmp_path / "records.jsonl")}},
            {"plugin": "timer_plugins:TimerOrch", "tables": [{"db": "APPL_DB", "table": "DOC_TIMED"}],
             "options": {"record": str(tmp_path / "timers.jsonl")}}],
    })
    daemon = DaemonProcess(config, tmp_path / "log")
    try:
        daemon.wait_ready()
        text = ""

        def scraped() -> bool:
            nonlocal text
            try:
                text = urllib.request.urlopen(f"http://127.0.0.1:{port}/metrics", timeout=5).read().decode()
            except OSError:
                return False
            return "swssd_ready 1.0" in text

        assert wait_until(scraped, 20), text
    finally:
        daemon.stop()
    exported = set(re.findall(r"^# HELP (\S+) ", text, re.M))
    assert exported == {m.name for m in references.metrics()}


def test_the_site_reads_offline_in_chromium(site: Path, tmp_path: Path) -> None:
    """Every page opened from file:// in headless Chromium: no console error, nothing fetched from
    another host; the search box finds a config key (its index is inlined for file://)."""
    driver = chromium(tmp_path, window="1400,1000")
    from selenium.webdriver.common.by import By
    from selenium.webdriver.support.ui import WebDriverWait

    try:
        # 404.html is a web server's page (absolute paths from the site's root), never opened from file://
        for page in sorted(p for p in site.glob("*.html") if p.name != "404.html"):
            driver.get(page.as_uri())
            WebDriverWait(driver, 20).until(lambda d: d.execute_script("return document.readyState") == "complete")
            remote = driver.execute_script(
                "return performance.getEntriesByType('resource').map(e => e.name)"
                ".filter(n => !n.startsWith('file:') && !n.startsWith('data:') && !n.startsWith('blob:'))")
            errors = [e for e in driver.get_log("browser") if e["level"] == "SEVERE"]
            assert errors == [] and remote == [], (page.name, errors, remote)
        driver.get((site / "index.html").as_uri())
        box = driver.find_element(By.CSS_SELECTOR, "input[data-md-component='search-query']")
        box.click()
        box.send_keys("stall_after")
        WebDriverWait(driver, 20).until(
            lambda d: d.find_elements(By.CSS_SELECTOR, ".md-search-result__item"))
        assert [e for e in driver.get_log("browser") if e["level"] == "SEVERE"] == []
    finally:
        driver.quit()


def test_the_readme_is_short_and_links_into_the_site() -> None:
    """Under 200 lines, no figures that go stale; every page of the navigation linked from it, and
    every relative link of it pointing at a file that is there."""
    text = (ROOT / "README.md").read_text()
    assert len(text.splitlines()) < 200
    links = re.findall(r"\]\(([^)#\s]+)(?:#[^)]*)?\)", text)
    local = [link for link in links if "://" not in link]
    assert all((ROOT / link).exists() for link in local), [link for link in local if not (ROOT / link).exists()]
    linked = {Path(link).name for link in local if link.startswith("docs/")}
    pages = set(nav().values()) - {"benchmarks.md"}  # the Benchmarks page is BENCHMARKS.md, linked as that
    assert pages <= linked, sorted(pages - linked)
    assert "BENCHMARKS.md" in local
    assert not re.search(r"\d+(?:\.\d+)?\s*(?:keys/s|changes/s|events/s|ms\b|MB\b|x faster)", text)
