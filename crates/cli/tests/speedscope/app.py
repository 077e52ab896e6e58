"""Checks speedscope files with speedscope's own package (npm `speedscope`):
validates each against the JSON schema it ships (python3 jsonschema), then
loads it in the app it ships (its built pages, served on loopback with the
file, opened by `#profileURL=`) in Debian's headless Chromium driven by
Playwright over the DevTools protocol, and prints what it saw as JSON:

    python3 app.py APP_DIR SCREENSHOT_DIR FILE...

For each file: "schema_errors" (the validator's messages), "title" (the
profile name the toolbar shows), "profiles" (the names the profile selector
lists), "error" (speedscope's error text, if it shows one), "problems"
(console errors, page errors, failed requests, HTTP errors) and
"screenshot" (named after the file; another with the selector open).
The page carries no test hooks: everything is read from
the DOM as a user would see it.
"""
import functools
import http.server
import json
import re
import os
import shutil
import sys
import tempfile
import threading
import urllib.parse

import jsonschema
from playwright.sync_api import sync_playwright

APP, SHOTS, FILES = sys.argv[1], sys.argv[2], sys.argv[3:]
os.makedirs(SHOTS, exist_ok=True)
ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync']
TIMEOUT = 15000

with open(os.path.join(APP, 'file-format-schema.json')) as f:
    schema = json.load(f)
validator = jsonschema.Draft7Validator(schema)

# The app and the files, served from one loopback directory.
root = tempfile.mkdtemp()
shutil.copytree(APP, os.path.join(root, 'app'))
os.makedirs(os.path.join(root, 'data'))
for i, path in enumerate(FILES):
    shutil.copy(path, os.path.join(root, 'data', '%d.json' % i))


class Quiet(http.server.SimpleHTTPRequestHandler):
    def log_message(self, *args):
        pass


server = http.server.ThreadingHTTPServer(
    ('127.0.0.1', 0), functools.partial(Quiet, directory=root))
threading.Thread(target=server.serve_forever, daemon=True).start()
base = 'http://127.0.0.1:%d' % server.server_address[1]

results = []
with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path='/usr/bin/chromium', args=ARGS, headless=True)
    for i, path in enumerate(FILES):
        with open(path) as f:
            data = json.load(f)
        seen = {'file': path, 'problems': [],
                'schema_errors': [e.message for e in validator.iter_errors(data)][:10]}
        context = browser.new_context(viewport={'width': 1280, 'height': 720})
        context.set_default_timeout(TIMEOUT)
        page = context.new_page()
        p = seen['problems']
        page.on('console', lambda m: p.append('console: ' + m.text) if m.type == 'error' else None)
        page.on('pageerror', lambda e: p.append('pageerror: %s' % e))
        page.on('requestfailed', lambda r: p.append('failed: %s %s' % (r.url, r.failure)))
        page.on('response', lambda r: p.append('HTTP %d: %s' % (r.status, r.url))
                if r.status >= 400 else None)
        url = '%s/data/%d.json' % (base, i)
        page.goto('%s/app/index.html#profileURL=%s' % (base, urllib.parse.quote(url, safe='')))
        page.wait_for_load_state('load')
        # Loaded: the flame chart's canvas is drawn, or an error is shown.
        page.wait_for_function(
            "() => document.querySelectorAll('canvas').length > 0 || "
            "/error|Something went wrong|Unrecognized format/i.test(document.body.innerText)")
        page.wait_for_timeout(300)
        text = page.evaluate('() => document.body.innerText')
        seen['error'] = [line for line in text.splitlines()
                         if re.search(r'error|went wrong|unrecognized|failed', line, re.I)]
        seen['canvases'] = page.locator('canvas').count()
        # The toolbar's title: the open profile's name and "(i/n)".
        seen['title'] = page.evaluate(
            "() => { const t = [...document.querySelectorAll('span')].find("
            "s => /\\(\\d+\\/\\d+\\)$/.test(s.textContent.trim())); "
            "return t ? t.textContent.trim() : null; }")
        seen['body'] = text[:500]
        stem = 'speedscope-' + os.path.basename(path).split('.')[0]
        shot = os.path.join(SHOTS, stem + '.png')
        page.screenshot(path=shot)
        seen['screenshot'] = shot
        # The profile selector: a click on the title opens the list of
        # profiles (rows named by their title).
        seen['profiles'] = []
        if seen['title']:
            page.locator('span', has=page.locator(
                'span', has_text=re.compile(r'^\(\d+/\d+\)$'))).first.click()
            page.locator('tr[title]').first.wait_for(state='visible')
            seen['profiles'] = page.eval_on_selector_all(
                'tr[title]', 'rs => rs.filter(r => r.offsetParent !== null)'
                '.map(r => r.getAttribute("title"))')
            page.screenshot(path=os.path.join(SHOTS, stem + '-profiles.png'))
        results.append(seen)
        context.close()
    browser.close()
server.shutdown()
shutil.rmtree(root)
print(json.dumps(results))
