// A stored session in the dashboard: its records as the orchestrators
// keep them (GET api/history, page by page), grouped by run, for any
// session of the store, not only those whose events the page saw. The
// address #agent%2Fsession&stored=1 opens it; the form "Open a stored
// session" makes that address. Records are untrusted text: they go into
// the page as text nodes only. Loaded before app.js, which calls
// renderStored when the stored view is asked for or no live run is known.
'use strict';

const STORED_PAGE = 500;   // records asked per request
const STORED_AUTO = 2000;  // records loaded before "Load more" is offered

// stored is the stored view's cache: one session at a time.
const stored = { key: '', records: [], next: 0, lastSeq: 0, loading: false, error: '', done: false, version: 0 };

// storedLink returns the address of the stored view of a session.
function storedLink(agent, session) {
  return '#' + encodeURIComponent(sessionKey(agent, session)) + '&stored=1';
}

// wantsStored reports whether an address asks for the stored view.
function wantsStored(hash) {
  return new URLSearchParams(hash.replace(/^#/, '').split('&').slice(1).join('&')).get('stored') === '1';
}

// loadStored fetches pages of key's records from stored.next on, until
// STORED_AUTO more are loaded or the history ends.
async function loadStored(key) {
  const [agent, session] = key.split('/');
  if (stored.key !== key) Object.assign(stored, { key, records: [], next: 0, lastSeq: 0, error: '', done: false });
  if (stored.loading || stored.done) return;
  stored.loading = true;
  bumpStored();
  try {
    for (let got = 0; got < STORED_AUTO && !stored.done && stored.key === key;) {
      const q = new URLSearchParams({ agent, session, limit: String(STORED_PAGE) });
      if (stored.next) q.set('from_seq', String(stored.next));
      const r = await fetch('api/history?' + q.toString(), { cache: 'no-store' });
      const body = await r.json().catch(() => ({}));
      if (stored.key !== key) return;
      if (!r.ok) throw new Error(body.error || ('HTTP ' + r.status));
      const recs = Array.isArray(body.records) ? body.records : [];
      stored.records.push(...recs);
      stored.lastSeq = Number(body.last_seq) || 0;
      got += recs.length;
      stored.next = Number(body.next) || 0;
      stored.done = !stored.next;
      bumpStored();
    }
  } catch (e) {
    if (stored.key === key) stored.error = String(e.message || e);
  } finally {
    if (stored.key === key) stored.loading = false;
    bumpStored();
  }
}

function bumpStored() {
  stored.version++;
  state.dirty.run = true;
  schedule();
}

// storedRuns groups records by run, in the order their runs first appear.
function storedRuns(records) {
  const runs = new Map();
  for (const r of records) {
    const id = typeof r.run_id === 'string' && r.run_id ? r.run_id : '(no run)';
    if (!runs.has(id)) runs.set(id, []);
    runs.get(id).push(r);
  }
  return runs;
}

// recordText is what the page shows of a record: the text of a message,
// its tool calls, a tool result, the final text of a run; other kinds as
// JSON, folded.
function recordText(r) {
  if (r.omitted) return '(' + Number(r.size || 0) + ' bytes, too large for one page: agentctl history --json shows it)';
  const b = r.body;
  if (!b || typeof b !== 'object') return '';
  if (Array.isArray(b.content)) {
    const parts = [];
    if (typeof b.tool_name === 'string') parts.push(b.tool_name + (b.is_error ? ' (error)' : '') + ':');
    for (const c of b.content) {
      if (!c || typeof c !== 'object') continue;
      if (typeof c.text === 'string' && c.text) parts.push(c.text);
      else if (typeof c.name === 'string' && c.name) parts.push('→ ' + c.name + ' ' + (c.arguments === undefined ? '' : JSON.stringify(c.arguments)));
      else if (typeof c.$ref === 'string') parts.push('[file ' + c.$ref + ']');
      else if (typeof c.type === 'string') parts.push('[' + c.type + ']');
    }
    return parts.join(' ');
  }
  return JSON.stringify(b);
}

// renderStored fills box with the stored view of the selected session.
function renderStored(box) {
  const key = state.selected;
  if (stored.key !== key || (!stored.loading && !stored.done && !stored.error && stored.records.length === 0)) {
    loadStored(key);
  }
  if (box.dataset.storedVersion === String(stored.version) && box.dataset.stored === key) return;
  box.dataset.stored = key;
  box.dataset.storedVersion = String(stored.version);
  delete box.dataset.runId;
  const [agent, session] = key.split('/');
  box.dataset.agent = agent;
  box.dataset.session = session;
  box.dataset.status = 'stored';
  const head = el('div', { className: 'run-head' },
    el('h2', {}, key),
    el('span', { className: 'fact' }, 'stored history'),
    el('span', { className: 'fact stored-count' }, stored.records.length + ' records' + (stored.lastSeq ? ', last seq ' + stored.lastSeq : '')));
  if (runsOf(agent, session).length) {
    const live = el('button', { type: 'button', className: 'live-link' }, 'live view');
    live.addEventListener('click', () => { location.hash = encodeURIComponent(key); });
    head.append(live);
  }
  const parts = [head];
  if (stored.error) parts.push(el('div', { className: 'errors stored-error' }, stored.error));
  else if (stored.done && stored.records.length === 0) parts.push(el('p', { className: 'muted stored-empty' }, 'No stored record of this session.'));
  for (const [id, recs] of storedRuns(stored.records)) {
    const run = el('div', { className: 'stored-run', 'data-run-id': id }, el('h3', {}, 'run ', el('code', {}, id)));
    for (const r of recs) {
      run.append(el('div', { className: 'record', 'data-seq': r.seq, 'data-kind': r.kind },
        el('span', { className: 'seq' }, r.seq + '.' + r.index),
        el('span', { className: 'kind' }, r.kind),
        r.writer && el('span', { className: 'muted writer' }, r.writer),
        el('span', { className: 'record-text' }, shorten(recordText(r), FOLD * 4))));
    }
    parts.push(run);
  }
  if (stored.loading) parts.push(el('p', { className: 'muted' }, 'loading…'));
  else if (!stored.done && !stored.error) {
    const more = el('button', { type: 'button', id: 'stored-more' }, 'Load more');
    more.addEventListener('click', () => loadStored(key));
    parts.push(more);
  }
  box.replaceChildren(...parts);
}

// startStoredForm wires the form that opens a stored session.
function startStoredForm() {
  $('open-stored').addEventListener('submit', (ev) => {
    ev.preventDefault();
    const agent = $('stored-agent').value.trim(), session = $('stored-session').value.trim();
    if (!TOKEN.test(agent) || !TOKEN.test(session)) {
      $('stored-status').textContent = 'agent and session are names of letters, digits, - and _';
      return;
    }
    $('stored-status').textContent = '';
    stored.key = ''; // a fresh read
    const h = storedLink(agent, session);
    if (location.hash === h) fromHash();
    else location.hash = h;
  });
}
