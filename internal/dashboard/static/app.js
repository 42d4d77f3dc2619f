// The agentfleet dashboard: it follows the fleet's events through
// Server-Sent Events (api/events), keeps at most maxRuns runs in memory,
// and renders the sessions, the chosen run and the fleet. Everything it
// shows from the fleet goes into the page as text (textContent, text
// nodes), never as markup.
'use strict';

const params = new URLSearchParams(location.search);
const MAX_TEXT = 100000;     // characters of streamed text kept per turn
const MAX_UPDATES = 20;      // progress updates kept per tool call
const MAX_ERRORS = 50;       // errors kept, fleet-wide and per run
const FOLD = 160;            // characters of a value shown before it is folded
const TRACE_ID = /^[0-9a-f]{32}$/; // a W3C trace id; anything else is not shown

const state = {
  maxRuns: Number(params.get('max_runs')) || 200,
  runs: new Map(),       // run id -> run, oldest first
  sessions: new Map(),   // "agent/session" -> session summary, least recently updated first
  errors: [],            // errors outside any run, newest last
  selected: null,        // "agent/session"
  selectedRun: null,     // run id, or null for the session's latest
  events: 0,
  lastId: 0,
  readOnly: true,
  fleet: false,
  traceURL: '',          // the server's trace URL template, or '' for no links
  traceView: false,      // whether the server has the built-in trace view (trace.html)
  replayed: false,
  dirty: { sessions: true, run: true, errors: true },
  workers: new Map(),    // worker id -> {w, seen, lost, prev}
  children: new Map(),   // parent run id + call id -> ids of the runs that call started
  focusCall: null,       // the tool call id the address names, marked in its run
  scrollToCall: false,
  showStored: false,     // whether the stored view of the selected session is asked for (stored.js)
};

const $ = (id) => document.getElementById(id);

// el builds an element: attrs are set as attributes (or properties for
// className), children are nodes or strings, strings become text nodes.
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

// --- the event stream ---------------------------------------------------

let source = null;

function connect() {
  if (source) source.close();
  const q = new URLSearchParams();
  q.set('since', $('since').value);
  q.set('max_runs', String(state.maxRuns));
  source = new EventSource('api/events?' + q.toString());
  setConn('connecting');
  source.addEventListener('hello', (e) => {
    const h = JSON.parse(e.data);
    state.maxRuns = h.max_runs;
    state.readOnly = h.read_only;
    state.fleet = h.fleet;
    state.traceURL = traceURLOf(h.trace_url);
    state.traceView = h.trace_view === true;
    $('send').hidden = h.read_only;
    $('tab-fleet').hidden = !h.fleet;
    $('logout').hidden = !h.logout;
    document.body.dataset.readOnly = String(h.read_only);
    setConn('replaying');
    state.dirty.run = true;
    schedule();
  });
  source.addEventListener('replayed', () => {
    state.replayed = true;
    document.body.dataset.replayed = 'true';
    setConn('live');
  });
  source.addEventListener('notice', (e) => {
    addError({ message: JSON.parse(e.data).message, time: new Date().toISOString() }, true);
    schedule();
  });
  source.onmessage = (e) => {
    const id = Number(e.lastEventId) || 0;
    if (id && id <= state.lastId) return; // seen already
    if (id) state.lastId = id;
    let ev;
    try { ev = JSON.parse(e.data); } catch { return; }
    ingest(ev);
    schedule();
  };
  source.onerror = () => {
    // A refusal (503 when the server serves as many pages as it may, 401
    // when the login expired) closes the stream for good: open it again
    // later, or reload for the login page.
    if (source.readyState === EventSource.CLOSED) {
      setConn('closed, retrying');
      setTimeout(connect, 5000);
      return;
    }
    setConn('reconnecting');
  };
}

function setConn(s) {
  const c = $('conn');
  c.dataset.state = s;
  c.textContent = s;
}

// --- the model ------------------------------------------------------------

function sessionKey(agent, session) { return agent + '/' + session; }

