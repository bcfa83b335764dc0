"""The documentation site as a reader meets it (make docs-test, after make docs has built build/site with --strict):
served over HTTP and opened in headless Chromium (Debian's chromium, driven by playwright), the home page, the guide
and an API page render with no console error, no failed request and no script error, and search finds `dropout`.
Every public name has an entry in the built reference, and every `docs: <page>/` reference of the package's
docstrings and messages is a page of the built site with that heading.

`make test` leaves this module out (it needs the site and a browser); `make docs-test` requires both
(RNGX_REQUIRE_DOCS_SITE=1): without them it fails there, and skips elsewhere, saying why."""
import functools
import html
import http.server
import os
import re
import shutil
import sys
import threading
import zlib
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SITE = ROOT / "build" / "site"
sys.path.insert(0, str(ROOT / "tools"))
import docs_names  # noqa: E402

REQUIRED = os.environ.get("RNGX_REQUIRE_DOCS_SITE") == "1"
CHROMIUM = os.environ.get("RNGX_CHROMIUM") or shutil.which("chromium") or shutil.which("chromium-browser")
PAGES = {"": "torch-rngx", "guide/": "Guide", "api/torch_rngx/": "torch_rngx"}  # path: its h1


def _missing():
    if not (SITE / "index.html").is_file():
        return "no built site in build/site: run make docs"
    if CHROMIUM is None:
        return "no Chromium (apt-get install chromium, or set RNGX_CHROMIUM)"
    try:
        import playwright  # noqa: F401
    except ImportError:
        return "no playwright (make docs installs it)"
    return None


if _missing() is not None:
    if REQUIRED:
        raise RuntimeError(f"make docs-test: {_missing()}")
    pytest.skip(f"{_missing()}; make docs-test runs this", allow_module_level=True)


class _Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


@pytest.fixture(scope="module")
def site():
    server = http.server.ThreadingHTTPServer(("127.0.0.1", 0), functools.partial(_Quiet, directory=str(SITE)))
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}/"
    finally:
        server.shutdown()
        thread.join()


@pytest.fixture(scope="module")
def browser():
    from playwright.sync_api import sync_playwright

    with sync_playwright() as p:
        # --no-sandbox: CI runs as root, where Chromium's sandbox refuses to start
        b = p.chromium.launch(executable_path=CHROMIUM, args=["--no-sandbox"])
        try:
            yield b
        finally:
            b.close()


def _open(browser, url):
    """A page at url, loaded, with every console error, script error and failed request seen on the way."""
    page = browser.new_page()
    problems = []
    page.on("console", lambda m: problems.append(f"console {m.type}: {m.text}") if m.type == "error" else None)
    page.on("pageerror", lambda e: problems.append(f"script error: {e}"))
    page.on("requestfailed", lambda r: problems.append(f"request failed: {r.url} ({r.failure})"))
    page.goto(url)
    page.wait_for_load_state("networkidle")
    return page, problems


@pytest.mark.parametrize("path", PAGES)
def test_page_renders_without_errors(site, browser, path):
    page, problems = _open(browser, site + path)
    try:
        assert page.locator("article h1").first.inner_text().strip().rstrip("¶").strip() == PAGES[path]
        assert problems == []
        if path.startswith("api/"):  # the reference rendered from the docstrings: signature, arguments, example
            entry = page.locator('[id="torch_rngx.rand_like"]')
            assert entry.is_visible()
            text = page.locator("article").inner_text()
            assert "memory_format" in text and "Stands in for" in text and ">>> torch_rngx.rand_like(" in text
    finally:
        page.close()


def test_search_finds_dropout(site, browser):
    page, problems = _open(browser, site)
    try:
        page.click("input.md-search__input")  # opens the search panel, as a reader does
        page.keyboard.type("dropout")
        page.wait_for_selector(".md-search-result__item", timeout=30_000)
        hrefs = page.locator(".md-search-result__item a").evaluate_all("links => links.map(a => a.href)")
        assert any("#torch_rngx.nn.Dropout" in h for h in hrefs), hrefs[:20]
        assert any("#torch_rngx.dropout" in h for h in hrefs), hrefs[:20]
        assert problems == []
    finally:
        page.close()


def _inventory():
    """The names the built reference has an entry for (objects.inv, Sphinx's format that mkdocstrings writes)."""
    data = (SITE / "objects.inv").read_bytes()
    lines = zlib.decompress(data.split(b"\n", 4)[4]).decode().splitlines()
    return {line.split(" ", 1)[0] for line in lines}


def test_every_public_name_has_an_entry():
    from test_api_doc import methods, public_objects  # the public names, as the docstring checks list them

    names = _inventory()
    missing = []
    for qualified, obj in public_objects():
        if qualified not in names:
            missing.append(qualified)
        if isinstance(obj, type):
            missing += [f"{qualified}.{m}" for m, _ in methods(obj) if f"{qualified}.{m}" not in names]
    assert not missing, f"the built reference has no entry for {missing}"


def test_references_are_pages_of_the_built_site():
    found = 0
    for where, text in docs_names.package_strings():
        for m in docs_names.REFERENCE.finditer(" ".join(text.split())):
            page = SITE / m.group(1) / "index.html"
            assert page.is_file(), f"{where}: docs: {m.group(1)} is not a page of the built site"
            if m.group(2):
                titles = [html.unescape(re.sub(r"<[^>]+>", "", h)) for h in re.findall(r"<h[1-6][^>]*>(.*?)</h[1-6]>",
                                                                                      page.read_text(), re.S)]
                assert any(m.group(2).lower() in t.lower() for t in titles), f"{where}: no {m.group(2)!r} on {page}"
            found += 1
    assert found > 40
