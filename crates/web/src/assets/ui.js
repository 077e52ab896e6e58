// cpuprof web UI: the page's state is its URL. This script only edits the
// URL (views, Refine, selectors, search on Enter) and highlights what the
// server already put on the page (selection, search matches). No network
// but this server's own routes.
(function () {
  'use strict';
  var view = document.body.getAttribute('data-view');
  var diff = document.body.classList.contains('diff');
  var params = new URLSearchParams(location.search);
  var selected = [];
  var searchBox = document.getElementById('search');
  var selectionText = document.getElementById('selection');
  var FILTERS = ['f', 'i', 'h', 's', 'sf'];

  function escapeRegExp(s) {
    return s.replace(/[.*+?^${}()|[\]\\]/g, '\\$&');
  }
  function selectionRegExp() {
    if (selected.length === 0) return '';
    return '^(' + selected.map(escapeRegExp).join('|') + ')$';
  }
  function urlFor(target, p) {
    var q = p.toString();
    return '/ui/' + target + (q ? '?' + q : '');
  }
  function navigate(target, p) {
    location.href = urlFor(target, p);
  }
  function searchRegExp() {
    var text = searchBox.value;
    if (!text) return null;
    try {
      return new RegExp(text);
    } catch (e) {
      return undefined;
    }
  }

  // Views: Peek, Source and Disassemble take the selection (or the
  // search) as their functions, the others keep the query as it is.
  function updateLinks() {
    document.querySelectorAll('nav .views a').forEach(function (a) {
      var target = a.getAttribute('data-view');
      var p = new URLSearchParams(params);
      if ((target === 'peek' || target === 'source' || target === 'disasm') && selectionRegExp()) {
        p.set('f', selectionRegExp());
      }
      a.setAttribute('href', urlFor(target, p));
    });
    var q = params.toString();
    document.querySelectorAll('[data-download]').forEach(function (a) {
      a.setAttribute('href', a.getAttribute('data-download') + (q ? '?' + q : ''));
    });
    if (selected.length === 0) {
      selectionText.textContent = '';
    } else {
      selectionText.textContent = selected.length + ' selected: ' + selected.join(', ');
    }
    markSelected();
  }

  function select(name, add) {
    var at = selected.indexOf(name);
    if (add) {
      if (at >= 0) selected.splice(at, 1);
      else selected.push(name);
    } else if (at >= 0 && selected.length === 1) {
      selected = [];
    } else {
      selected = [name];
    }
    updateLinks();
  }

  // Refine: focus, ignore, hide, show, show from on the selection (else
  // the search), or reset every filter.
  document.querySelectorAll('#refine button').forEach(function (b) {
    b.addEventListener('click', function () {
      var param = b.getAttribute('data-param');
      var p = new URLSearchParams(params);
      document.getElementById('refine').open = false;
      if (param === 'reset') {
        FILTERS.forEach(function (f) { p.delete(f); });
        navigate(view, p);
        return;
      }
      var re = selectionRegExp() || searchBox.value;
      if (!re) {
        selectionText.textContent = 'Select something (click it) or type a search first.';
        return;
      }
      p.set(param, re);
      navigate(view, p);
    });
  });

  function onSelector(id, param) {
    var el = document.getElementById(id);
    if (!el) return;
    el.addEventListener('change', function () {
      var p = new URLSearchParams(params);
      p.set(param, el.value);
      navigate(view, p);
    });
  }
  var icicle = document.getElementById('icicle');
  if (icicle) {
    icicle.addEventListener('change', function () {
      var p = new URLSearchParams(params);
      if (icicle.checked) p.set('icicle', 'true');
      else p.delete('icicle');
      navigate(view, p);
    });
  }
  onSelector('sample', 'si');
  onSelector('granularity', 'g');

  // Saved configurations.
  var configMenu = document.getElementById('config');
  function showConfigs(list) {
    var box = document.getElementById('saved');
    box.textContent = '';
    list.forEach(function (c) {
      var row = document.createElement('div');
      row.className = 'saved';
      var a = document.createElement('a');
      a.href = '/ui/' + view + (c.query ? '?' + c.query : '');
      a.textContent = c.name;
      a.setAttribute('role', 'menuitem');
      var del = document.createElement('button');
      del.type = 'button';
      del.textContent = '\u00d7';
      del.title = 'Delete ' + c.name;
      del.setAttribute('aria-label', 'Delete ' + c.name);
      del.addEventListener('click', function () {
        postConfig({ name: c.name, delete: true });
      });
      row.appendChild(a);
      row.appendChild(del);
      box.appendChild(row);
    });
  }
  function postConfig(body) {
    fetch('/ui/configs', {
      method: 'POST',
      headers: { 'Content-Type': 'application/json' },
      body: JSON.stringify(body)
    }).then(function (r) { return r.json(); }).then(function (j) { showConfigs(j.configs); });
  }
  configMenu.addEventListener('toggle', function () {
    if (!configMenu.open) return;
    fetch('/ui/configs').then(function (r) { return r.json(); }).then(function (j) { showConfigs(j.configs); });
  });
  configMenu.querySelector('[data-action=save]').addEventListener('click', function () {
    var name = window.prompt('Save the current settings as:');
    if (name) postConfig({ name: name, query: params.toString() });
  });

  // Search: highlight as you type, focus on Enter.
  var highlight = function () {};
  searchBox.addEventListener('input', function () {
    var re = searchRegExp();
    searchBox.classList.toggle('invalid', re === undefined);
    if (re !== undefined) highlight(re);
  });
  searchBox.addEventListener('keydown', function (ev) {
    if (ev.key === 'Enter' && searchBox.value && searchRegExp()) {
      var p = new URLSearchParams(params);
      p.set('f', searchBox.value);
      navigate(view, p);
    }
  });
  document.addEventListener('keydown', function (ev) {
    var typing = ev.target && (ev.target.tagName === 'INPUT' || ev.target.tagName === 'SELECT');
    if (ev.key === '/' && !typing) {
      ev.preventDefault();
      searchBox.focus();
    } else if (ev.key === 'Escape') {
      selected = [];
      updateLinks();
      if (typing) ev.target.blur();
    }
  });

  var markSelected = function () {};

  // Each view: what a name is, how to select it, how to highlight.
  if (view === 'top') setUpTop();
  else if (view === 'graph') setUpGraph();
  else if (view === 'flamegraph') setUpFlame();
  else setUpText();
  updateLinks();

  function setUpTop() {
    var table = document.getElementById('toptable');
    if (!table) return;
    var body = table.tBodies[0];
    var rows = Array.prototype.slice.call(body.rows);
    function nameOf(tr) { return tr.cells[5].textContent; }
    body.addEventListener('click', function (ev) {
      var tr = ev.target.closest('tr');
      if (tr) select(nameOf(tr), ev.shiftKey || ev.ctrlKey || ev.metaKey);
    });
    markSelected = function () {
      rows.forEach(function (tr) { tr.classList.toggle('selected', selected.indexOf(nameOf(tr)) >= 0); });
    };
    highlight = function (re) {
      rows.forEach(function (tr) { tr.classList.toggle('match', !!re && re.test(nameOf(tr))); });
    };
    var value = function (tr, key) {
      if (key === 'name') return nameOf(tr);
      // Cells print scaled values (1.21s, 616ms); data-value is the raw one.
      var cell = tr.cells[key === 'flat' ? 0 : 3];
      var v = +(cell.getAttribute('data-value') || cell.textContent);
      return diff ? Math.abs(v) : v;
    };
    function sortBy(key, th) {
      rows.sort(function (a, b) {
        if (key === 'name') return value(a, key) < value(b, key) ? -1 : value(a, key) > value(b, key) ? 1 : 0;
        return value(b, key) - value(a, key) || (nameOf(a) < nameOf(b) ? -1 : 1);
      });
      rows.forEach(function (tr) { body.appendChild(tr); });
      table.querySelectorAll('th[data-key]').forEach(function (h) {
        h.setAttribute('aria-sort', h === th ? (key === 'name' ? 'ascending' : 'descending') : 'none');
      });
    }
    table.querySelectorAll('th[data-key]').forEach(function (th) {
      th.addEventListener('click', function () { sortBy(th.getAttribute('data-key'), th); });
    });
    if (diff) sortBy(params.get('sort') === 'cum' ? 'cum' : 'flat', table.querySelector('th[data-key=' + (params.get('sort') === 'cum' ? 'cum' : 'flat') + ']'));
    var filter = document.getElementById('filter');
    filter.addEventListener('input', function () {
      var re = null;
      try { re = filter.value ? new RegExp(filter.value) : null; } catch (e) { filter.classList.add('invalid'); return; }
      filter.classList.remove('invalid');
      rows.forEach(function (tr) { tr.hidden = !!re && !re.test(nameOf(tr)); });
    });
  }

  function setUpGraph() {
    var pane = document.getElementById('graph-pane');
    var svg = pane && pane.querySelector('svg');
    if (!svg) return;
    var nodes = Array.prototype.slice.call(svg.querySelectorAll('g.node'));
    function nameOf(g) {
      // Our layout's title is "name | flat ... | cum ..."; dot's is an id,
      // its first text line the name.
      var t = g.querySelector('title').textContent;
      var cut = t.lastIndexOf(' | flat ');
      if (cut >= 0) return t.slice(0, cut);
      var text = g.querySelector('text');
      return text ? text.textContent : t;
    }
    // In a diff the server colours the nodes: significant changes of
    // share only (red grew, green shrank, grey noise).
    var moved = false;
    svg.addEventListener('click', function (ev) {
      if (moved) return;
      var g = ev.target.closest('g.node');
      if (g) select(nameOf(g), ev.shiftKey || ev.ctrlKey || ev.metaKey);
    });
    markSelected = function () {
      nodes.forEach(function (g) { g.classList.toggle('selected', selected.indexOf(nameOf(g)) >= 0); });
    };
    highlight = function (re) {
      nodes.forEach(function (g) { g.classList.toggle('match', !!re && re.test(nameOf(g))); });
    };
    // Pan (drag) and zoom (wheel) through the viewBox.
    var vb = svg.getAttribute('viewBox').split(/\s+/).map(Number);
    svg.removeAttribute('width');
    svg.removeAttribute('height');
    function apply() { svg.setAttribute('viewBox', vb.join(' ')); }
    pane.addEventListener('wheel', function (ev) {
      ev.preventDefault();
      var r = svg.getBoundingClientRect();
      var k = ev.deltaY > 0 ? 1.15 : 1 / 1.15;
      var fx = (ev.clientX - r.left) / r.width, fy = (ev.clientY - r.top) / r.height;
      var w = vb[2] * k, h = vb[3] * k;
      vb = [vb[0] + (vb[2] - w) * fx, vb[1] + (vb[3] - h) * fy, w, h];
      apply();
    }, { passive: false });
    var drag = null;
    pane.addEventListener('mousedown', function (ev) {
      drag = { x: ev.clientX, y: ev.clientY, vb: vb.slice() };
      moved = false;
    });
    window.addEventListener('mousemove', function (ev) {
      if (!drag) return;
      var r = svg.getBoundingClientRect();
      var s = Math.max(vb[2] / r.width, vb[3] / r.height);
      var dx = ev.clientX - drag.x, dy = ev.clientY - drag.y;
      if (Math.abs(dx) + Math.abs(dy) > 3) moved = true;
      vb = [drag.vb[0] - dx * s, drag.vb[1] - dy * s, vb[2], vb[3]];
      apply();
    });
    window.addEventListener('mouseup', function () { drag = null; });
  }

  function setUpFlame() {
    var frame = document.getElementById('flame-frame');
    if (!frame) return;
    var names = null, raw = null, doc = null;
    function hook() {
      doc = frame.contentDocument;
      if (!doc || !doc.getElementById('flame-data') || doc.body.getAttribute('data-hooked')) return;
      doc.body.setAttribute('data-hooked', '1');
      var data = JSON.parse(doc.getElementById('flame-data').textContent);
      names = data.names;
      raw = data.nodes;
      // This page's search box drives the flame graph's own.
      var style = doc.createElement('style');
      style.textContent = '#search{display:none} h1{display:none}';
      doc.head.appendChild(style);
      doc.getElementById('flame').addEventListener('click', function (ev) {
        var g = ev.target.closest('g.f');
        if (g) select(names[raw[4 * +g.getAttribute('data-i')]], ev.shiftKey || ev.ctrlKey || ev.metaKey);
      });
      doc.addEventListener('keydown', function (ev) {
        if (ev.key === '/') {
          ev.preventDefault();
          searchBox.focus();
        }
      });
      if (searchBox.value) highlight(searchRegExp());
    }
    frame.addEventListener('load', hook);
    if (frame.contentDocument && frame.contentDocument.readyState === 'complete') hook();
    highlight = function () {
      if (!doc) return;
      var box = doc.getElementById('search');
      if (!box) return;
      box.value = searchBox.value;
      box.dispatchEvent(new Event('input', { bubbles: true }));
    };
  }

  function setUpText() {
    var lines = Array.prototype.slice.call(document.querySelectorAll('pre.report span.ln'));
    highlight = function (re) {
      lines.forEach(function (l) { l.classList.toggle('match', !!re && re.test(l.textContent)); });
    };
  }
})();
