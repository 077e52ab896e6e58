"""Drives cpuprof's timeline view in Debian's headless Chromium (Playwright
over the DevTools protocol) and prints what it saw as JSON; the Rust test
(timeline.rs) compares it with `cpuprof report` outputs.

    python3 timeline.py URL SCREENSHOT_DIR

Two page loads of the timeline: one with fnB focused (the data the page
draws, its canvases), one plain, on which a range is selected by dragging
with real mouse events; then every view through the page's own links, and
Back. As browser.py, no test hooks: the page is read by its structure.
"""
import json
import os
import sys

from playwright.sync_api import sync_playwright

URL, SHOTS = sys.argv[1], sys.argv[2]
os.makedirs(SHOTS, exist_ok=True)
ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync']
TIMEOUT = 15000
seen = {'problems': []}

# The number of painted pixels of each canvas of the page.
PAINTED = '''() => Array.from(document.querySelectorAll('canvas')).map(c => {
  const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
  let n = 0;
  for (let i = 3; i < d.length; i += 4) if (d[i] > 0) n++;
  return {label: c.getAttribute('aria-label'), painted: n, width: c.width, height: c.height};
})'''


def watch(page):
    p = seen['problems']
    page.on('console', lambda m: p.append('console: ' + m.text) if m.type == 'error' else None)
    page.on('pageerror', lambda e: p.append('pageerror: %s' % e))
    page.on('requestfailed', lambda r: p.append('failed: %s %s' % (r.url, r.failure)))
    page.on('response', lambda r: p.append('HTTP %d: %s' % (r.status, r.url)) if r.status >= 400 else None)


def rows(page):
    return page.eval_on_selector_all(
        '#toptable tbody tr',
        'rs => rs.filter(r => !r.hidden).map(r => Array.from(r.cells).map(c => c.textContent))')


def legend(page):
    return page.locator('#legend').text_content()


def nav(page, label):
    before = page.url
    page.get_by_role('link', name=label, exact=True).click()
    page.wait_for_url(lambda u: u != before)
    page.wait_for_load_state('load')


with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path='/usr/bin/chromium', args=ARGS, headless=True)
    context = browser.new_context(viewport={'width': 1280, 'height': 760})
    context.set_default_timeout(TIMEOUT)
    page = context.new_page()
    watch(page)

    # 1. fnB focused: the data the page draws, and that it drew it.
    page.goto(URL + '/ui/timeline?f=%5EfnB%24')
    page.wait_for_load_state('load')
    seen['focused_data'] = json.loads(page.locator('#timeline-data').text_content())
    seen['focused_canvases'] = page.evaluate(PAINTED)
    seen['focused_tracks'] = page.locator('#tracks .track-label').all_text_contents()
    page.screenshot(path=os.path.join(SHOTS, 'timeline.png'))

    # 2. The whole profile; drag over the phases track from 55% to 95% of
    # its width with the mouse.
    page.goto(URL + '/ui/timeline')
    page.wait_for_load_state('load')
    seen['title'] = page.title()
    seen['current'] = page.locator('nav a[aria-current=page]').text_content()
    seen['legend_before'] = legend(page)
    seen['data'] = json.loads(page.locator('#timeline-data').text_content())
    canvas = page.locator('#tracks canvas').first
    box = canvas.bounding_box()
    y = box['y'] + box['height'] / 2
    start_url = page.url
    page.mouse.move(box['x'] + box['width'] * 0.55, y)
    page.mouse.down()
    for f in (0.65, 0.75, 0.85, 0.95):
        page.mouse.move(box['x'] + box['width'] * f, y)
    page.mouse.up()
    page.wait_for_url(lambda u: u != start_url)
    page.wait_for_load_state('load')
    seen['selected_url'] = page.url
    seen['selected_legend'] = legend(page)
    seen['selected_data'] = json.loads(page.locator('#timeline-data').text_content())
    page.screenshot(path=os.path.join(SHOTS, 'timeline-selected.png'))

    # Back undoes the selection; Forward brings it back.
    page.go_back()
    page.wait_for_load_state('load')
    seen['back_url'] = page.url
    seen['back_legend'] = legend(page)
    page.go_forward()
    page.wait_for_load_state('load')
    seen['forward_url'] = page.url

    # Every view through the page's links keeps the range.
    nav(page, 'Top')
    seen['top_url'] = page.url
    seen['top_rows'] = rows(page)
    seen['top_summary'] = page.locator('p.summary').text_content()
    # Select fnB (a click on its row): Peek and Source take it.
    page.locator('#toptable tbody tr', has=page.locator('td.name', has_text='fnB')).first.click()
    nav(page, 'Graph')
    seen['graph_url'] = page.url
    seen['graph_titles'] = page.eval_on_selector_all(
        '#graph-pane svg g.node title', 'ts => ts.map(t => t.textContent)')
    nav(page, 'Flame Graph')
    seen['flame_url'] = page.url
    frame = page.frame_locator('iframe#flame-frame')
    frame.locator('svg g.f').first.wait_for()
    flame = json.loads(frame.locator('#flame-data').text_content())
    seen['flame_total'] = flame['total']
    # fnB's frames' values (name, value, depth, colour per node).
    names, nodes = flame['names'], flame['nodes']
    seen['flame_fnB'] = sum(nodes[i + 1] for i in range(0, len(nodes), 4) if names[nodes[i]] == 'fnB')
    page.goto(URL + '/ui/top?' + seen['selected_url'].split('?', 1)[1])
    page.locator('#toptable tbody tr', has=page.locator('td.name', has_text='fnB')).first.click()
    nav(page, 'Peek')
    seen['peek_url'] = page.url
    seen['peek_text'] = page.locator('pre.report').text_content()
    nav(page, 'Source')
    seen['source_url'] = page.url
    seen['source_text'] = page.locator('pre.report').text_content()

    # A drag on the heat map: from second 0's row 10 (200 ms) to row 19
    # (380-400 ms).
    page.goto(URL + '/ui/timeline')
    page.wait_for_load_state('load')
    heat = page.locator('#heat').bounding_box()
    data = seen['data']['heat']
    cell_w = heat['width'] / data['seconds']
    cell_h = heat['height'] / data['rows']
    before = page.url
    page.mouse.move(heat['x'] + cell_w / 2, heat['y'] + cell_h * 10.5)
    page.mouse.down()
    page.mouse.move(heat['x'] + cell_w / 2, heat['y'] + cell_h * 15.5)
    page.mouse.move(heat['x'] + cell_w / 2, heat['y'] + cell_h * 19.5)
    page.mouse.up()
    page.wait_for_url(lambda u: u != before)
    page.wait_for_load_state('load')
    seen['heat_url'] = page.url
    browser.close()

print(json.dumps(seen))