function ingest(ev) {
  state.events++;
  if (!ev || typeof ev.type !== 'string') return;
  if (!ev.run_id) {
    if (ev.type === 'error') addError(ev);
    return;
  }
  let run = state.runs.get(ev.run_id);
  if (!run) run = newRun(ev);
  run.last = ev.time || run.last;
  if (typeof ev.trace_id === 'string' && TRACE_ID.test(ev.trace_id)) run.traceId = ev.trace_id;
  noteParent(run, ev);
  let call = null;
  switch (ev.type) {
    case 'run.start':
    case 'run.resumed':
      run.start = ev.time || run.start;
      run.orchestrator = ev.orchestrator || run.orchestrator;
      run.status = 'running';
      break;
    case 'run.suspended':
      run.status = 'suspended';
      break;
    case 'context.compacted':
    case 'budget.exceeded':
      noteRunEvent(run, ev);
      break;
    case 'run.end': {
      run.status = ev.stop_reason || 'stop';
      run.end = ev.time;
      const m = ev.assistant || {};
      if (m.usage) run.usage = m.usage;
      if (m.error_message) run.errorMessage = m.error_message;
      break;
    }
    case 'turn.start':
      turnOf(run, ev.turn).start = ev.time;
      break;
    case 'turn.end':
      turnOf(run, ev.turn).end = ev.time;
      break;
    case 'message.update': {
      const t = turnOf(run, ev.turn);
      if (t.text.length < MAX_TEXT) t.text += ev.delta || '';
      break;
    }
    case 'message.end': {
      const t = turnOf(run, ev.turn);
      const m = ev.assistant || {};
      const text = (m.content || []).filter((c) => c && c.type === 'text').map((c) => c.text || '').join('');
      if (text) t.text = text.slice(0, MAX_TEXT);
      if (m.usage) t.usage = m.usage;
      if (m.error_message) t.error = m.error_message;
      break;
    }
    case 'tool.start': {
      const c = call = callOf(run, ev);
      c.start = ev.time;
      c.args = ev.arguments;
      if (run.direct) settleDirect(run, ev);
      break;
    }
    case 'tool.approval': {
      // A call that waits for a person: pending with its deadline, then
      // the decision.
      const c = call = callOf(run, ev);
      c.approval = { decision: ev.decision, deadline: ev.deadline || (c.approval && c.approval.deadline), reason: ev.reason || '', by: ev.decision_id || '',
        since: ev.decision === 'pending' ? ev.time : (c.approval && c.approval.since) || ev.time };
      break;
    }
    case 'tool.update': {
      const c = call = callOf(run, ev);
      if (noteRetry(c, ev.partial)) break;
      c.updates.push(ev.partial);
      if (c.updates.length > MAX_UPDATES) c.updates.shift();
      break;
    }
    case 'tool.end': {
      const c = call = callOf(run, ev);
      c.end = ev.time;
      c.result = ev.result;
      c.isError = !!ev.is_error;
      c.outcome = ev.outcome || (c.isError ? 'error' : 'ok');
      c.duration = ev.duration_ms;
      c.worker = ev.worker;
      c.attempt = ev.attempt;
      if (!c.start && ev.time && ev.duration_ms) c.start = new Date(Date.parse(ev.time) - ev.duration_ms).toISOString();
      if (run.direct) settleDirect(run, ev);
      break;
    }
    case 'error':
      run.errors.push(ev.message || 'error');
      if (run.errors.length > MAX_ERRORS) run.errors.shift();
      break;
  }
  notePending(run, call);
  touchSession(run);
  if (state.selected === sessionKey(run.agent, run.session) || nestedInShown(run)) state.dirty.run = true;
}

function newRun(ev) {
  const run = {
    id: ev.run_id, agent: ev.agent, session: ev.session, status: 'running',
    start: ev.time, last: ev.time, end: null, turns: new Map(), calls: new Map(),
    usage: null, errors: [], errorMessage: '', orchestrator: '', traceId: '', parent: null,
    direct: isDirect(ev.run_id), budgets: [],
  };
  state.runs.set(run.id, run);
  // The cap: drop the oldest runs, never the one on screen.
  for (const [id] of state.runs) {
    if (state.runs.size <= state.maxRuns) break;
    if (id === shownRunId()) continue;
    dropChild(state.runs.get(id));
    forgetPending(state.runs.get(id));
    state.runs.delete(id);
  }
  return run;
}

function turnOf(run, n) {
  let t = run.turns.get(n);
  if (!t) {
    t = { n, start: null, end: null, text: '', usage: null, error: '', calls: [], compactions: [] };
    run.turns.set(n, t);
  }
  return t;
}

