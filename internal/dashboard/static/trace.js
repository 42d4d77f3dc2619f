// The built-in trace view: the spans of one trace that the orchestrator
// kept (api/trace), as a waterfall: each span a row under its parent, a
// bar from its start for its duration, its name, duration, status, and,
// opened, its attributes and events. The trace id comes from the address
// (trace.html#<id>); everything from the server goes in as text.
'use strict';

const TRACE_ID = /^[0-9a-f]{32}$/;
const MAX_DEPTH = 32;

const $ = (id) => document.getElementById(id);

function el(tag, attrs, ...children) {
  const e = document.createElement(tag);
  for (const [k, v] of Object.entries(attrs || {})) {
    if (v === undefined || v === null || v === false) continue;
    if (k === 'className') e.className = v;
    else e.setAttribute(k, String(v));
  }
  for (const c of children) {
    if (c === undefined || c === null || c === false) continue;
    e.append(typeof c === 'string' || typeof c === 'number' ? document.createTextNode(String(c)) : c);
  }
  return e;
}

function msText(ms) {
  if (!ms && ms !== 0) return '';
  return ms < 1000 ? ms.toFixed(ms < 10 ? 1 : 0) + ' ms' : (ms / 1000).toFixed(2) + ' s';
}

// order returns the spans depth first, each after its parent, children by
// start; a span whose parent is not kept is a root. Each gets its depth.
function order(spans) {
  const ids = new Set(spans.map((s) => s.span_id));
  const kids = new Map();
  const roots = [];
  for (const s of spans) {
    if (s.parent_id && ids.has(s.parent_id) && s.parent_id !== s.span_id) {
      if (!kids.has(s.parent_id)) kids.set(s.parent_id, []);
      kids.get(s.parent_id).push(s);
    } else {
      roots.push(s);
    }
  }
  const out = [];
  const seen = new Set();
  const walk = (s, depth) => {
    if (seen.has(s.span_id)) return; // a cycle or a repeat: shown once
    seen.add(s.span_id);
    out.push({ s, depth: Math.min(depth, MAX_DEPTH) });
    for (const k of kids.get(s.span_id) || []) walk(k, depth + 1);
  };
  for (const r of roots) walk(r, 0);
  return out;
}

function render(reply) {
  const spans = Array.isArray(reply.spans) ? reply.spans : [];
  const t0 = Math.min(...spans.map((s) => Date.parse(s.start) || Infinity));
  const t1 = Math.max(...spans.map((s) => Date.parse(s.end) || -Infinity), t0 + 1);
  const rows = order(spans).map(({ s, depth }) => {
    const start = Date.parse(s.start) || t0;
    const left = Math.max(0, Math.min(100, (start - t0) / (t1 - t0) * 100));
    const width = Math.max(0.3, Math.min(100 - left, (Number(s.duration_ms) || 0) / (t1 - t0) * 100));
    const bar = el('div', { className: 'bar' });
    bar.style.left = left + '%';
    bar.style.width = width + '%';
    const label = el('div', { className: 'span-label' },
      el('span', { className: 'name' }, String(s.name || '')),
      el('span', { className: 'duration' }, msText(Number(s.duration_ms))),
      s.service && el('span', { className: 'muted' }, String(s.service)),
      s.kind && s.kind !== 'internal' && el('span', { className: 'muted' }, String(s.kind)),
      s.status === 'error' && el('span', { className: 'status status-error' }, 'error' + (s.status_message ? ': ' + s.status_message : '')),
      s.parent_id && depth === 0 && el('span', { className: 'muted' }, 'parent ' + s.parent_id + ' not kept'));
    label.style.paddingLeft = depth * 1.2 + 'rem';

    const attrs = (Array.isArray(s.attributes) ? s.attributes : []).map((kv) =>
      el('tr', {}, el('td', {}, String(kv.key)), el('td', {}, String(kv.value))));
    const evs = (Array.isArray(s.events) ? s.events : []).map((e) =>
      el('tr', { className: 'span-event' }, el('td', {}, 'event ' + String(e.name) + ' +' + msText((Date.parse(e.time) || start) - start)),
        el('td', {}, (Array.isArray(e.attributes) ? e.attributes : []).map((kv) => kv.key + '=' + kv.value).join(' '))));
    const details = el('details', { className: 'span-details' }, el('summary', {}, (attrs.length) + ' attributes, ' + evs.length + ' events' + (s.dropped ? ', ' + s.dropped + ' dropped' : '')),
      el('table', {}, el('tr', {}, el('td', {}, 'span id'), el('td', {}, String(s.span_id))), ...attrs, ...evs));
    details.style.marginLeft = depth * 1.2 + 0.5 + 'rem';
    return el('div', { className: 'span' + (s.status === 'error' ? ' failed' : ''), 'data-span-id': String(s.span_id), 'data-parent-id': String(s.parent_id || ''), 'data-depth': depth },
      label, el('div', { className: 'track' }, bar), details);
  });
  $('waterfall').replaceChildren(...rows);
  const k = reply.kept || {};
  $('trace-status').textContent = spans.length + ' spans, ' + msText(t1 - t0) + ' · the orchestrator keeps its last ' + (k.max_spans || '?') + ' spans';
  document.body.dataset.spans = String(spans.length);
}

async function load() {
  const id = decodeURIComponent(location.hash.replace(/^#/, ''));
  document.body.dataset.state = 'loading';
  $('waterfall').replaceChildren();
  if (!TRACE_ID.test(id)) {
    $('trace-status').textContent = 'no trace id in the address: trace.html#<32 lowercase hex digits>';
    document.body.dataset.state = 'error';
    return;
  }
  $('trace-title').textContent = 'trace ' + id;
  try {
    const res = await fetch('api/trace?id=' + encodeURIComponent(id));
    const data = await res.json().catch(() => ({}));
    if (!res.ok) throw new Error(data.error || res.status + ' ' + res.statusText);
    render(data);
    document.body.dataset.state = 'shown';
  } catch (err) {
    $('waterfall').replaceChildren();
    $('trace-status').textContent = err.message;
    document.body.dataset.state = 'error';
  }
}

window.addEventListener('hashchange', load);
load();
