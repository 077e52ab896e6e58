"""The web UI's Download menu in Debian's headless Chromium (Playwright
over the DevTools protocol): on a focused Top view, opens the menu, reads
its entries (names, links, visibility) and fetches the speedscope entry's
link as the browser would; prints what it saw as JSON.

    python3 download_menu.py URL
"""
import json
import sys

from playwright.sync_api import sync_playwright

URL = sys.argv[1]
ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync']
seen = {'problems': []}

with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path='/usr/bin/chromium', args=ARGS, headless=True)
    page = browser.new_page()
    page.set_default_timeout(10000)
    p = seen['problems']
    page.on('console', lambda m: p.append('console: ' + m.text) if m.type == 'error' else None)
    page.on('pageerror', lambda e: p.append('pageerror: %s' % e))
    page.goto(URL + '/ui/top?f=burn_b')
    page.wait_for_load_state('load')
    page.get_by_text('Download', exact=True).click()
    items = page.get_by_role('menuitem')
    seen['entries'] = []
    for i in range(items.count()):
        item = items.nth(i)
        if item.get_attribute('download') is None:
            continue
        seen['entries'].append({'name': item.text_content(), 'href': item.get_attribute('href'),
                                'file': item.get_attribute('download'),
                                'visible': item.is_visible()})
    speedscope = page.get_by_role('menuitem', name='speedscope', exact=False)
    response = page.request.get(URL + speedscope.get_attribute('href'))
    seen['status'] = response.status
    seen['file'] = response.json()
    browser.close()
print(json.dumps(seen))
