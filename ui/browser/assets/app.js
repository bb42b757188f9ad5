// app.js — the live UI that dsh serve serves at /ui: the session list, one
// session's view streamed from the API's event stream (rendered by the
// same SessionView as the static trace), the prompt box, approvals, the
// usage panel, rewind and new sessions. It talks to the API of its own
// origin only, authenticated by the HttpOnly log-in cookie, and sends the
// log-in's CSRF token with every request that changes anything.
'use strict';
(function (dsh) {
  const {el, clear, visible} = dsh.dom;
  const F = dsh.fmt;
  const boot = JSON.parse(document.getElementById('dsh-boot').textContent);
  const MODES = ['default', 'acceptEdits', 'plan', 'bypassPermissions'];
  const LIST_POLL_MS = 2500;
  const CHILD_POLL_MS = 1200;

  // ---- the API ----

  class APIError extends Error {
    constructor(status, body) {
      super((body && body.error) || 'HTTP ' + status);
      this.status = status;
      this.code = body && body.code;
      this.body = body;
    }
  }

  async function api(method, path, body) {
    const headers = {Accept: 'application/json'};
    if (method !== 'GET') headers['X-CSRF-Token'] = boot.csrf;
    if (body !== undefined) headers['Content-Type'] = 'application/json';
    const r = await fetch(path, {method, headers, body: body === undefined ? undefined : JSON.stringify(body), credentials: 'same-origin', cache: 'no-store'});
    if (r.status === 401) {
      // The log-in ended (expired, or its token was revoked).
      location.assign('/ui');
      throw new APIError(401, {error: 'logged out'});
    }
    if (r.status === 204) return null;
    let data = null;
    try {
      data = await r.json();
    } catch (e) {
      data = null;
    }
    if (!r.ok) throw new APIError(r.status, data);
    return data;
  }
  const enc = encodeURIComponent;
  const sessionPath = (id) => '/v1/sessions/' + enc(id);

  // ---- the page's frame ----

  const ui = {};
  function frame() {
    const root = document.getElementById('app');
    clear(root);
    ui.search = el('input', {type: 'search', id: 'search', placeholder: 'Search sessions (/)', 'aria-label': 'Search sessions', autocomplete: 'off', spellcheck: 'false'});
    ui.fWorkspace = el('select', {id: 'f-workspace', 'aria-label': 'Workspace'}, el('option', {value: ''}, 'All workspaces'));
    ui.fStatus = el('select', {id: 'f-status', 'aria-label': 'Status'},
      [['', 'Any status'], ['running', 'Running'], ['waiting', 'Waiting for approval'], ['idle', 'Idle'], ['stored', 'Stored']].map(([v, t]) => el('option', {value: v}, t)));
    ui.fModel = el('select', {id: 'f-model', 'aria-label': 'Model'}, el('option', {value: ''}, 'Any model'));
    ui.list = el('ul', {class: 'session-list', id: 'sessions', 'aria-label': 'Sessions'});
    ui.sidebar = el('aside', {class: 'sidebar', 'aria-label': 'Sessions'},
      el('div', {class: 'side-tools'}, ui.search, el('div', {class: 'row'}, ui.fWorkspace, ui.fStatus), el('div', {class: 'row'}, ui.fModel)),
      ui.list);
    ui.main = el('section', {class: 'mainpane', id: 'main', 'aria-live': 'off'});
    ui.app = el('div', {class: 'app'}, ui.sidebar, ui.main);
    ui.usageBtn = el('button', {id: 'usage-toggle', class: 'btn', type: 'button', 'aria-expanded': 'false', 'aria-controls': 'usage-panel', title: 'Usage (u)', disabled: true}, 'Usage');
    ui.newBtn = el('button', {id: 'new-session', class: 'btn primary', type: 'button', title: 'New session (n)', 'aria-label': 'New session'},
      el('span', {class: 'label-long'}, 'New session'), el('span', {class: 'label-short', 'aria-hidden': 'true'}, '+ New'));
    ui.theme = el('button', {id: 'theme-toggle', class: 'icon-btn', type: 'button'});
    const help = el('button', {class: 'icon-btn', type: 'button', title: 'Keyboard shortcuts (?)', 'aria-label': 'Keyboard shortcuts'}, '?');
    help.addEventListener('click', () => dsh.keys.help());
    const logout = el('button', {id: 'logout', class: 'btn', type: 'button', title: 'Log out'}, 'Log out');
    logout.addEventListener('click', async () => {
      try {
        await api('POST', '/ui/logout');
      } finally {
        location.assign('/ui');
      }
    });
    const top = el('header', {class: 'topbar'},
      el('a', {class: 'brand', href: '#'}, 'dsh', el('span', {class: 'dot'}, '·'), 'serve'),
      el('span', {class: 'spacer'}),
      el('span', {class: 'who', title: 'Logged in with token ' + boot.token}, visible(boot.token) + (boot.access === 'full' ? '' : ' (read-only)')),
      ui.newBtn, ui.usageBtn, ui.theme, help, logout);
    ui.panel = el('aside', {id: 'usage-panel', class: 'panel', hidden: true, 'aria-label': 'Usage'},
      el('div', {class: 'panel-head'}, el('h2', null, 'Usage'), el('button', {class: 'icon-btn panel-close', type: 'button', 'aria-label': 'Close usage'}, '\u2715')),
      el('div', {class: 'panel-body', tabindex: '-1'}));
    root.append(top, ui.app, ui.panel);
    if (boot.access !== 'full') ui.newBtn.disabled = true;
    ui.newBtn.addEventListener('click', () => newSession());
    ui.usageBtn.addEventListener('click', () => togglePanel());
    ui.panel.querySelector('.panel-close').addEventListener('click', () => togglePanel(false));
    for (const n of [ui.search, ui.fWorkspace, ui.fStatus, ui.fModel]) n.addEventListener('input', () => renderList());
    ui.search.addEventListener('keydown', (e) => {
      if (e.key === 'ArrowDown' || e.key === 'Enter') {
        const first = ui.list.querySelector('.session-item');
        if (first) {
          e.preventDefault();
          if (e.key === 'Enter') first.click();
          else first.focus();
        }
      } else if (e.key === 'Escape') {
        ui.search.value = '';
        renderList();
      }
    });
    ui.list.addEventListener('keydown', (e) => {
      const items = [...ui.list.querySelectorAll('.session-item')];
      const i = items.indexOf(document.activeElement);
      if (i < 0) return;
      if (e.key === 'ArrowDown' || e.key === 'ArrowUp') {
        e.preventDefault();
        const n = items[Math.max(0, Math.min(items.length - 1, i + (e.key === 'ArrowDown' ? 1 : -1)))];
        n.focus();
      }
    });
    dsh.theme.init(ui.theme);
  }

  function togglePanel(open) {
    const o = open === undefined ? ui.panel.hidden : open;
    if (o && !cur) return;
    ui.panel.hidden = !o;
    ui.usageBtn.setAttribute('aria-expanded', String(o));
    if (o) {
      dsh.usage.render(ui.panel.querySelector('.panel-body'), cur.view);
      ui.panel.querySelector('.panel-body').focus();
    } else ui.usageBtn.focus();
  }

  // ---- the session list ----

  let sessions = [];
  let roots = [];
  let listTimer = 0;

  async function refreshList() {
    clearTimeout(listTimer);
    try {
      const r = await api('GET', '/v1/sessions?limit=500');
      sessions = r.sessions || [];
      renderList();
    } catch (e) {
      if (e.status !== 401) showListError(e);
    }
    listTimer = setTimeout(refreshList, document.hidden ? LIST_POLL_MS * 4 : LIST_POLL_MS);
  }

  function showListError(e) {
    clear(ui.list).appendChild(el('li', {class: 'list-empty', role: 'alert'}, 'Could not list sessions: ' + e.message));
  }

  function statusOf(s) {
    return s.pendingApprovals > 0 ? 'waiting' : s.status;
  }

  function fillSelect(sel, values, label) {
    const want = sel.value;
    const have = [...sel.options].slice(1).map((o) => o.value);
    if (have.length === values.length && have.every((v, i) => v === values[i])) return;
    while (sel.options.length > 1) sel.remove(1);
    for (const v of values) sel.appendChild(el('option', {value: v}, label ? label(v) : v));
    sel.value = values.includes(want) ? want : '';
  }

  function renderList() {
    const ws = [...new Set([...roots, ...sessions.map((s) => s.workspace)])].filter(Boolean).sort();
    fillSelect(ui.fWorkspace, ws, (w) => visible(w));
    fillSelect(ui.fModel, [...new Set(sessions.map((s) => s.model).filter(Boolean))].sort(), (m) => visible(m));
    const q = ui.search.value.trim().toLowerCase();
    const fw = ui.fWorkspace.value, fs = ui.fStatus.value, fm = ui.fModel.value;
    const shown = sessions.filter((s) => {
      if (fw && s.workspace !== fw && !s.workspace.startsWith(fw + '/')) return false;
      if (fs && statusOf(s) !== fs) return false;
      if (fm && s.model !== fm) return false;
      if (q && !((s.title || '') + ' ' + s.id + ' ' + s.workspace + ' ' + (s.model || '')).toLowerCase().includes(q)) return false;
      return true;
    });
    const focused = document.activeElement && document.activeElement.closest ? document.activeElement.closest('.session-item') : null;
    const focusedID = focused ? focused.getAttribute('data-id') : null;
    clear(ui.list);
    if (!shown.length) {
      ui.list.appendChild(el('li', {class: 'list-empty'}, sessions.length ? 'No session matches.' : 'No sessions yet. Start one with “New session”.'));
      return;
    }
    const now = Date.now();
    for (const s of shown) {
      const st = statusOf(s);
      const a = el('a', {class: 'session-item', href: '#/s/' + enc(s.id), 'data-id': s.id, 'data-status': st,
        'aria-current': cur && cur.id === s.id ? 'true' : 'false'},
      el('span', {class: 's-title'}, visible(s.title || s.id)),
      el('span', {class: 's-meta'},
        el('span', {class: 'status-dot ' + st, title: st}), el('span', {class: 'sr-only'}, st),
        el('span', null, F.ago(s.lastActivity, now)),
        s.model ? el('span', null, '· ' + visible(s.model)) : null,
        el('span', {class: 'muted', title: s.workspace}, '· ' + visible(tail(s.workspace))),
        s.pendingApprovals ? el('span', {class: 'chip warn'}, s.pendingApprovals + ' to approve') : null));
      ui.list.appendChild(el('li', null, a));
      if (s.id === focusedID) a.focus({preventScroll: true});
    }
  }

  function tail(path) {
    const parts = String(path || '').split('/').filter(Boolean);
    return parts.slice(-2).join('/') || path;
  }

  // ---- one session ----

  let cur = null;

  function closeCurrent() {
    if (!cur) return;
    cur.closed = true;
    if (cur.es) cur.es.close();
    for (const c of cur.childPolls) clearTimeout(c.timer);
    cur = null;
  }

  function showEmpty() {
    closeCurrent();
    ui.app.classList.remove('viewing');
    ui.usageBtn.disabled = true;
    togglePanelClosed();
    clear(ui.main).appendChild(el('div', {class: 'empty-state'},
      el('h1', null, 'No session open'),
      el('p', null, 'Pick a session on the left, or start a new one.'),
      boot.access === 'full' ? el('button', {class: 'btn primary', type: 'button', on: {click: () => newSession()}}, 'New session') : null));
    renderList();
  }

  function togglePanelClosed() {
    ui.panel.hidden = true;
    ui.usageBtn.setAttribute('aria-expanded', 'false');
  }

  async function open(id) {
    closeCurrent();
    ui.app.classList.add('viewing');
    const c = {id, closed: false, childPolls: [], info: null};
    cur = c;
    renderList();
    // The pane: head, scrolling timeline, prompt box.
    c.title = el('div', {class: 'view-title', id: 'view-title'}, visible(id));
    c.status = el('span', {class: 'chip', id: 'view-status'}, 'loading');
    c.model = el('span', {class: 'chip mono', id: 'view-model', hidden: true});
    c.mode = el('select', {id: 'mode', 'aria-label': 'Permission mode', title: 'Permission mode'}, MODES.map((m) => el('option', {value: m}, m)));
    c.rewindBtn = el('button', {class: 'btn', type: 'button', id: 'rewind', title: 'Rewind code and conversation'}, 'Rewind');
    const back = el('button', {class: 'icon-btn back-btn', type: 'button', 'aria-label': 'Back to the sessions'}, '\u2190');
    back.addEventListener('click', () => (location.hash = ''));
    c.crumbs = el('nav', {class: 'crumbs-small', 'aria-label': 'Parent sessions'});
    const head = el('div', {class: 'view-head'}, back, c.title, el('div', {class: 'view-meta'}, c.crumbs, c.status, c.model, c.mode, c.rewindBtn));
    c.plan = el('aside', {class: 'plan', id: 'plan', hidden: true}, el('h2', null, 'Plan'));
    c.timeline = el('div', {class: 'timeline', id: 'timeline'});
    c.scroller = el('div', {class: 'scroller', id: 'scroller'}, el('div', {class: 'inner'}, c.plan, c.timeline));
    c.prompt = el('textarea', {id: 'prompt', rows: '2', placeholder: 'Message the agent (c) — Ctrl+Enter sends; while it works, steers', 'aria-label': 'Message', spellcheck: 'true'});
    c.send = el('button', {id: 'send', class: 'btn primary', type: 'button', title: 'Send (Ctrl+Enter)'}, 'Send');
    c.cancel = el('button', {id: 'cancel', class: 'btn danger', type: 'button', title: 'Cancel the running turn (Esc in the prompt box)', disabled: true}, 'Cancel');
    c.note = el('span', {class: 'composer-note', id: 'composer-note', role: 'status'});
    const composer = el('div', {class: 'composer'},
      el('div', {class: 'composer-status'}, c.note),
      el('div', {class: 'inner'}, c.prompt, el('div', {class: 'actions'}, c.send, c.cancel)));
    clear(ui.main).append(head, c.scroller, composer);
    ui.usageBtn.disabled = false;
    if (boot.access !== 'full') {
      for (const n of [c.prompt, c.send, c.cancel, c.mode, c.rewindBtn]) n.disabled = true;
    }

    c.atBottom = true;
    c.scroller.addEventListener('scroll', () => {
      const s = c.scroller;
      c.atBottom = s.scrollHeight - s.scrollTop - s.clientHeight < 40;
    }, {passive: true});
    c.view = new dsh.view.SessionView(c.timeline, {
      live: boot.access === 'full',
      prices: boot.prices,
      diffMode: dsh.store('dsh.diff') || 'unified',
      onDiffMode: (m) => dsh.store('dsh.diff', m),
      onAnswer: (callId, answer) => api('POST', sessionPath(id) + '/approvals/' + enc(callId), answer),
      childHref: (child) => '#/s/' + enc(child),
      onOpenChild: (child) => (location.hash = '#/s/' + enc(child)),
      nested: (child, host) => followChild(c, child, host),
      onRender: () => stick(c),
      onChange: (kind) => changed(c, kind),
    });
    c.send.addEventListener('click', () => submit(c));
    c.cancel.addEventListener('click', () => cancelTurn(c));
    c.prompt.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        submit(c);
      } else if (e.key === 'Escape') {
        e.preventDefault();
        if (c.view.running) cancelTurn(c);
        else c.prompt.blur();
      }
    });
    c.prompt.addEventListener('input', () => grow(c.prompt));
    c.mode.addEventListener('change', () => setMode(c, c.mode.value));
    c.rewindBtn.addEventListener('click', () => rewind(c));

    try {
      c.info = await api('GET', sessionPath(id));
    } catch (e) {
      if (c.closed) return;
      clear(c.timeline).appendChild(el('div', {class: 'note bad', role: 'alert'}, e.status === 404 ? 'No such session (or not one this token may see).' : 'Could not open the session: ' + e.message));
      c.status.textContent = 'error';
      return;
    }
    if (c.closed) return;
    showInfo(c);
    // History first, in pages applied at once; then the stream from where
    // the history ended (the stream resumes by itself after a drop, from
    // the last seq it delivered).
    let from = 0;
    try {
      for (;;) {
        const page = await api('GET', sessionPath(id) + '/events?from=' + from + '&limit=2000');
        if (c.closed) return;
        c.view.applyAll(page.events || []);
        from = page.next;
        if (!page.more) break;
      }
    } catch (e) {
      if (!c.closed) c.view.note('bad', 'Could not read the history: ' + e.message);
    }
    stick(c, true);
    stream(c, from);
    refreshStatus(c);
  }

  function stream(c, from) {
    const es = new EventSource(sessionPath(c.id) + '/stream?from=' + from);
    c.es = es;
    es.onmessage = (m) => {
      let ev;
      try {
        ev = JSON.parse(m.data);
      } catch (e) {
        return;
      }
      c.view.apply(ev);
    };
    // Live output of running calls: not in the log, so no id.
    es.addEventListener('progress', (m) => {
      let p;
      try {
        p = JSON.parse(m.data);
      } catch (e) {
        return;
      }
      if (p && typeof p.call === 'string' && typeof p.output === 'string') c.view.progress(p.call, p.output);
    });
    es.onopen = () => setNote(c, '');
    es.onerror = () => {
      if (c.closed) return;
      if (es.readyState === EventSource.CLOSED) {
        setNote(c, 'The event stream closed; reconnecting…', true);
        setTimeout(() => !c.closed && stream(c, c.view.lastSeq + 1), 2000);
      } else setNote(c, 'Reconnecting to the event stream…', true);
    };
  }

  function showInfo(c) {
    const s = c.info;
    c.title.textContent = visible(s.title || s.id);
    c.title.title = s.id + ' · ' + s.workspace;
    if (s.model) {
      c.model.hidden = false;
      c.model.textContent = visible(s.model);
    }
    if (s.permissionMode) c.mode.value = s.permissionMode;
    clear(c.crumbs);
    if (s.parent) c.crumbs.appendChild(el('a', {class: 'chip', href: '#/s/' + enc(s.parent), id: 'parent-link'}, '\u2191 parent session'));
    document.title = (s.title || s.id) + ' · dsh';
  }

  async function refreshStatus(c) {
    try {
      const s = await api('GET', sessionPath(c.id));
      if (c.closed) return;
      c.info = s;
      showInfo(c);
    } catch (e) {
      return;
    }
    changed(c, 'status');
  }

  function changed(c, kind) {
    if (kind === 'status' || kind === 'approvals') {
      const v = c.view;
      const waiting = v.pending.size > 0;
      const st = waiting ? 'waiting' : v.running ? 'running' : c.info ? (c.info.status === 'running' ? 'idle' : c.info.status) : 'idle';
      c.status.textContent = st === 'waiting' ? 'waiting for approval' : st;
      c.status.className = 'chip status-' + st;
      c.status.setAttribute('data-status', st);
      c.send.textContent = v.running ? 'Steer' : 'Send';
      c.send.title = v.running ? 'Steer the running turn (Ctrl+Enter)' : 'Send (Ctrl+Enter)';
      c.cancel.disabled = !v.running || boot.access !== 'full';
      if (v.mode && c.mode.value !== v.mode) c.mode.value = v.mode;
      const item = ui.list.querySelector('.session-item[data-id="' + CSS.escape(c.id) + '"] .status-dot');
      if (item) item.className = 'status-dot ' + (waiting ? 'waiting' : v.running ? 'running' : 'idle');
      if (kind === 'approvals' && waiting) {
        const box = c.timeline.querySelector('.approval');
        if (box && !c.prompt.matches(':focus')) {
          const b = box.querySelector('button');
          if (b) b.focus({preventScroll: true});
          if (c.atBottom) box.scrollIntoView({block: 'nearest'});
        }
      }
    }
    if (kind === 'todos') {
      const p = c.plan;
      while (p.childNodes.length > 1) p.removeChild(p.lastChild);
      p.appendChild(dsh.view.todoList(c.view.todos));
      p.hidden = !(c.view.todos && c.view.todos.length);
    }
    if ((kind === 'usage' || kind === 'all') && !ui.panel.hidden && cur === c) dsh.usage.render(ui.panel.querySelector('.panel-body'), c.view);
    if (kind === 'all') changed(c, 'status');
  }

  // stick keeps the newest output in view while the reader is at the
  // bottom; a reader who scrolled up stays where they are (the timeline's
  // scroll anchoring keeps their place as text grows below).
  function stick(c, force) {
    if (c.closed || !(force || c.atBottom)) return;
    c.scroller.scrollTop = c.scroller.scrollHeight;
    c.atBottom = true;
  }

  function setNote(c, text, bad) {
    c.note.textContent = text;
    c.note.classList.toggle('err', !!bad);
  }

  function grow(ta) {
    ta.style.height = 'auto';
    ta.style.height = Math.min(ta.scrollHeight + 2, window.innerHeight * 0.3) + 'px';
  }

  async function submit(c) {
    const text = c.prompt.value.trim();
    if (!text || c.send.disabled) return;
    const steer = c.view.running;
    c.send.disabled = true;
    setNote(c, steer ? 'Steering…' : 'Sending…');
    try {
      await api('POST', sessionPath(c.id) + (steer ? '/steer' : '/messages'), {text});
      c.prompt.value = '';
      grow(c.prompt);
      setNote(c, steer ? 'Steering message queued: the agent reads it after its current step.' : '');
      c.atBottom = true;
    } catch (e) {
      setNote(c, (steer ? 'Could not steer: ' : 'Could not send: ') + e.message, true);
    } finally {
      c.send.disabled = false;
    }
  }

  async function cancelTurn(c) {
    c.cancel.disabled = true;
    setNote(c, 'Cancelling…');
    try {
      await api('POST', sessionPath(c.id) + '/cancel', {reason: 'cancelled from the web UI'});
      setNote(c, '');
    } catch (e) {
      setNote(c, 'Could not cancel: ' + e.message, true);
      c.cancel.disabled = false;
    }
  }

  async function setMode(c, mode) {
    try {
      await api('POST', sessionPath(c.id) + '/mode', {permissionMode: mode});
      setNote(c, 'Permission mode: ' + mode);
    } catch (e) {
      setNote(c, 'Could not switch the mode: ' + e.message, true);
      if (c.view.mode) c.mode.value = c.view.mode;
    }
  }

  // followChild shows a subagent's activity under its task call by
  // reading the child's log a page at a time while it runs (a poll, not a
  // stream: a browser opens only a few connections to one server, and a
  // session may start many subagents).
  function followChild(c, child, host) {
    const summary = new dsh.view.ChildSummary(host);
    const rec = {from: 0, timer: 0};
    c.childPolls.push(rec);
    const poll = async () => {
      if (c.closed) return;
      let done = false;
      try {
        for (;;) {
          const page = await api('GET', sessionPath(child) + '/events?from=' + rec.from + '&limit=2000');
          if (c.closed) return;
          for (const ev of page.events || []) {
            summary.apply(ev);
            if (ev.type === 'turn/end') done = true;
          }
          rec.from = page.next;
          if (!page.more) break;
        }
      } catch (e) {
        if (e.status === 404) {
          rec.timer = setTimeout(poll, CHILD_POLL_MS); // not stored yet
          return;
        }
        host.appendChild(el('div', {class: 'muted'}, 'Could not read the subagent: ' + e.message));
        return;
      }
      const ended = c.view.children.get(child);
      if (!done || !(ended && ended.end)) rec.timer = setTimeout(poll, CHILD_POLL_MS);
    };
    poll();
  }

  // ---- dialogs ----

  function dialog(id, title, body, actions) {
    const old = document.getElementById(id);
    if (old) old.remove();
    const err = el('div', {class: 'form-err', role: 'alert'});
    const dlg = el('dialog', {id, class: 'dialog wide', 'aria-label': title}, el('h2', null, title), body, err,
      el('div', {class: 'form-actions'}, actions));
    dlg.addEventListener('close', () => dlg.remove());
    document.body.appendChild(dlg);
    dlg.showModal();
    return {dlg, err};
  }

  async function newSession() {
    if (boot.access !== 'full') return;
    try {
      roots = (await api('GET', '/v1/workspaces')).roots || [];
    } catch (e) {
      roots = [];
    }
    const ws = el('select', {id: 'ns-workspace', required: true}, roots.map((r) => el('option', {value: r}, visible(r))));
    const sub = el('input', {type: 'text', id: 'ns-subdir', placeholder: 'optional: a directory under it', autocomplete: 'off', spellcheck: 'false'});
    const model = el('input', {type: 'text', id: 'ns-model', placeholder: 'the workspace’s default', autocomplete: 'off', spellcheck: 'false'});
    const mode = el('select', {id: 'ns-mode'}, el('option', {value: ''}, 'the workspace’s'), MODES.map((m) => el('option', {value: m}, m)));
    const prompt = el('textarea', {id: 'ns-prompt', rows: '4', placeholder: 'What should the agent do?'});
    const go = el('button', {class: 'btn primary', type: 'button', id: 'ns-start'}, 'Start');
    const cancel = el('button', {class: 'btn', type: 'button'}, 'Cancel');
    const body = el('div', {class: 'form-grid'},
      el('label', {for: 'ns-workspace'}, 'Workspace'), ws,
      el('label', {for: 'ns-subdir'}, 'Directory'), sub,
      el('label', {for: 'ns-model'}, 'Model'), model,
      el('label', {for: 'ns-mode'}, 'Permissions'), mode,
      el('label', {for: 'ns-prompt'}, 'First message'), prompt);
    const {dlg, err} = dialog('new-dialog', 'New session', body, [cancel, go]);
    cancel.addEventListener('click', () => dlg.close());
    const start = async () => {
      const sd = sub.value.trim().replace(/^\/+/, '');
      const req = {workspace: sd ? ws.value.replace(/\/+$/, '') + '/' + sd : ws.value};
      if (model.value.trim()) req.model = model.value.trim();
      if (mode.value) req.permissionMode = mode.value;
      if (prompt.value.trim()) req.prompt = prompt.value.trim();
      go.disabled = true;
      try {
        const s = await api('POST', '/v1/sessions', req);
        dlg.close();
        sessions.unshift(s);
        location.hash = '#/s/' + enc(s.id);
      } catch (e) {
        err.textContent = e.message;
        go.disabled = false;
      }
    };
    go.addEventListener('click', start);
    prompt.addEventListener('keydown', (e) => {
      if (e.key === 'Enter' && (e.ctrlKey || e.metaKey)) {
        e.preventDefault();
        start();
      }
    });
    (roots.length ? prompt : ws).focus();
  }

  async function rewind(c) {
    let pts;
    try {
      pts = (await api('GET', sessionPath(c.id) + '/rewind')).points || [];
    } catch (e) {
      setNote(c, 'Could not list rewind points: ' + e.message, true);
      return;
    }
    const scope = el('select', {id: 'rw-scope', 'aria-label': 'What to rewind'},
      [['both', 'Code and conversation'], ['code', 'Code only'], ['chat', 'Conversation only']].map(([v, t]) => el('option', {value: v}, t)));
    const list = el('ul', {class: 'rewind-list'});
    const out = el('pre', {class: 'out', id: 'rw-result', hidden: true});
    const conflicts = el('div', {class: 'rw-conflicts', hidden: true});
    const close = el('button', {class: 'btn', type: 'button', id: 'rw-close'}, 'Close');
    const {dlg, err} = dialog('rewind-dialog', 'Rewind', el('div', null, el('p', {class: 'muted'}, 'Take the session back to before a turn: its files as they were, and the conversation from there.'), scope, list, conflicts, out), [close]);
    close.addEventListener('click', () => dlg.close());
    const buttons = () => dlg.querySelectorAll('.rewind-list button, .rw-conflicts button');
    // go asks the server to rewind; files someone else changed since the
    // agent's checkpoint refuse it (409), and the user then sees their
    // changes and chooses: overwrite them, or rewind the rest.
    const go = async (turn, extra) => {
      for (const x of buttons()) x.disabled = true;
      err.textContent = '';
      try {
        const r = await api('POST', sessionPath(c.id) + '/rewind', Object.assign({to: String(turn), scope: scope.value}, extra));
        clear(conflicts).hidden = true;
        out.hidden = false;
        out.textContent = visible(r.text || (r.done ? 'Rewound.' : 'Nothing was done.'));
        // As in the terminal, the rewound turn's prompt comes back to the
        // composer (unless the user has started typing something else).
        if (r.done && r.prompt && scope.value !== 'code' && !c.prompt.value.trim()) c.prompt.value = r.prompt;
      } catch (e) {
        const b = e.body;
        if (e.status === 409 && b && b.refused === 'conflicts') showConflicts(turn, b.conflicts || []);
        else err.textContent = e.message;
      }
      for (const x of buttons()) x.disabled = false;
    };
    const showConflicts = (turn, cfs) => {
      clear(conflicts).hidden = false;
      conflicts.appendChild(el('p', {class: 'rw-conflict-q', role: 'alert'}, el('strong', null, cfs.length === 1 ? '1 file was' : cfs.length + ' files were'),
        ' changed by someone else since the agent’s checkpoint; nothing was rewound.'));
      for (const cf of cfs) {
        conflicts.appendChild(el('div', {class: 'rw-conflict'}, el('code', null, visible(cf.path || '')), ' ', el('span', {class: 'muted'}, visible(cf.op || '')),
          cf.diff ? el('pre', {class: 'out diff-text'}, visible(cf.diff)) : null));
      }
      const force = el('button', {class: 'btn danger', type: 'button', 'data-choice': 'force'}, 'Overwrite their changes');
      const skip = el('button', {class: 'btn', type: 'button', 'data-choice': 'skip'}, 'Rewind the rest, keep theirs');
      force.addEventListener('click', () => go(turn, {force: true}));
      skip.addEventListener('click', () => go(turn, {skipConflicts: true}));
      conflicts.appendChild(el('div', {class: 'form-actions'}, skip, force));
    };
    if (!pts.length) list.appendChild(el('li', {class: 'muted'}, 'Nothing to rewind to yet.'));
    for (const p of pts) {
      const b = el('button', {class: 'btn', type: 'button', 'data-turn': String(p.turn)}, 'Rewind here');
      b.addEventListener('click', () => go(p.turn));
      list.appendChild(el('li', null, el('strong', null, 'Turn ' + p.turn), el('span', {title: p.prompt}, visible(p.prompt || '')),
        el('span', {class: 'muted'}, visible(p.summary || (p.code ? '' : 'no file changes'))), b));
    }
  }

  // ---- routing and keys ----

  function route() {
    const m = /^#\/s\/(.+)$/.exec(location.hash);
    if (!m) {
      showEmpty();
      return;
    }
    const id = decodeURIComponent(m[1]);
    if (cur && cur.id === id) return;
    open(id);
  }

  function boot0() {
    frame();
    dsh.keys.install({
      view: () => (cur ? cur.view : null),
      extra: {
        '/': () => ui.search.focus(),
        c: () => cur && !cur.prompt.disabled && cur.prompt.focus(),
        n: () => newSession(),
        Escape: () => {
          if (!ui.panel.hidden) togglePanel(false);
        },
      },
    });
    document.addEventListener('visibilitychange', () => {
      if (!document.hidden) refreshList();
    });
    window.addEventListener('hashchange', route);
    api('GET', '/v1/workspaces').then((r) => {
      roots = r.roots || [];
      renderList();
    }, () => {});
    refreshList();
    route();
    document.documentElement.setAttribute('data-ready', '1');
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot0);
  else boot0();
})(dsh);