function callOf(run, ev) {
  let c = run.calls.get(ev.tool_call_id);
  if (!c) {
    c = { id: ev.tool_call_id, name: ev.tool_name, turn: ev.turn, start: null, end: null, args: undefined,
      updates: [], result: null, isError: false, outcome: '', duration: 0, worker: '', attempt: 0, approval: null, retries: [] };
    run.calls.set(c.id, c);
    turnOf(run, ev.turn).calls.push(c);
  }
  return c;
}

function touchSession(run) {
  const key = sessionKey(run.agent, run.session);
  let s = state.sessions.get(key);
  if (s && s.runId !== run.id && s.time && run.start && Date.parse(run.start) < Date.parse(s.time) && s.status !== 'running') {
    // An older run of the session (replay of a resumed run): keep the latest.
    return;
  }
  if (s) state.sessions.delete(key);
  s = { agent: run.agent, session: run.session, runId: run.id, status: run.status, time: run.last,
    tools: run.calls.size, tokens: tokensOf(run), cost: sessionCost(run.agent, run.session), errorMessage: run.errorMessage, direct: run.direct, waiting: waitingIn(run) };
  state.sessions.set(key, s);
  for (const [k] of state.sessions) {
    if (state.sessions.size <= state.maxRuns) break;
    if (k !== state.selected) state.sessions.delete(k);
  }
  state.dirty.sessions = true;
}

function tokensOf(run) {
  if (run.usage) return run.usage.total_tokens || 0;
  let n = 0;
  for (const t of run.turns.values()) if (t.usage) n += t.usage.total_tokens || 0;
  return n;
}

// costOf returns what a run's model calls cost, in dollars: its final
// usage's, else the sum of its turns' so far.
function costOf(run) {
  if (run.usage) return Number(run.usage.cost) || 0;
  let c = 0;
  for (const t of run.turns.values()) if (t.usage) c += Number(t.usage.cost) || 0;
  return c;
}

// sessionCost sums the cost of the runs of a session that the page holds.
function sessionCost(agent, session) {
  let c = 0;
  for (const r of runsOf(agent, session)) c += costOf(r);
  return c;
}

// usdText writes dollars, with enough decimals for one small call.
function usdText(c) {
  return '$' + (c >= 0.01 ? c.toFixed(4) : c.toFixed(6));
}

function failed(status) {
  return status === 'error' || status === 'aborted' || status === 'length' || status === 'max_turns';
}

// --- rendering ------------------------------------------------------------

let scheduled = false;

function schedule() {
  if (scheduled) return;
  scheduled = true;
  requestAnimationFrame(() => {
    scheduled = false;
    render();
  });
}

function render() {
  $('stats').textContent = state.events + ' events · ' + state.runs.size + '/' + state.maxRuns + ' runs';
  document.body.dataset.events = String(state.events);
  document.body.dataset.runs = String(state.runs.size);
  if (state.dirty.errors) renderErrors();
  if (state.dirty.sessions) {
    renderSessions();
    renderInbox();
  }
  if (state.dirty.run) renderRun();
}

