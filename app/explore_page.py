"""The page of ``kmc explore``: its HTML, script and style, served by kmc itself (no
network access, no CDN). The script asks ``/api/...`` for everything it shows
(``explore_server``), and keeps the walk in the URL (``?walk=0.3.1``)."""

PAGE = """<!DOCTYPE html>
<html lang="en">
<head>
<meta charset="utf-8">
<meta name="viewport" content="width=device-width, initial-scale=1">
<title>kmc explore</title>
<link rel="icon" href="/favicon.svg" type="image/svg+xml">
<link rel="stylesheet" href="/explorer.css">
<script src="/explorer.js" defer></script>
</head>
<body>
<header>
  <h1 id="title">kmc explore</h1>
  <p id="spec-path" class="path"></p>
  <p id="search-status" class="search" data-state="idle">search: idle</p>
</header>
<p id="error" role="alert"></p>
<main>
  <aside>
    <section>
      <h2>Path</h2>
      <label id="initial-choice" hidden>initial state <select id="initial"></select></label>
      <div class="nav"><button id="back" title="one step back (←)">◀ back</button>
        <button id="forward" title="one step forward again (→)">forward ▶</button>
        <button id="restart" title="back to the initial state">⟲ start</button></div>
      <div id="lasso" hidden></div>
      <ol id="path"></ol>
    </section>
    <section>
      <h2>Next steps</h2>
      <div id="next"></div>
      <div id="disabled"></div>
    </section>
  </aside>
  <div class="main">
    <section>
      <h2>Properties in this state</h2>
      <ul id="properties"></ul>
    </section>
    <section>
      <h2>Verdicts of the search</h2>
      <ul id="verdicts"></ul>
      <ul id="traces"></ul>
    </section>
    <section>
      <h2 id="state-title">State</h2>
      <div id="state"></div>
      <div id="diagram" class="scroll"></div>
    </section>
  </div>
</main>
</body>
</html>
"""

