// cpuprof flame graph: draws the embedded frame tree as inline SVG.
// Nodes come in preorder with children sorted by name; each frame is
// drawn from its parent's left edge, after its earlier siblings, with a
// width proportional to its value. Only frames at least minFramePx wide at
// the current zoom are drawn (their descendants are narrower still), so a
// redraw costs at most a few elements per pixel column.
(function () {
  'use strict';
  var t0 = performance.now();
  var data = JSON.parse(document.getElementById('flame-data').textContent);
  var L = data.layout;
  var names = data.names;
  var palette = data.palette;
  var raw = data.nodes;
  var base = data.base || null;
  var n = raw.length / 4;

  var nameOf = new Uint32Array(n);
  var value = new Float64Array(n);
  var depth = new Uint32Array(n);
  var colour = new Uint32Array(n);
  var start = new Float64Array(n);
  var parent = new Int32Array(n);
  var end = new Uint32Array(n);
  var maxDepth = 0;
  (function layout() {
    var cursor = new Float64Array(n);
    var open = [];
    for (var i = 0; i < n; i++) {
      nameOf[i] = raw[4 * i];
      value[i] = raw[4 * i + 1];
      var d = raw[4 * i + 2];
      depth[i] = d;
      colour[i] = raw[4 * i + 3];
      if (d > maxDepth) maxDepth = d;
      open[d] = i;
      if (d === 0) {
        parent[i] = -1;
        start[i] = 0;
      } else {
        var p = open[d - 1];
        parent[i] = p;
        start[i] = cursor[p];
        cursor[p] += value[i];
      }
      cursor[i] = start[i];
    }
    var size = new Uint32Array(n).fill(1);
    for (var j = n - 1; j > 0; j--) size[parent[j]] += size[j];
    for (var k = 0; k < n; k++) end[k] = k + size[k];
  })();

  var tLayout = performance.now();
  var chart = document.getElementById('chart');
  var svg = document.getElementById('flame');
  var tooltip = document.getElementById('tooltip');
  var status = document.getElementById('status');
  var searchBox = document.getElementById('search');
  var matchedText = document.getElementById('matched');
  var zoomed = 0;
  var matched = null; // per name: 1 when it matches the search
  var usable = 0;

  function esc(s) {
    return s.replace(/&/g, '&amp;').replace(/</g, '&lt;').replace(/>/g, '&gt;').replace(/"/g, '&quot;');
  }
  function percent(v) {
    return data.total > 0 ? (v * 100 / data.total).toFixed(2) + '%' : '0.00%';
  }
  function label(name, w) {
    var fits = Math.floor((w - 6) / L.charWidth);
    if (fits < 3) return null;
    var chars = Array.from(name);
    if (chars.length <= fits) return name;
    return chars.slice(0, fits - 2).join('') + '..';
  }
  // A value as the report prints it (see ValueFormat in measure.rs):
  // scaled to the largest unit of its family it reaches (Go pprof's
  // labels: 1.82s, 24MB), perl's fixed units (24.0 MB), or a count.
  function amount(v) {
    var f = data.values;
    if (f.units) {
      var a = Math.abs(v), best = null;
      for (var k = 0; k < f.units.length; k++) {
        if (a / f.units[k][1] >= 1 && (!best || f.units[k][1] >= best[1])) best = f.units[k];
      }
      if (!best) best = f.fallback;
      var t = (v / best[1]).toFixed(2).replace(/\.00$/, '');
      return t === '0' || t === '-0' ? '0' : t + best[0];
    }
    if (f.perl) return (v / f.perl[0]).toFixed(f.perl[1]);
    return String(v);
  }
  function withUnit(v) {
    return data.values.units ? amount(v) : amount(v) + ' ' + data.values.word;
  }
  function change(v, b) {
    var d = v - b;
    var sign = d >= 0 ? '+' : '';
    if (b === 0) return sign + amount(d) + ', new';
    return sign + amount(d) + ', ' + sign + (d * 100 / b).toFixed(2) + '%';
  }
  // The Wilson score interval of a frame's share (--confidence).
  function interval(v) {
    var iv = data.intervals, n = iv.samples, k = Math.min(Math.abs(v) / iv.scale, n), z = iv.z;
    if (!(n > 0)) return '';
    var p = k / n, d = 1 + z * z / n, c = (p + z * z / (2 * n)) / d;
    var h = z * Math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d;
    return ' ' + iv.level + '% CI [' + (Math.max(0, c - h) * 100).toFixed(1) + ',' +
      (Math.min(1, c + h) * 100).toFixed(1) + ']%';
  }
  function describe(i) {
    var s = names[nameOf[i]] + ' (' + withUnit(value[i]) + ', ' + percent(value[i]);
    if (data.intervals) s += interval(value[i]);
    if (base) s += '; base ' + amount(base[i]) + ', ' + change(value[i], base[i]);
    return s + ')';
  }
  function rowOf(i) {
    return L.icicle ? depth[i] : maxDepth - depth[i];
  }

  function frame(out, i, x, w, ancestor) {
    var y = L.top + rowOf(i) * L.frameHeight;
    var fill = matched && i > 0 && matched[nameOf[i]] ? L.matchColor : palette[colour[i]];
    out.push('<g class="f' + (ancestor ? ' anc' : '') + '" data-i="' + i + '"><rect x="' + x.toFixed(2) +
      '" y="' + y + '" width="' + w.toFixed(2) + '" height="' + (L.frameHeight - 1) +
      '" rx="2" fill="' + fill + '"/>');
    var text = label(names[nameOf[i]], w);
    if (text !== null) {
      out.push('<text x="' + (x + 3).toFixed(2) + '" y="' + (y + L.frameHeight - 4.5) + '">' + esc(text) + '</text>');
    }
    out.push('</g>');
  }

  function render() {
    var width = Math.max(200, chart.clientWidth);
    var height = L.top + (maxDepth + 1) * L.frameHeight + L.bottom;
    usable = width - 2 * L.xPad;
    svg.setAttribute('width', width);
    svg.setAttribute('height', height);
    svg.setAttribute('viewBox', '0 0 ' + width + ' ' + height);
    var out = [];
    var hidden = 0;
    if (value[zoomed] > 0) {
      // The zoomed frame's ancestors span the whole width.
      for (var a = parent[zoomed]; a >= 0; a = parent[a]) frame(out, a, L.xPad, usable, true);
      var scale = usable / value[zoomed];
      var origin = start[zoomed];
      for (var i = zoomed; i < end[zoomed];) {
        var w = value[i] * scale;
        if (w < L.minFramePx) {
          hidden += end[i] - i;
          i = end[i];
          continue;
        }
        frame(out, i, L.xPad + (start[i] - origin) * scale, w, false);
        i++;
      }
    }
    svg.innerHTML = '<g font-family="' + esc(L.fontFamily) + '" font-size="' + L.fontSize + '">' + out.join('') + '</g>';
    var parts = [];
    if (zoomed > 0) parts.push('Zoomed into ' + describe(zoomed) + '; click the root or press Esc to reset.');
    if (value[0] === 0) parts.push('No samples.');
    if (data.pruned > 0) parts.push(data.pruned + (data.pruned === 1 ? ' frame' : ' frames') + ' under ' + data.prunedBelowPercent + '% of the total left out of this page.');
    if (hidden > 0) parts.push(hidden + (hidden === 1 ? ' frame' : ' frames') + ' narrower than ' + L.minFramePx + ' px not drawn: zoom in to see them.');
    status.textContent = parts.join(' ');
  }

  function zoom(i) {
    zoomed = i;
    render();
  }

  function search(pattern) {
    if (!pattern) {
      matched = null;
      matchedText.textContent = '';
      render();
      return;
    }
    var re;
    try {
      re = new RegExp(pattern);
    } catch (e) {
      matchedText.textContent = 'Invalid regular expression: ' + e.message;
      return;
    }
    matched = new Uint8Array(names.length);
    for (var k = 0; k < names.length; k++) matched[k] = re.test(names[k]) ? 1 : 0;
    // A match inside a matched frame is already counted by that frame.
    var sum = 0;
    for (var i = 1; i < n;) {
      if (matched[nameOf[i]]) {
        sum += value[i];
        i = end[i];
      } else {
        i++;
      }
    }
    matchedText.textContent = 'Matched: ' + percent(sum) + ' (' + withUnit(sum) + ')';
    render();
  }

  function frameAt(target) {
    var g = target && target.closest ? target.closest('g.f') : null;
    return g ? +g.getAttribute('data-i') : -1;
  }

  svg.addEventListener('click', function (ev) {
    var i = frameAt(ev.target);
    if (i >= 0) zoom(i);
  });
  svg.addEventListener('mousemove', function (ev) {
    var i = frameAt(ev.target);
    if (i < 0) {
      tooltip.hidden = true;
      return;
    }
    tooltip.textContent = describe(i);
    tooltip.hidden = false;
    var x = ev.pageX + 12;
    var maxX = window.scrollX + document.documentElement.clientWidth - tooltip.offsetWidth - 4;
    tooltip.style.left = Math.max(0, Math.min(x, maxX)) + 'px';
    tooltip.style.top = ev.pageY + 16 + 'px';
  });
  svg.addEventListener('mouseleave', function () {
    tooltip.hidden = true;
  });
  document.getElementById('reset').addEventListener('click', function () {
    zoom(0);
  });
  searchBox.addEventListener('input', function () {
    search(searchBox.value);
  });
  document.addEventListener('keydown', function (ev) {
    if (ev.key === 'Escape') {
      zoom(0);
    } else if ((ev.ctrlKey || ev.metaKey) && ev.key === 'f') {
      ev.preventDefault();
      searchBox.focus();
    }
  });
  var pendingResize = false;
  window.addEventListener('resize', function () {
    if (pendingResize) return;
    pendingResize = true;
    requestAnimationFrame(function () {
      pendingResize = false;
      render();
    });
  });

  var params = new URLSearchParams(location.search);
  if (params.get('s')) {
    searchBox.value = params.get('s');
    search(searchBox.value);
  } else {
    render();
  }

  var tRender = performance.now();

  // Test hook: ?selftest=click:NAME&selftest=search:RE&selftest=hover:NAME
  // &selftest=reset runs the steps through the page's own event handlers, then writes what is
  // drawn into #selftest-result as JSON, to be read back from the DOM.
  var steps = params.getAll('selftest');
  if (steps.length > 0) {
    var log = [];
    steps.forEach(function (step) {
      var colon = step.indexOf(':');
      var verb = colon < 0 ? step : step.slice(0, colon);
      var arg = colon < 0 ? '' : step.slice(colon + 1);
      if (verb === 'click') {
        var target = null;
        svg.querySelectorAll('g.f').forEach(function (g) {
          if (target === null && names[nameOf[+g.getAttribute('data-i')]] === arg) target = g;
        });
        if (target === null) {
          log.push('no drawn frame named ' + arg);
          return;
        }
        target.dispatchEvent(new MouseEvent('click', { bubbles: true, cancelable: true, view: window }));
      } else if (verb === 'search') {
        searchBox.value = arg;
        searchBox.dispatchEvent(new Event('input', { bubbles: true }));
      } else if (verb === 'hover') {
        var over = null;
        svg.querySelectorAll('g.f').forEach(function (g) {
          if (over === null && names[nameOf[+g.getAttribute('data-i')]] === arg) over = g;
        });
        if (over === null) {
          log.push('no drawn frame named ' + arg);
          return;
        }
        var box = over.getBoundingClientRect();
        over.dispatchEvent(new MouseEvent('mousemove', {
          bubbles: true, view: window, clientX: box.left + 2, clientY: box.top + 2
        }));
      } else if (verb === 'reset') {
        document.getElementById('reset').click();
      } else {
        log.push('unknown step ' + step);
      }
    });
    var frames = [];
    svg.querySelectorAll('g.f').forEach(function (g) {
      var i = +g.getAttribute('data-i');
      var rect = g.querySelector('rect');
      frames.push({
        name: names[nameOf[i]],
        depth: depth[i],
        x: +rect.getAttribute('x'),
        y: +rect.getAttribute('y'),
        width: +rect.getAttribute('width'),
        fill: rect.getAttribute('fill'),
        ancestor: g.classList.contains('anc')
      });
    });
    var result = document.createElement('pre');
    result.id = 'selftest-result';
    result.textContent = JSON.stringify({
      log: log,
      usable: usable,
      zoomed: names[nameOf[zoomed]],
      matched: matchedText.textContent,
      tooltip: tooltip.hidden ? null : tooltip.textContent,
      ms: { parseAndLayout: Math.round(tLayout - t0), firstRender: Math.round(tRender - tLayout) },
      status: status.textContent,
      frames: frames
    });
    document.body.appendChild(result);
  }
})();