function renderSessions() {
  state.dirty.sessions = false;
  const fa = $('filter-agent').value.trim().toLowerCase();
  const fs = $('filter-session').value.trim().toLowerCase();
  const st = $('filter-status').value;
  const rows = [];
  for (const s of state.sessions.values()) {
    if (fa && !s.agent.toLowerCase().includes(fa)) continue;
    if (fs && !s.session.toLowerCase().includes(fs)) continue;
    if (st && !(st === 'failed' ? failed(s.status) : s.status === st)) continue;
    rows.push(s);
  }
  // Failures first, then the most recent.
  rows.sort((a, b) => (failed(b.status) - failed(a.status)) || (Date.parse(b.time) || 0) - (Date.parse(a.time) || 0));
  const frag = document.createDocumentFragment();
  for (const s of rows.slice(0, 500)) {
    const key = sessionKey(s.agent, s.session);
    const tr = el('tr', {
      className: 'session' + (failed(s.status) ? ' failed' : '') + (key === state.selected ? ' selected' : '') + (s.waiting ? ' waiting' : ''),
      'data-agent': s.agent, 'data-session': s.session, 'data-status': s.status, 'data-run-id': s.runId,
      'data-kind': s.direct ? 'direct' : 'run', 'data-waiting': s.waiting ? String(s.waiting) : null,
    },
    el('td', {}, s.agent), el('td', {}, s.session),
    el('td', { className: 'status status-' + s.status }, s.status, s.direct ? el('span', { className: 'muted' }, ' (call)') : '',
      s.waiting ? el('span', { className: 'badge waiting-badge', title: s.waiting + ' calls wait for a decision' }, 'waits for approval') : ''),
    el('td', { title: s.runId }, s.runId.replace(/^direct-/, '').slice(0, 8)),
    el('td', {}, s.tools), el('td', {}, s.tokens || ''), el('td', { className: 'cost' }, s.cost ? usdText(s.cost) : ''),
    el('td', { title: s.time || '' }, s.time ? new Date(s.time).toLocaleTimeString() : ''));
    tr.addEventListener('click', () => { location.hash = encodeURIComponent(key); });
    frag.append(tr);
  }
  $('sessions').tBodies[0].replaceChildren(frag);
  $('sessions').dataset.rows = String(rows.length);
  $('sessions-empty').hidden = state.sessions.size > 0;
}

function select(key, runId) {
  state.selected = key;
  state.selectedRun = runId || null;
  const s = state.sessions.get(key);
  if (s) {
    $('send-agent').value = s.agent;
    $('send-session').value = s.session;
  }
  state.dirty.sessions = state.dirty.run = true;
  render();
}

function shownRunId() {
  if (state.selectedRun && state.runs.has(state.selectedRun)) return state.selectedRun;
  const s = state.selected && state.sessions.get(state.selected);
  return s ? s.runId : null;
}

function renderRun() {
  state.dirty.run = false;
  const box = $('run');
  const run = state.runs.get(shownRunId());
  // The stored view: asked for, or the only view of a session no event
  // of which the page has seen.
  const storedView = !!state.selected && (state.showStored || !run);
  $('run-empty').hidden = !!run || storedView;
  box.hidden = !run && !storedView;
  if (storedView) {
    renderStored(box);
    return;
  }
  delete box.dataset.stored;
  if (!run) {
    box.replaceChildren();
    return;
  }
  box.dataset.runId = run.id;
  box.dataset.agent = run.agent;
  box.dataset.session = run.session;
  box.dataset.status = run.status;
  const head = el('div', { className: 'run-head' },
    el('h2', {}, run.agent + '/' + run.session),
    el('span', { className: 'fact' }, run.direct ? 'direct call ' : 'run ', el('code', {}, run.id)),
    run.traceId && traceFact(run.traceId),
    run.parent && parentFact(run),
    el('span', { className: 'fact' }, 'stop reason ', el('span', { className: 'stop-reason status status-' + run.status }, run.status)),
    el('span', { className: 'fact tokens' }, tokenText(run)),
    costOf(run) > 0 && el('span', { className: 'fact cost', title: 'this run; the session so far: ' + usdText(sessionCost(run.agent, run.session)) }, usdText(costOf(run))),
    el('span', { className: 'fact run-duration' }, durationText(run.start, run.end || (run.status === 'running' ? new Date().toISOString() : run.last))),
    run.orchestrator && el('span', { className: 'fact muted' }, 'orchestrator ' + run.orchestrator));
  if (run.status === 'running' && !run.direct && !state.readOnly) {
    const b = el('button', { id: 'abort-button', type: 'button' }, 'Abort');
    b.addEventListener('click', () => abortRun(run));
    head.append(b);
  }
  const others = runsOf(run.agent, run.session);
  if (others.length > 1) {
    const sel = el('select', { id: 'run-select' }, ...others.map((r) =>
      el('option', { value: r.id, selected: r.id === run.id ? 'selected' : null }, (r.start || '').slice(11, 19) + ' ' + r.id.slice(0, 8) + ' ' + r.status)));
    sel.addEventListener('change', () => { state.selectedRun = sel.value; state.dirty.run = true; render(); });
    head.append(sel);
  }
  if (!run.direct) {
    const b = el('button', { type: 'button', className: 'stored-link' }, 'stored history');
    b.addEventListener('click', () => { location.hash = storedLink(run.agent, run.session); });
    head.append(b);
  }
  // Failures first: the session's errors outside any run, the run's
  // error, then each failed tool call.
  const parts = [head];
  const serrs = sessionErrors(run);
  if (serrs.length) parts.push(el('div', { className: 'errors session-errors' }, ...serrs));
  const rerrs = runErrors(run);
  if (rerrs) parts.push(rerrs);
  const t0 = Date.parse(run.start) || 0;
  const t1 = Math.max(Date.parse(run.end || run.last) || 0, t0 + 1);
  for (const t of [...run.turns.values()].sort((a, b) => a.n - b.n)) {
    if (t.n === 0 && !t.text && t.calls.length === 0 && t.compactions.length === 0) continue;
    const turn = el('div', { className: 'turn', 'data-turn': t.n },
      el('h3', {}, 'turn ' + t.n + (t.usage ? ' · ' + (t.usage.total_tokens || 0) + ' tokens' : '')));
    if (t.text) turn.append(el('div', { className: 'text' }, t.text));
    if (t.error) turn.append(el('div', { className: 'errors' }, t.error));
    for (const k of t.compactions) turn.append(el('div', { className: 'compacted' }, compactionText(k)));
    for (const c of t.calls) turn.append(renderCall(run, c, t0, t1));
    parts.push(turn);
  }
  box.replaceChildren(...parts);
  focusCall(box);
}

