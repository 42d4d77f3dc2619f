// Errors in the dashboard, each where it belongs and each dismissible: a
// run's errors in its run view; an error event of a session outside any
// run (an unknown agent, a duplicate decision, nothing to abort) in that
// session's view, or in the banner when the page has no run of the
// session; the stream's notices (a replay clipped) in the banner. A
// dismissed error stays dismissed across reloads: its key (time, session
// and message, the same when the event is replayed) is remembered in
// localStorage, at most MAX_DISMISSED of them.
'use strict';

const MAX_DISMISSED = 500;
const DISMISSED_KEY = 'agentfleet.dismissed';

const dismissed = loadDismissed();

function loadDismissed() {
  try {
    const v = JSON.parse(localStorage.getItem(DISMISSED_KEY) || '[]');
    return new Set(Array.isArray(v) ? v.filter((k) => typeof k === 'string').slice(-MAX_DISMISSED) : []);
  } catch {
    return new Set();
  }
}

function saveDismissed() {
  const keys = [...dismissed].slice(-MAX_DISMISSED);
  try { localStorage.setItem(DISMISSED_KEY, JSON.stringify(keys)); } catch { /* storage full or off: kept for this page only */ }
}

// errorKey names an error across reloads.
function errorKey(e) {
  return [e.time || '', e.agent || '', e.session || '', e.run || '', e.message || ''].join('\n');
}

function dismiss(key) {
  dismissed.add(key);
  while (dismissed.size > MAX_DISMISSED) dismissed.delete(dismissed.values().next().value);
  saveDismissed();
  state.dirty.errors = state.dirty.run = true;
  schedule();
}

function isDismissed(key) { return dismissed.has(key); }

// addError keeps an error outside any run: ev is an error event (agent,
// session, message, time) or a page's own error ({message, agent?,
// session?}); a notice of the stream has neither agent nor session and
// is not remembered once dismissed (notice: true).
function addError(ev, notice) {
  const e = { time: ev.time || new Date().toISOString(), agent: ev.agent || '', session: ev.session || '',
    message: ev.message || 'error', notice: !!notice };
  e.key = errorKey(e);
  if (state.errors.some((x) => x.key === e.key)) return;
  state.errors.push(e);
  if (state.errors.length > MAX_ERRORS) state.errors.shift();
  state.dirty.errors = state.dirty.run = true;
}

// errorInSession reports whether e shows in a session's view rather than
// in the banner: it names a session the page has a run of.
function errorInSession(e) {
  return e.agent && e.session && state.sessions.has(sessionKey(e.agent, e.session));
}

// errorLine is one dismissible error: its time, where, what, and ×.
function errorLine(e, where) {
  const b = el('button', { type: 'button', className: 'dismiss', title: 'dismiss', 'aria-label': 'dismiss' }, '×');
  b.addEventListener('click', () => {
    if (e.notice) {
      state.errors = state.errors.filter((x) => x !== e);
      state.dirty.errors = true;
      schedule();
    } else {
      dismiss(e.key);
    }
  });
  return el('p', { className: 'error', 'data-key': e.key },
    (e.time ? e.time.slice(11, 19) + ' ' : '') + (where && e.agent ? e.agent + '/' + e.session + ': ' : '') + e.message, ' ', b);
}

function renderErrors() {
  state.dirty.errors = false;
  const box = $('errors');
  const shown = state.errors.filter((e) => !isDismissed(e.key) && !errorInSession(e)).slice(-5).reverse();
  const lines = shown.map((e) => errorLine(e, true));
  if (shown.length > 1) {
    const all = el('button', { type: 'button', id: 'dismiss-all', className: 'dismiss' }, 'dismiss all');
    all.addEventListener('click', () => {
      for (const e of shown) if (!e.notice) dismissed.add(e.key);
      state.errors = state.errors.filter((e) => !(e.notice && shown.includes(e)));
      saveDismissed();
      state.dirty.errors = true;
      schedule();
    });
    lines.push(el('p', {}, all));
  }
  box.replaceChildren(...lines);
  box.hidden = shown.length === 0;
}

// sessionErrors returns the dismissible lines of the errors outside any
// run of the session of run, newest first.
function sessionErrors(run) {
  return state.errors.filter((e) => e.agent === run.agent && e.session === run.session && !isDismissed(e.key))
    .slice(-5).reverse().map((e) => errorLine(e, false));
}

// runErrors returns the run's failures, first its own, then each failed
// tool call, and its budget stop; dismissed together, by the run's id.
function runErrors(run) {
  const key = 'run\n' + run.id + '\n' + run.errors.length + '\n' + run.status;
  const errs = [];
  if (run.errorMessage) errs.push(el('p', {}, run.status + ': ' + run.errorMessage));
  for (const e of run.errors) errs.push(el('p', {}, e));
  for (const b of run.budgets) errs.push(el('p', { className: 'budget' }, budgetText(b)));
  for (const c of run.calls.values()) {
    if (c.isError) errs.push(el('p', {}, c.name + ' (' + c.outcome + '): ' + shorten(resultText(c.result), FOLD)));
  }
  if (!errs.length || isDismissed(key)) return null;
  const b = el('button', { type: 'button', className: 'dismiss', title: 'dismiss', 'aria-label': 'dismiss' }, '×');
  b.addEventListener('click', () => dismiss(key));
  errs[0].append(' ', b);
  return el('div', { className: 'errors run-errors' }, ...errs);
}

function budgetText(b) {
  if (b.limit_usd) return 'budget ' + (b.budget || '?') + ' exceeded: used ' + usdText(b.used_usd || 0) + ' of ' + usdText(b.limit_usd);
  return 'budget ' + (b.budget || '?') + ' exceeded: used ' + (b.used || 0) + ' of ' + (b.limit || 0);
}
