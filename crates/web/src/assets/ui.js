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
  else if (view === 'timeline') setUpTimeline();
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
  // The timeline: the server's columns (#timeline-data) drawn on
  // canvases, one track per thread and the subsecond heat map. Dragging
  // over either selects a time range: the URL's t= (a navigation, so Back
  // undoes it), which every view honours.
  function setUpTimeline() {
    var script = document.getElementById('timeline-data');
    if (!script) return;
    var data = JSON.parse(script.textContent);
    var css = getComputedStyle(document.documentElement);
    var colour = function (name) { return css.getPropertyValue(name).trim(); };
    var SECOND = 1e9;
    var span = data.to - data.from;
    var range = data.range;

    // An offset in ns as the t= setting reads it (µs precision).
    function offsetText(ns) {
      var us = Math.max(0, Math.round(ns / 1000));
      if (us % 1000000 === 0) return (us / 1000000) + 's';
      return (us / 1000).toFixed(3).replace(/\.?0+$/, '') + 'ms';
    }
    function select(start, end) {
      if (end <= start) return;
      var p = new URLSearchParams(params);
      p.set('t', offsetText(start) + ':' + offsetText(end));
      navigate(view, p);
    }
    function clearRange() {
      var p = new URLSearchParams(params);
      p.delete('t');
      navigate(view, p);
    }

    // Tracks.
    var box = document.getElementById('tracks');
    var canvases = [];
    var TRACK_HEIGHT = 34;
    data.tracks.forEach(function (track) {
      var row = document.createElement('div');
      row.className = 'track';
      var label = document.createElement('div');
      label.className = 'track-label';
      label.textContent = track.label;
      label.title = track.label;
      var canvas = document.createElement('canvas');
      canvas.setAttribute('role', 'img');
      canvas.setAttribute('aria-label', 'CPU activity of ' + track.label + ' over time');
      row.appendChild(label);
      row.appendChild(canvas);
      box.appendChild(row);
      canvases.push({ canvas: canvas, track: track });
    });
    var axis = document.createElement('div');
    axis.className = 'track axis';
    axis.innerHTML = '<div class="track-label"></div><canvas aria-hidden="true"></canvas>';
    box.appendChild(axis);
    var axisCanvas = axis.querySelector('canvas');
    if (range) {
      var clear = document.createElement('button');
      clear.type = 'button';
      clear.id = 'whole';
      clear.textContent = 'Whole profile';
      clear.addEventListener('click', clearRange);
      document.getElementById('timeline-help').appendChild(clear);
    }

    function sized(canvas, height) {
      var ratio = window.devicePixelRatio || 1;
      var width = canvas.clientWidth || 600;
      canvas.width = Math.round(width * ratio);
      canvas.height = Math.round(height * ratio);
      canvas.style.height = height + 'px';
      var g = canvas.getContext('2d');
      g.setTransform(ratio, 0, 0, ratio, 0, 0);
      return { g: g, width: width, height: height };
    }
    function xOf(offset, width) { return (offset - data.from) / span * width; }
    function drawRange(c, start, end) {
      if (start === null) return;
      var x0 = xOf(start, c.width), x1 = xOf(end, c.width);
      c.g.fillStyle = colour('--selected');
      c.g.globalAlpha = 0.45;
      c.g.fillRect(x0, 0, Math.max(1, x1 - x0), c.height);
      c.g.globalAlpha = 1;
    }
    function rangeEnd() { return range[1] === null ? data.to : range[1]; }
    function drawTracks(dragged) {
      var n = data.tracks.length ? data.tracks[0].columns.length : 0;
      canvases.forEach(function (t) {
        var c = sized(t.canvas, TRACK_HEIGHT);
        if (range) drawRange(c, range[0], rangeEnd());
        if (dragged) drawRange(c, dragged[0], dragged[1]);
        var w = c.width / n;
        for (var i = 0; i < n; i++) {
          var v = t.track.columns[i];
          if (v <= 0) continue;
          var h = Math.max(1, Math.min(1, v / data.full) * (c.height - 2));
          c.g.fillStyle = colour('--activity');
          c.g.fillRect(i * w, c.height - h, Math.max(w, 0.5), h);
          var m = t.track.matching[i];
          if (m > 0) {
            var hm = Math.max(1, Math.min(1, m / data.full) * (c.height - 2));
            c.g.fillStyle = colour('--activity-match');
            c.g.fillRect(i * w, c.height - hm, Math.max(w, 0.5), hm);
          }
        }
      });
      // The axis: a tick each step, labelled with its offset.
      var a = sized(axisCanvas, 18);
      var steps = [1e6, 2e6, 5e6, 1e7, 2e7, 5e7, 1e8, 2e8, 5e8, 1e9, 2e9, 5e9, 1e10, 3e10, 6e10, 1.2e11, 3e11, 6e11, 1.8e12, 3.6e12];
      var step = steps[steps.length - 1];
      for (var k = 0; k < steps.length; k++) {
        if (span / steps[k] <= Math.max(2, a.width / 90)) { step = steps[k]; break; }
      }
      a.g.fillStyle = colour('--muted');
      a.g.font = '11px system-ui, sans-serif';
      for (var t = Math.ceil(data.from / step) * step; t <= data.to; t += step) {
        var x = xOf(t, a.width);
        a.g.fillRect(x, 0, 1, 5);
        var text = offsetText(t);
        a.g.fillText(text, Math.min(x + 2, a.width - a.g.measureText(text).width), 15);
      }
    }

    // Heat map: a column per second, a row per slice of it; darker is
    // busier.
    var heat = data.heat;
    var heatCanvas = document.getElementById('heat');
    var cellW = 0, cellH = 6;
    function drawHeat(dragged) {
      if (!heat || heat.seconds === 0) return;
      var pane = document.getElementById('heat-pane');
      cellW = Math.max(3, Math.min(28, Math.floor((pane.clientWidth - 4) / heat.seconds)));
      heatCanvas.style.width = (cellW * heat.seconds) + 'px';
      var c = sized(heatCanvas, cellH * heat.rows);
      var max = 0;
      for (var i = 0; i < heat.cells.length; i++) max = Math.max(max, heat.cells[i]);
      var useMatching = data.highlight !== null;
      var maxMatching = 0;
      if (useMatching) for (var j = 0; j < heat.matching.length; j++) maxMatching = Math.max(maxMatching, heat.matching[j]);
      var lo = range ? range[0] : null, hi = range ? rangeEnd() : null;
      if (dragged) { lo = dragged[0]; hi = dragged[1]; }
      for (var s = 0; s < heat.seconds; s++) {
        for (var r = 0; r < heat.rows; r++) {
          var cell = s * heat.rows + r;
          var v = heat.cells[cell];
          var start = s * SECOND + r * heat.row_ns;
          var inRange = lo !== null && start + heat.row_ns > lo && start < hi;
          if (v > 0) {
            var f = Math.sqrt(v / max);
            var light = 96 - 58 * f;
            c.g.fillStyle = 'hsl(' + (40 - 40 * f) + ', 95%, ' + light + '%)';
            if (useMatching && heat.matching[cell] > 0) {
              c.g.fillStyle = 'hsl(270, 70%, ' + (85 - 45 * Math.sqrt(heat.matching[cell] / maxMatching)) + '%)';
            }
            c.g.fillRect(s * cellW, r * cellH, cellW - 1, cellH - 1);
          }
          if (inRange) {
            c.g.strokeStyle = colour('--accent');
            c.g.strokeRect(s * cellW + 0.5, r * cellH + 0.5, cellW - 2, cellH - 2);
          }
        }
      }
    }
    if (heat) {
      document.getElementById('heat-help').textContent = 'Columns: seconds 0 to ' + heat.seconds +
        '; rows: ' + offsetText(heat.row_ns) + ' slices of each second, from its start at the top. ' +
        'Work that comes back each second lines up in a row. Drag from one cell to another to select the time between them.';
    }

    function draw(dragged) {
      drawTracks(dragged);
      drawHeat(dragged);
    }
    draw(null);
    window.addEventListener('resize', function () { draw(null); });

    // Dragging over a track.
    var drag = null;
    function trackOffset(ev, canvas) {
      var r = canvas.getBoundingClientRect();
      var f = Math.max(0, Math.min(1, (ev.clientX - r.left) / r.width));
      return data.from + f * span;
    }
    function heatOffset(ev, end) {
      var r = heatCanvas.getBoundingClientRect();
      var s = Math.max(0, Math.min(heat.seconds - 1, Math.floor((ev.clientX - r.left) / cellW)));
      var row = Math.max(0, Math.min(heat.rows - 1, Math.floor((ev.clientY - r.top) / cellH)));
      return s * SECOND + (row + (end ? 1 : 0)) * heat.row_ns;
    }
    function dragged() {
      if (!drag) return null;
      if (drag.heat) {
        return drag.a <= drag.b ? [drag.a, drag.b + heat.row_ns] : [drag.b, drag.a + heat.row_ns];
      }
      return [Math.min(drag.a, drag.b), Math.max(drag.a, drag.b)];
    }
    canvases.forEach(function (t) {
      t.canvas.addEventListener('mousedown', function (ev) {
        ev.preventDefault();
        var at = trackOffset(ev, t.canvas);
        drag = { heat: false, canvas: t.canvas, a: at, b: at, x: ev.clientX };
      });
    });
    heatCanvas.addEventListener('mousedown', function (ev) {
      if (!heat) return;
      ev.preventDefault();
      var at = heatOffset(ev, false);
      drag = { heat: true, a: at, b: at, x: ev.clientX };
    });
    window.addEventListener('mousemove', function (ev) {
      if (!drag) return;
      drag.b = drag.heat ? heatOffset(ev, false) : trackOffset(ev, drag.canvas);
      draw(dragged());
    });
    window.addEventListener('mouseup', function (ev) {
      if (!drag) return;
      var d = dragged();
      var heatDrag = drag.heat, moved = Math.abs(ev.clientX - drag.x) > 3;
      drag = null;
      // A click on a track is no selection; a click on a heat-map cell
      // selects that cell.
      if (heatDrag || moved) select(d[0], d[1]);
      else draw(null);
    });
  }
})();