function renderCall(run, c, t0, t1) {
  const s = Date.parse(c.start) || t0;
  const e = c.end ? Date.parse(c.end) : Math.max(Date.now(), s);
  const left = Math.max(0, Math.min(100, (s - t0) / (t1 - t0) * 100));
  const width = Math.max(0.5, Math.min(100 - left, (e - s) / (t1 - t0) * 100));
  const bar = el('div', { className: 'bar', title: c.name });
  bar.style.left = left + '%';
  bar.style.width = width + '%';
  const div = el('div', {
    className: 'tool' + (c.isError ? ' failed' : ''), 'data-tool-call-id': c.id, 'data-tool': c.name,
    'data-outcome': c.outcome || (waitsForDecision(run, c) ? 'waiting' : 'running'),
  },
  el('div', { className: 'tool-label' },
    el('span', { className: 'name' }, c.name),
    el('span', { className: 'outcome' }, callState(run, c)),
    el('span', { className: 'duration' }, callDuration(run, c)),
    c.worker && workerLabel(c.worker),
    c.attempt > 0 && el('span', { className: 'attempt' + (c.attempt > 1 ? ' retried' : '') }, 'attempt ' + c.attempt)),
  el('div', { className: 'track' }, bar), ...retryLines(c));
  if (c.approval) div.append(renderApproval(run, c));
  if (c.args !== undefined) div.append(fold('arguments', json(c.args), 'tool-args'));
  if (c.updates.length) div.append(el('div', { className: 'progress' }, 'progress: ' + shorten(json(c.updates[c.updates.length - 1]), FOLD)));
  if (c.result) div.append(fold('result', resultText(c.result) || json(c.result), 'tool-result'), ...mediaBlocks(c.result));
  div.append(...renderChildren(run, c));
  return div;
}

// traceFact shows a run's trace id, shortened, as a link to the tracing UI
// when the server names one. The id has passed TRACE_ID.
function traceFact(id) {
  const short = el('code', {}, id.slice(0, 8) + '…');
  let href = '';
  if (state.traceURL) href = state.traceURL.split('{trace_id}').join(encodeURIComponent(id));
  else if (state.traceView) href = 'trace.html#' + encodeURIComponent(id);
  const shown = href ? el('a', { href, target: '_blank', rel: 'noopener' }, short) : short;
  return el('span', { className: 'fact trace', title: 'trace ' + id, 'data-trace-id': id }, 'trace ', shown);
}

// traceURLOf returns the trace URL template of hello if it is one the page
// may link to (the server checked it already), else ''.
function traceURLOf(u) {
  return typeof u === 'string' && /^https?:\/\//i.test(u) && u.includes('{trace_id}') ? u : '';
}