SCRIPT = r"""'use strict';
const $ = (sel) => document.querySelector(sel);
let spec = null, current = null, trail = null;

function el(tag, attrs, text) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) e.setAttribute(k, v);
  if (text !== undefined) e.textContent = text;
  return e;
}

async function api(path) {
  const r = await fetch(path, {headers: {'Accept': 'application/json'}});
  const d = await r.json();
  if (!r.ok) throw new Error(d.error || ('HTTP ' + r.status));
  return d;
}

function isPrefix(a, b) {
  return a.length <= b.length && a.every((x, i) => x === b[i]);
}

async function go(walk, push = true) {
  try {
    const d = await api('/api/state?walk=' + walk.join('.'));
    current = d;
    if (!trail || !isPrefix(walk, trail)) trail = walk;
    if (push) history.pushState({walk}, '', '?walk=' + walk.join('.'));
    $('#error').textContent = '';
    render(d);
  } catch (e) {
    $('#error').textContent = e.message;
  }
}

// The walk a URL names (typed, pasted or edited by hand): its longest prefix that replays
// is shown, and the page says where the rest broke.
async function goUrl() {
  try {
    const w = new URLSearchParams(location.search).get('walk') || '0';
    const d = await api('/api/state?prefix=1&walk=' + encodeURIComponent(w));
    current = d;
    trail = d.walk;
    if (d.broken) history.replaceState({walk: d.walk}, '', '?walk=' + d.walk.join('.'));
    render(d);
    $('#error').textContent = d.broken ? d.broken.error + ' (the first ' + d.broken.kept +
                                         (d.broken.kept === 1 ? ' state is' : ' states are') + ' shown)' : '';
  } catch (e) {
    $('#error').textContent = e.message;
  }
}

function render(d) {
  const walk = d.walk;
  const path = $('#path');
  path.replaceChildren();
  d.steps.forEach((s, i) => {
    const li = el('li', {'data-index': String(i)});
    const b = el('button', {'class': 'step', 'title': s.description}, s.index + '. ' + s.action);
    b.addEventListener('click', () => go(walk.slice(0, i + 1)));
    li.append(b);
    if (s.description) li.append(el('span', {'class': 'desc'}, s.description));
    if (s.cycle) li.classList.add('cycle');
    if (s.mark) li.append(el('span', {'class': 'mark'}, '↺ ' + s.mark));
    if (i === d.steps.length - 1) li.classList.add('current');
    path.append(li);
  });
  renderLasso(d.lasso);
  // along a lasso, ▶ follows it (to its end, and round its cycle from the step back)
  if (d.lasso && !(trail && trail.length > walk.length && isPrefix(walk, trail))) trail = d.lasso.walk;
  const next = $('#next');
  next.replaceChildren();
  if (!d.enabled.length) next.append(el('p', {'class': 'note'}, 'No action is enabled: a terminal state.'));
  for (const a of d.enabled) {
    const b = el('button', {'class': 'action', 'data-choice': String(a.choice), 'data-name': a.name,
                            'title': a.description}, a.action);
    b.addEventListener('click', () => { trail = null; go(walk.concat([a.choice])); });
    next.append(b);
  }
  const off = $('#disabled');
  off.replaceChildren();
  // each action not enabled, with the conditions of its guard that fail (why not?)
  if (d.disabled.length) off.append(el('p', {'class': 'note'}, 'Not enabled, and why:'));
  for (const a of d.disabled) {
    const row = el('div', {'class': 'why-not', 'data-action': a.action});
    row.append(el('button', {'class': 'action', 'disabled': '', 'title': a.reason}, a.action));
    if (a.failing.length) {
      const ul = el('ul', {'class': 'failing'});
      for (const c of a.failing) ul.append(el('li', {}, '✗ ' + c));
      row.append(ul);
    } else {
      row.append(el('span', {'class': 'why'}, a.reason));
    }
    off.append(row);
  }
  const props = $('#properties');
  props.replaceChildren();
  for (const p of d.properties) {
    const li = el('li', {'class': 'prop ' + p.status.replace(/ /g, '-'), 'data-name': p.name,
                         'title': p.description});
    li.append(el('span', {'class': 'status'}, p.status === 'violated' ? '✗ violated' :
                                               p.status === 'holds' ? '✓ holds' :
                                               p.status === 'trap' ? '✗ trap' : p.status));
    li.append(el('b', {}, ' ' + p.name));
    if (p.reason) li.append(el('span', {'class': 'reason'}, ' — ' + p.reason));
    props.append(li);
  }
  $('#state-title').textContent = 'State ' + d.steps.length + ' of the path';
  $('#state').innerHTML = d.state_html;    // kmc's own renderers: every value escaped
  $('#diagram').innerHTML = d.diagram_svg || '';
  fitDiagram();
  $('#initial').value = String(walk[0]);
  $('#back').disabled = walk.length <= 1;
  $('#forward').disabled = !(trail && trail.length > walk.length && isPrefix(walk, trail));
}

// The swimlane fits the width of its column (down to MIN_ZOOM of its size, a wider one
// scrolls): the last column is never cut at the window's edge.
const MIN_ZOOM = 0.55;
function fitDiagram() {
  const svg = $('#diagram svg');
  if (!svg) return;
  if (!svg.dataset.width) {
    svg.dataset.width = svg.getAttribute('width');
    svg.dataset.height = svg.getAttribute('height');
  }
  const w = Number(svg.dataset.width), h = Number(svg.dataset.height);
  const avail = $('#diagram').clientWidth;
  const zoom = avail > 0 && w > avail ? Math.max(MIN_ZOOM, avail / w) : 1;
  svg.setAttribute('width', String(Math.floor(w * zoom)));
  svg.setAttribute('height', String(Math.floor(h * zoom)));
  svg.dataset.zoom = zoom.toFixed(3);
}

// A walk along a liveness counterexample (a lasso): which property it violates, where its
// cycle starts, and at its end the way back to the cycle's start (forward then walks the
// cycle again).
function renderLasso(l) {
  const box = $('#lasso');
  box.replaceChildren();
  box.hidden = !l;
  if (!l) return;
  box.className = l.at_end ? 'lasso end' : 'lasso';
  box.append(el('b', {}, '↺ ' + l.property + ': ' + l.summary));
  if (l.obligation) box.append(el('span', {'class': 'obligation'}, ' — waits for ' + l.obligation));
  if (l.at_end) {
    box.append(el('p', {'class': 'end'}, l.end));
    if (!l.stutters) {
      const b = el('button', {'id': 'cycle-back',
                              'title': 'the cycle again: back to its first state; forward walks it'},
                   '↺ back to state ' + l.cycle_start + ' (the cycle\'s start)');
      b.addEventListener('click', () => { trail = l.walk; go(l.back); });
      box.append(b);
    }
  } else {
    const where = l.in_cycle ? 'on the cycle: it repeats for ever from state '
                             : 'the path to the cycle, which starts at state ';
    box.append(el('p', {'class': 'end'}, where + l.cycle_start));
  }
}

function renderSearch(s) {
  const status = $('#search-status');
  status.dataset.state = s.state;
  let text = 'search: ' + s.state + ' · ' + s.distinct.toLocaleString('en') + ' states · depth ' + s.depth;
  if (s.message) text += ' · ' + s.message;
  status.textContent = text;
  const list = $('#verdicts');
  list.replaceChildren();
  const names = spec ? spec.properties.map(p => p.name) : Object.keys(s.verdicts);
  for (const name of names) {
    const v = s.verdicts[name];
    const li = el('li', {'class': 'verdict ' + (v ? v.verdict : 'pending'), 'data-property': name});
    li.append(el('b', {}, name + ': '));
    li.append(el('span', {'class': 'v'}, v ? v.verdict : (s.state === 'running' ? 'searching…' : '—')));
    if (v && v.walk) {
      const a = el('a', {'href': '?walk=' + v.walk.join('.'), 'class': 'counterexample', 'data-property': name},
                   ' counterexample (' + (v.lasso ? v.lasso.summary : v.walk.length + ' states') + ')');
      a.addEventListener('click', (e) => { e.preventDefault(); trail = v.walk; go(v.walk); });
      li.append(a);
    }
    if (v && v.explanation) li.append(el('span', {'class': 'reason'}, ' — ' + v.explanation));
    list.append(li);
  }
  return s.state === 'running';
}

async function pollSearch() {
  try {
    if (renderSearch(await api('/api/search'))) setTimeout(pollSearch, 500);
  } catch (e) {
    $('#error').textContent = e.message;
  }
}

async function start() {
  spec = await api('/api/spec');
  document.title = 'kmc explore: ' + (spec.title || spec.path);
  $('#title').textContent = spec.title || 'kmc explore';
  $('#spec-path').textContent = spec.path;
  if (spec.initial_states > 1) {
    const select = $('#initial');
    spec.initial_labels.forEach((label, i) => select.append(el('option', {'value': String(i)}, label)));
    select.addEventListener('change', () => { trail = null; go([Number(select.value)]); });
    $('#initial-choice').hidden = false;
  }
  const traces = $('#traces');
  for (const t of spec.traces) {
    const li = el('li', {'class': 'trace'});
    const a = el('a', {'href': '?walk=' + t.walk.join('.'), 'class': 'trace-link'}, 'trace ' + t.name +
                 ' (' + (t.lasso ? t.lasso.property + ': ' + t.lasso.summary : t.walk.length + ' states') + ')');
    a.addEventListener('click', (e) => { e.preventDefault(); trail = t.walk; go(t.walk); });
    li.append(a);
    traces.append(li);
  }
  $('#back').addEventListener('click', () => current && go(current.walk.slice(0, -1)));
  $('#forward').addEventListener('click', () => current && trail && go(trail.slice(0, current.walk.length + 1)));
  $('#restart').addEventListener('click', () => current && go(current.walk.slice(0, 1)));
  document.addEventListener('keydown', (e) => {
    if (e.target.tagName === 'INPUT') return;
    if (e.key === 'ArrowLeft' && !$('#back').disabled) $('#back').click();
    if (e.key === 'ArrowRight' && !$('#forward').disabled) $('#forward').click();
  });
  window.addEventListener('popstate', () => goUrl());
  window.addEventListener('resize', fitDiagram);
  await goUrl();
  pollSearch();
  document.body.dataset.ready = '1';
}

start().catch((e) => { $('#error').textContent = e.message; });
"""

