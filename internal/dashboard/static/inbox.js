// The approvals inbox: every call that waits for a person's decision, in
// every session the page has, newest first, with its deadline and a link
// to the call in its run; the session list marks the sessions that wait.
'use strict';

// pending holds the calls waiting: run id + call id -> {run, c}.
const pending = new Map();

// notePending updates the inbox after an event of run about call c (c
// null for a run's own event).
function notePending(run, c) {
  if (c) {
    const k = childKey(run.id, c.id);
    if (waitsForDecision(run, c)) pending.set(k, { run, c });
    else pending.delete(k);
  } else if (run.status !== 'running') {
    for (const cc of run.calls.values()) pending.delete(childKey(run.id, cc.id));
  }
}

// waitsForDecision reports whether call c of run waits for a decision.
function waitsForDecision(run, c) {
  return !!(c.approval && c.approval.decision === 'pending' && !c.end && run.status === 'running');
}

// waitingIn counts the calls of run waiting for a decision.
function waitingIn(run) {
  let n = 0;
  for (const c of run.calls.values()) if (waitsForDecision(run, c)) n++;
  return n;
}

// forgetPending drops the calls of a run the page forgets.
function forgetPending(run) {
  for (const c of run.calls.values()) pending.delete(childKey(run.id, c.id));
}

function renderInbox() {
  const box = $('approvals');
  const rows = [...pending.values()].filter(({ run }) => state.runs.has(run.id))
    .sort((a, b) => (Date.parse(b.c.approval.since) || 0) - (Date.parse(a.c.approval.since) || 0));
  box.hidden = rows.length === 0;
  box.dataset.count = String(rows.length);
  if (!rows.length) {
    box.replaceChildren();
    return;
  }
  const now = Date.now();
  const list = el('ol', {}, ...rows.slice(0, 100).map(({ run, c }) => {
    const dl = Date.parse(c.approval.deadline);
    return el('li', { className: 'pending', 'data-agent': run.agent, 'data-session': run.session, 'data-tool-call-id': c.id },
      el('a', { href: runLink(run.agent, run.session, run.id, c.id) }, run.agent + '/' + run.session),
      ' ', el('span', { className: 'name' }, c.name),
      ' ', el('span', { className: 'muted' }, 'since ' + (c.approval.since || '').slice(11, 19)),
      ' ', el('span', { className: 'deadline', title: c.approval.deadline || '' },
        dl ? 'deadline ' + c.approval.deadline.slice(11, 19) + ' (' + (dl > now ? 'in ' + countdown(dl - now) : 'passed') + ')' : 'no deadline'));
  }));
  box.replaceChildren(el('h2', {}, 'Waiting for a decision (' + rows.length + ')'), list);
}

// countdown shows the time left, to the second: 9m 59s, 42s.
function countdown(ms) {
  const s = Math.ceil(ms / 1000);
  const h = Math.floor(s / 3600), m = Math.floor(s % 3600 / 60), r = s % 60;
  return (h ? h + 'h ' : '') + (h || m ? m + 'm ' : '') + r + 's';
}