// renderApproval shows what became of a call that waits for approval:
// while it waits (and its run goes on), its deadline and, unless the page
// is read only, buttons to approve or reject it.
function renderApproval(run, c) {
  const a = c.approval;
  const waiting = waitsForDecision(run, c);
  const box = el('div', { className: 'approval', 'data-decision': a.decision },
    waiting ? (a.deadline ? 'deadline ' + a.deadline.slice(11, 19) : 'no deadline')
      : 'approval: ' + a.decision + (a.reason ? ' (' + a.reason + ')' : '') + (a.by ? ' · decision ' + a.by : ''));
  if (waiting && !state.readOnly) {
    const yes = el('button', { type: 'button', className: 'approve-button' }, 'Approve');
    const no = el('button', { type: 'button', className: 'reject-button' }, 'Reject');
    yes.addEventListener('click', () => decide(run, c, true, [yes, no]));
    no.addEventListener('click', () => decide(run, c, false, [yes, no]));
    box.append(' ', yes, ' ', no);
  }
  return box;
}

// fold shows a value in a <details>: the start of it as the summary, the
// whole when opened. Short values are shown open.
function fold(label, text, className) {
  const d = el('details', { className }, el('summary', {}, label + ': ' + shorten(text, FOLD)), el('pre', {}, text));
  if (text.length <= FOLD) d.open = true;
  return d;
}

function resultText(r) {
  if (!r) return '';
  return (r.content || []).map((c) => (c && c.type === 'text' ? c.text || '' : '[' + (c && c.type) + ']')).join('\n');
}

function json(v) {
  try { return JSON.stringify(v, null, 1) ?? ''; } catch { return String(v); }
}

function shorten(s, n) { return s.length <= n ? s : s.slice(0, n - 1) + '…'; }

function msText(ms) {
  if (!ms && ms !== 0) return '';
  return ms < 1000 ? ms.toFixed(ms < 10 ? 1 : 0) + ' ms' : (ms / 1000).toFixed(2) + ' s';
}

function durationText(a, b) {
  const d = (Date.parse(b) || 0) - (Date.parse(a) || 0);
  return d > 0 ? msText(d) : '';
}

function tokenText(run) {
  const u = run.usage;
  if (u) return (u.input_tokens || 0) + ' in · ' + (u.output_tokens || 0) + ' out · ' + (u.total_tokens || 0) + ' tokens';
  const n = tokensOf(run);
  return n ? n + ' tokens' : '';
}

function runsOf(agent, session) {
  const out = [];
  for (const r of state.runs.values()) if (r.agent === agent && r.session === session) out.push(r);
  return out.reverse();
}

// --- actions --------------------------------------------------------------

async function post(path, body) {
  const res = await fetch(path, { method: 'POST', headers: { 'Content-Type': 'application/json' }, body: JSON.stringify(body) });
  const data = await res.json().catch(() => ({}));
  if (!res.ok) throw new Error(data.error || res.status + ' ' + res.statusText);
  return data;
}

async function abortRun(run) {
  const b = $('abort-button');
  if (b) b.disabled = true;
  try {
    const r = await post('api/abort', { agent: run.agent, session: run.session, reason: 'aborted from the dashboard' });
    if (r.stop_reason !== 'aborted') addError({ agent: run.agent, session: run.session, message: 'abort: ' + (r.error_message || r.stop_reason) });
  } catch (err) {
    addError({ agent: run.agent, session: run.session, message: 'abort: ' + err.message });
  }
  schedule();
}

async function decide(run, c, approve, buttons) {
  for (const b of buttons) b.disabled = true;
  try {
    await post('api/approve', { agent: run.agent, session: run.session, tool_call_id: c.id, approve });
  } catch (err) {
    addError({ agent: run.agent, session: run.session, message: (approve ? 'approve ' : 'reject ') + c.name + ': ' + err.message });
    for (const b of buttons) b.disabled = false;
  }
  schedule();
}

async function send(ev) {
  ev.preventDefault();
  const status = $('send-status');
  const agent = $('send-agent').value.trim();
  const session = $('send-session').value.trim();
  status.textContent = 'sending…';
  try {
    await post('api/send', { agent, session, content: $('send-content').value });
    status.textContent = 'sent';
    $('send-content').value = '';
    location.hash = encodeURIComponent(sessionKey(agent, session));
  } catch (err) {
    status.textContent = err.message;
  }
}

// --- the fleet ------------------------------------------------------------

let fleetTimer = null;