STYLE = """
:root { color-scheme: light; }
body { font-family: Helvetica, Arial, 'DejaVu Sans', sans-serif; color: #1a1a1a; margin: 8px 14px;
       background: #fff; font-size: 14px; }
header h1 { font-size: 20px; margin: 4px 0; }
.path { font-family: Menlo, Consolas, 'DejaVu Sans Mono', monospace; color: #555; margin: 0; }
.search { color: #555; margin: 4px 0; }
.search[data-state=running] { color: #1f5fbf; }
#error { color: #b71c1c; font-weight: bold; min-height: 1em; margin: 2px 0; }
main { display: grid; grid-template-columns: minmax(260px, 340px) minmax(0, 1fr); gap: 18px; }
h2 { font-size: 15px; margin: 10px 0 4px; color: #333; }
ol#path { padding-left: 0; list-style: none; margin: 4px 0; }
ol#path li { margin: 1px 0; }
ol#path li .desc { display: block; color: #666; font-size: 12px; margin: 0 0 3px 8px; }
ol#path li.current button.step { background: #fff4c2; border-color: #c9a400; font-weight: bold; }
button { font: inherit; font-size: 13px; border: 1px solid #bbb; background: #f6f6f6; border-radius: 4px;
         padding: 2px 7px; margin: 2px 3px 2px 0; cursor: pointer; }
button:hover:not(:disabled) { background: #e8eefc; border-color: #1f5fbf; }
button:disabled { color: #aaa; cursor: default; background: #fafafa; border-color: #ddd; }
button.step { font-family: Menlo, Consolas, 'DejaVu Sans Mono', monospace; font-size: 12px; text-align: left; }
button.action { font-family: Menlo, Consolas, 'DejaVu Sans Mono', monospace; font-size: 12px; }
#disabled { margin-top: 4px; }
#disabled .why-not { margin: 1px 0 3px; }
#disabled ul.failing { list-style: none; margin: 0 0 0 10px; padding: 0; color: #8a1c1c; font-size: 12px; }
#disabled span.why { color: #666; font-size: 12px; margin-left: 4px; }
ul#properties, ul#verdicts, ul#traces { list-style: none; padding-left: 0; margin: 4px 0; }
li.prop, li.verdict { margin: 2px 0; padding: 2px 6px; border-left: 4px solid #999; }
li.prop.holds, li.prop.goal { border-color: #2e7d32; }
li.prop.holds .status, li.prop.goal .status, li.prop.reached .status { color: #2e7d32; font-weight: bold; }
li.prop.violated { border-color: #c62828; background: #fdecea; }
li.prop.violated .status { color: #c62828; font-weight: bold; }
li.prop.not-a-goal .status { color: #e65100; }
li.prop.trap { border-color: #c62828; background: #fdecea; }
li.prop.trap .status { color: #c62828; font-weight: bold; }
#initial-choice { display: block; margin: 2px 0 4px; }
#initial-choice[hidden] { display: none; }
li.prop.waits .status { color: #e65100; }
li.verdict.holds .v { color: #2e7d32; font-weight: bold; }
li.verdict.violated .v { color: #c62828; font-weight: bold; }
li.verdict.unknown .v { color: #e65100; }
.reason { color: #444; }
pre.state { font-family: Menlo, Consolas, 'DejaVu Sans Mono', monospace; font-size: 12.5px; line-height: 1.25;
            background: #fbfbfb; border: 1px solid #eee; padding: 6px; overflow-x: auto; margin: 4px 0; }
p.state-line { font-family: Menlo, Consolas, 'DejaVu Sans Mono', monospace; font-size: 13px; background: #fbfbfb;
               border: 1px solid #eee; padding: 6px; margin: 4px 0; }
details.fields summary { color: #555; cursor: pointer; font-size: 12px; }
table.fields th { text-align: left; padding-right: 12px; color: #555; font-weight: normal; }
table.fields tr.changed td { background: #fff4c2; }
.scroll { overflow-x: auto; margin-top: 8px; }
.scroll svg { display: block; }
.note { color: #666; }
ol#path li.cycle { border-left: 3px dashed #c62828; padding-left: 4px; }
ol#path li .mark { display: block; color: #b71c1c; font-size: 12px; font-weight: bold; margin: 0 0 3px 8px; }
#lasso { border: 1px solid #c62828; background: #fdecea; border-radius: 4px; padding: 4px 7px; margin: 4px 0; }
#lasso[hidden] { display: none; }
#lasso b { color: #b71c1c; }
#lasso p.end { margin: 3px 0; color: #5d1a1a; }
"""

# The tab's icon: a node with two successors, in the page's colours.
FAVICON = """<svg xmlns="http://www.w3.org/2000/svg" viewBox="0 0 32 32">
<rect width="32" height="32" rx="6" fill="#1f5fbf"/>
<path d="M9 16 L23 8 M9 16 L23 24" stroke="#fff" stroke-width="2.5" fill="none"/>
<circle cx="9" cy="16" r="4" fill="#fff"/><circle cx="23" cy="8" r="3.5" fill="#fff4c2"/>
<circle cx="23" cy="24" r="3.5" fill="#fff4c2"/>
</svg>
"""
