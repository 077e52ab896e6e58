"""Drives cpuprof's web UI in Debian's headless Chromium (Playwright over
the DevTools protocol) and prints what it saw as JSON; the Rust test
(browser.rs) compares it with `cpuprof report` outputs.

    python3 browser.py URL DIFF_URL SCREENSHOT_DIR

The pages carry no test hooks: everything is found by visible text, roles
and structure. Console errors, page errors, failed requests and HTTP
errors are collected into "problems".
"""
import json
import os
import sys

from playwright.sync_api import sync_playwright

URL, DIFF_URL, SHOTS = sys.argv[1], sys.argv[2], sys.argv[3]
os.makedirs(SHOTS, exist_ok=True)
ARGS = ['--headless', '--no-sandbox', '--disable-gpu', '--disable-quic', '--no-first-run',
        '--disable-background-networking', '--disable-component-update', '--disable-sync']
TIMEOUT = 10000
seen = {'problems': []}


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


def shot(page, name):
    page.screenshot(path=os.path.join(SHOTS, name + '.png'))


def flame_ready(page):
    page.frame_locator('iframe').locator('svg g.f').first.wait_for(timeout=TIMEOUT)


with sync_playwright() as pw:
    browser = pw.chromium.launch(executable_path='/usr/bin/chromium', args=ARGS, headless=True)
    context = browser.new_context(viewport={'width': 1280, 'height': 760})
    context.set_default_timeout(TIMEOUT)
    page = context.new_page()
    watch(page)

    # Every view loads.
    loaded = {}
    for name, path in [('top', '/ui/top'), ('graph', '/ui/graph'), ('flamegraph', '/'),
                       ('peek', '/ui/peek?f=burn_a'), ('source', '/ui/source?f=burn_a'),
                       ('disasm', '/ui/disasm?f=burn_a')]:
        page.goto(URL + path)
        page.wait_for_load_state('load')
        if name == 'flamegraph':
            flame_ready(page)
        loaded[name] = {'url': page.url, 'title': page.title(),
                        'current': page.locator('nav a[aria-current=page]').text_content()}
        shot(page, name)
    seen['loaded'] = loaded

    # Graph: click the node burn_b, Refine > Focus; then Top shows the focused numbers.
    page.goto(URL + '/ui/graph')
    page.locator('svg g.node', has=page.locator('title', has_text='burn_b |')).first.click()
    seen['selection_text'] = page.locator('#selection').text_content()
    before = page.url
    page.get_by_text('Refine', exact=True).click()
    page.get_by_role('menuitem', name='Focus').click()
    page.wait_for_url(lambda u: u != before)
    seen['graph_focus_url'] = page.url
    page.get_by_role('link', name='Top', exact=True).click()
    page.wait_for_load_state('load')
    seen['focus_top_url'] = page.url
    seen['focus_rows'] = rows(page)
    shot(page, 'top-focus')

    # Top: click a row, Refine > Focus, then Back restores the whole table.
    page.goto(URL + '/ui/top')
    seen['top_rows'] = rows(page)
    page.get_by_role('cell', name='burn_c', exact=True).click()
    page.get_by_text('Refine', exact=True).click()
    page.get_by_role('menuitem', name='Focus').click()
    page.wait_for_url('**f=*')
    seen['row_focus_url'] = page.url
    seen['row_focus_rows'] = rows(page)
    page.go_back()
    page.wait_for_load_state('load')
    seen['back_url'] = page.url
    seen['back_rows'] = rows(page)

    # Sorting by name, and the filter box.
    page.get_by_role('columnheader', name='Name').click()
    names = [r[5] for r in rows(page)]
    seen['sorted_by_name'] = names == sorted(names)
    page.get_by_role('searchbox', name='Filter rows').fill('^burn_')
    seen['filtered_names'] = [r[5] for r in rows(page)]

    # Sample type and granularity selectors change the table.
    page.goto(URL + '/ui/top')
    sample = page.get_by_role('combobox', name='Sample type')
    seen['sample_options'] = sample.locator('option').all_text_contents()
    seen['sample_before'] = rows(page)[:3]
    current = sample.input_value()
    other = [o for o in sample.locator('option').evaluate_all('os => os.map(o => o.value)') if o != current][0]
    sample.select_option(other)
    page.wait_for_url('**si=*')
    seen['sample_url'] = page.url
    seen['sample_after'] = rows(page)[:3]
    page.get_by_role('combobox', name='Granularity').select_option('lines')
    page.wait_for_url('**g=lines*')
    seen['lines_url'] = page.url
    seen['lines_names'] = [r[5] for r in rows(page)][:5]
    shot(page, 'top-lines')

    # Search highlights in the graph and in the flame graph.
    page.goto(URL + '/ui/graph')
    page.get_by_role('searchbox', name='Search').fill('burn_[ab]')
    seen['graph_matches'] = page.eval_on_selector_all(
        'svg g.node.match title', 'ts => ts.map(t => t.textContent.split(" | ")[0])')
    shot(page, 'graph-search')
    page.goto(URL + '/ui/flamegraph')
    flame_ready(page)
    frame = page.frame_locator('iframe')
    plain = frame.locator('svg g.f rect').evaluate_all('rs => rs.map(r => r.getAttribute("fill"))')
    page.keyboard.press('/')
    page.keyboard.type('burn_a')
    page.wait_for_timeout(200)
    seen['flame_matched'] = frame.locator('#matched').text_content()
    searched = frame.locator('svg g.f rect').evaluate_all('rs => rs.map(r => r.getAttribute("fill"))')
    seen['flame_fills_changed'] = sum(1 for a, b in zip(plain, searched) if a != b)
    shot(page, 'flamegraph-search')
    # Enter focuses on the search.
    page.keyboard.press('Enter')
    page.wait_for_url('**f=burn_a*')
    seen['search_enter_url'] = page.url

    # Source: the listing's lines with their counts.
    page.goto(URL + '/ui/source?f=burn_a')
    seen['source_text'] = page.locator('pre').text_content()
    seen['source_hot_lines'] = page.locator('pre span.hot').count()

    # Diff: only significant changes of share are coloured, in Top and Graph.
    page.goto(DIFF_URL + '/ui/top')
    diff_top = {}
    for name in ['burn_a', 'burn_b', 'burn_c', 'main']:
        cells = page.get_by_role('row').filter(has=page.get_by_role('cell', name=name, exact=True)).locator('td')
        diff_top[name] = {'flat': cells.nth(0).text_content(), 'cum': cells.nth(3).text_content(),
                          'cum_percent': cells.nth(4).text_content(),
                          'cum_colour': cells.nth(3).evaluate('c => getComputedStyle(c).color')}
    seen['diff_top'] = diff_top
    seen['diff_legend'] = page.locator('#legend').text_content()
    seen['diff_summary'] = page.locator('p.summary').text_content()
    seen['diff_top_text'] = page.locator('body').inner_text()
    seen['diff_text_colour'] = page.evaluate('getComputedStyle(document.body).color')
    shot(page, 'diff-top')
    page.goto(DIFF_URL + '/ui/graph')
    diff_graph = {}
    for name in ['burn_a', 'burn_b', 'burn_c', 'main']:
        node = page.locator('svg g.node', has=page.locator('title', has_text=name + ' |')).first
        diff_graph[name] = {'fill': node.locator('rect').get_attribute('fill'),
                            'class': node.get_attribute('class')}
    seen['diff_graph'] = diff_graph
    seen['diff_graph_legend'] = page.locator('svg g.legend').text_content()
    seen['diff_graph_text'] = page.locator('body').inner_text()
    shot(page, 'diff-graph')
    page.goto(DIFF_URL + '/ui/flamegraph')
    flame_ready(page)
    seen['diff_flame_text'] = page.locator('body').inner_text()
    page.goto(DIFF_URL + '/ui/peek?f=main')
    seen['diff_peek_text'] = page.locator('body').inner_text()
    shot(page, 'diff-flamegraph')

    # Dark colour scheme.
    dark = browser.new_context(viewport={'width': 1280, 'height': 760}, color_scheme='dark')
    dpage = dark.new_page()
    watch(dpage)
    dpage.goto(URL + '/ui/top')
    seen['dark_background'] = dpage.evaluate('getComputedStyle(document.body).backgroundColor')
    shot(dpage, 'top-dark')
    dark.close()
    browser.close()

print(json.dumps(seen))