async function pollFleet() {
  try {
    const res = await fetch('api/fleet');
    const data = await res.json();
    if (!res.ok) throw new Error(data.error || res.statusText);
    const now = Date.parse(data.time) || Date.now();
    const seen = new Set();
    for (const w of data.workers) {
      seen.add(w.id);
      const prev = state.workers.get(w.id);
      let rate = prev ? prev.rate : 0;
      if (prev && now > prev.at) rate = Math.max(0, (w.requests - prev.w.requests) / ((now - prev.at) / 1000));
      state.workers.set(w.id, { w, at: now, rate, lost: false });
    }
    for (const [id, x] of state.workers) {
      if (!seen.has(id)) {
        x.lost = true;
        if (now - x.at > 5 * 60 * 1000) state.workers.delete(id);
      }
    }
    renderFleet();
    $('fleet-status').textContent = data.workers.length + ' workers at ' + new Date(now).toLocaleTimeString();
  } catch (err) {
    $('fleet-status').textContent = 'fleet: ' + err.message;
  }
}

function renderFleet() {
  const frag = document.createDocumentFragment();
  for (const { w, rate, lost } of state.workers.values()) {
    const cap = w.concurrency || 0;
    const inflight = w.in_flight >= 0 ? w.in_flight : 0;
    const meter = el('span', { className: 'inflight' }, el('span', {}));
    meter.firstChild.style.width = (cap ? Math.min(100, inflight / cap * 100) : 0) + '%';
    frag.append(el('tr', { className: 'worker' + (lost ? ' lost' : ''), 'data-worker': w.id },
      el('td', { className: 'worker-id', title: w.name + '/' + w.id }, el('code', {}, w.name + '/' + w.id), lost ? ' (lost)' : ''),
      el('td', {}, w.version),
      el('td', {}, meter, (w.in_flight >= 0 ? String(w.in_flight) : '?') + (cap ? ' / ' + cap : '')),
      el('td', {}, rate.toFixed(1)),
      el('td', {}, w.requests), el('td', {}, w.errors),
      el('td', { title: w.tools.map((t) => t.name).join(', ') }, w.tools.map((t) => t.name).join(', '))));
  }
  $('fleet').tBodies[0].replaceChildren(frag);
}

function show(view) {
  document.body.dataset.view = view;
  $('sessions-view').hidden = view !== 'sessions';
  $('run-view').hidden = view !== 'sessions';
  $('fleet-view').hidden = view !== 'fleet';
  clearInterval(fleetTimer);
  if (view === 'fleet') {
    pollFleet();
    fleetTimer = setInterval(pollFleet, 2000);
  }
}

// --- start ----------------------------------------------------------------

// The hash names the session shown (#agent%2Fsession), and optionally a
// run of it and a call of that run (&run=<id>&call=<id>), so that a link
// opens it, or its stored history (&stored=1).
function fromHash() {
  const { key, runId, callId } = parseHash(location.hash);
  if (!key) return;
  state.showStored = wantsStored(location.hash);
  state.focusCall = callId;
  state.scrollToCall = !!callId;
  select(key, runId);
}

function start() {
  if (params.has('since')) $('since').value = params.get('since');
  window.addEventListener('hashchange', fromHash);
  for (const id of ['filter-agent', 'filter-session', 'filter-status']) {
    $(id).addEventListener('input', () => { state.dirty.sessions = true; render(); });
  }
  for (const b of document.querySelectorAll('.tab')) b.addEventListener('click', () => show(b.dataset.view));
  $('send').addEventListener('submit', send);
  startStoredForm();
  $('since').addEventListener('change', () => {
    state.runs.clear();
    state.children.clear();
    pending.clear();
    state.sessions.clear();
    state.errors = [];
    state.events = 0;
    state.lastId = 0;
    state.dirty = { sessions: true, run: true, errors: true };
    connect();
    render();
  });
  // Running tool bars grow with the clock.
  setInterval(() => {
    const run = state.runs.get(shownRunId());
    if (run && run.status === 'running') { state.dirty.run = true; schedule(); }
  }, 500);
  // The inbox's deadlines count down.
  setInterval(() => { if (pending.size) { state.dirty.sessions = true; schedule(); } }, 1000);
  connect();
  fromHash();
  render();
}

start();
