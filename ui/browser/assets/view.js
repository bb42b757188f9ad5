// view.js — the session view: session events (the log's own, as the API
// streams them and the trace embeds them) in, a timeline out. The live UI
// and the static trace both render with this one class, so a session
// looks the same while it runs, after it ran, and when shared as a file.
'use strict';
(function (dsh) {
  const {el, clear, link, visible} = dsh.dom;
  const F = dsh.fmt;

  const PREVIEW_LINES = 14;
  const PREVIEW_CHARS = 4000;

  function textOf(blocks) {
    if (!Array.isArray(blocks)) return '';
    return blocks.filter((b) => b && b.type === 'text' && typeof b.text === 'string').map((b) => b.text).join('');
  }
  function imagesOf(blocks) {
    return Array.isArray(blocks) ? blocks.filter((b) => b && b.type === 'image').length : 0;
  }
  function parseArgs(s) {
    if (typeof s !== 'string') return s && typeof s === 'object' ? s : {};
    try {
      const v = JSON.parse(s);
      return v && typeof v === 'object' ? v : {};
    } catch (e) {
      return {};
    }
  }
  function firstLine(s, n) {
    s = String(s || '').trim();
    const i = s.indexOf('\n');
    const line = i < 0 ? s : s.slice(0, i) + ' …';
    return line.length > (n || 120) ? line.slice(0, n || 120) + '…' : line;
  }
  function countLines(s) {
    if (!s) return 0;
    let n = 1;
    for (let i = s.indexOf('\n'); i >= 0; i = s.indexOf('\n', i + 1)) n++;
    return s.endsWith('\n') ? n - 1 : n;
  }
  function plural(n, one, many) {
    return n + ' ' + (n === 1 ? one : many || one + 's');
  }

  // What a tool card shows in its head line, by tool.
  function describe(name, a) {
    const s = (v) => (typeof v === 'string' ? v : '');
    switch (name) {
      case 'bash':
        return {label: 'Bash', summary: s(a.description) || firstLine(a.command, 100), kind: 'exec'};
      case 'bash_output':
        return {label: 'Output', summary: s(a.task_id || a.taskId || a.id), kind: 'exec'};
      case 'bash_kill':
        return {label: 'Kill', summary: s(a.task_id || a.taskId || a.id), kind: 'exec'};
      case 'read': {
        let r = s(a.file_path);
        if (a.offset || a.limit) r += ' · lines ' + (a.offset || 1) + (a.limit ? '–' + ((a.offset || 1) + a.limit - 1) : '+');
        return {label: 'Read', summary: r, kind: 'read'};
      }
      case 'write':
        return {label: 'Write', summary: s(a.file_path), kind: 'edit'};
      case 'edit':
        return {label: 'Edit', summary: s(a.file_path) + (a.replace_all ? ' · all occurrences' : ''), kind: 'edit'};
      case 'grep':
        return {label: 'Grep', summary: s(a.pattern) + (a.path ? ' in ' + a.path : '') + (a.glob ? ' (' + a.glob + ')' : ''), kind: 'search'};
      case 'glob':
        return {label: 'Glob', summary: s(a.pattern) + (a.path ? ' in ' + a.path : ''), kind: 'search'};
      case 'ls':
        return {label: 'List', summary: s(a.path) || '.', kind: 'search'};
      case 'web_fetch':
        return {label: 'Fetch', summary: s(a.url), kind: 'web'};
      case 'web_search':
        return {label: 'Search', summary: s(a.query), kind: 'web'};
      case 'todo_write':
        return {label: 'Plan', summary: Array.isArray(a.todos) ? plural(a.todos.length, 'task') : '', kind: 'plan'};
      case 'task':
      case 'fork':
        return {label: name === 'fork' ? 'Fork' : 'Task', summary: s(a.description) + (a.subagent_type ? ' · ' + a.subagent_type : ''), kind: 'task'};
    }
    const m = /^mcp__([^_]+(?:_[^_]+)*)__(.+)$/.exec(name);
    if (m) return {label: m[1] + ' · ' + m[2], summary: '', kind: 'mcp'};
    return {label: name, summary: '', kind: 'other'};
  }

  function todoList(todos) {
    const ul = el('ul', {class: 'todos'});
    for (const t of todos || []) {
      if (!t || typeof t !== 'object') continue;
      const st = t.status === 'completed' ? 'done' : t.status === 'in_progress' ? 'doing' : 'todo';
      const mark = st === 'done' ? '\u2611' : st === 'doing' ? '\u25b6' : '\u2610';
      ul.appendChild(el('li', {class: 'todo ' + st},
        el('span', {class: 'todo-mark', 'aria-hidden': 'true'}, mark),
        el('span', {class: 'todo-text'}, visible(String(st === 'doing' && t.activeForm ? t.activeForm : t.content || ''))),
        el('span', {class: 'sr-only'}, st === 'done' ? ' (done)' : st === 'doing' ? ' (in progress)' : ' (to do)')));
    }
    return ul;
  }

  // output renders tool output with a preview and a "show all" switch:
  // the full text is built only when asked for.
  function outputBlock(text, opts) {
    const o = opts || {};
    const lines = countLines(text);
    const box = el('div', {class: 'output' + (o.error ? ' error' : '')});
    const pre = el('pre', {class: 'out', tabindex: '0'});
    const render = (full) => {
      clear(pre);
      let t = text;
      if (!full) {
        const cut = text.split('\n').slice(0, PREVIEW_LINES).join('\n');
        t = cut.length > PREVIEW_CHARS ? cut.slice(0, PREVIEW_CHARS) : cut;
      }
      if (o.lang) pre.appendChild(dsh.hl.highlight(dsh.ansi.strip(t), o.lang));
      else pre.appendChild(dsh.ansi.render(t));
    };
    render(false);
    box.appendChild(pre);
    const clipped = lines > PREVIEW_LINES || text.length > PREVIEW_CHARS;
    const bar = el('div', {class: 'out-bar'});
    if (clipped) {
      let full = false;
      const btn = el('button', {type: 'button', class: 'link-btn show-all'}, 'Show all ' + plural(lines, 'line'));
      btn.addEventListener('click', () => {
        full = !full;
        render(full);
        box.classList.toggle('full', full);
        btn.textContent = full ? 'Show less' : 'Show all ' + plural(lines, 'line');
      });
      bar.appendChild(btn);
    }
    if (o.note) bar.appendChild(el('span', {class: 'out-note'}, o.note));
    if (bar.firstChild) box.appendChild(bar);
    return box;
  }

  // The result text of read: the file's body without its envelope.
  function unwrapRead(text) {
    const m = /^<path>[^\n]*<\/path>\n<type>[^\n]*<\/type>\n<content>\n([\s\S]*)\n<\/content>\s*$/.exec(text);
    return m ? m[1] : text;
  }

  const END = {
    aborted: 'Cancelled', error: 'Error', disposed: 'Stopped (the agent was shut down)', 'max-tokens': 'Stopped: the answer hit the token limit',
    rejected: 'Prompt rejected', interrupted: 'Interrupted (dsh stopped before the turn finished)', 'max-steps': 'Stopped: the step limit was reached',
  };

  class Turn {
    constructor(view, n, ev) {
      this.n = n;
      this.start = ev ? ev.time : 0;
      this.seq = ev && typeof ev.seq === 'number' ? ev.seq : -1;
      this.end = 0;
      this.usage = {input: 0, output: 0, cacheRead: 0, cacheWrite: 0, reasoning: 0};
      this.cost = 0;
      this.costKnown = true;
      this.models = new Set();
      this.steps = 0;
      this.prompt = '';
      this.el = el('section', {class: 'turn', 'data-turn': String(n), 'aria-label': 'Turn ' + n});
      this.body = el('div', {class: 'turn-body'});
      this.foot = el('footer', {class: 'turn-foot'});
      this.el.append(this.body, this.foot);
      view.root.appendChild(this.el);
    }
  }

  class Step {
    constructor(turn, n) {
      this.n = n;
      this.blocks = new Map(); // index -> {type, text, node, body}
      this.el = el('div', {class: 'step', 'data-step': String(n)});
      turn.body.appendChild(this.el);
    }
  }

  class Card {
    constructor(view, id, name) {
      this.view = view;
      this.id = id;
      this.name = name;
      this.args = {};
      this.state = 'preparing';
      this.el = el('article', {class: 'card tool', 'data-call': id, 'data-tool': name, 'data-state': 'preparing', tabindex: '-1'});
      this.icon = el('span', {class: 'card-icon', 'aria-hidden': 'true'});
      this.label = el('span', {class: 'card-label'});
      this.summary = el('span', {class: 'card-summary'});
      this.badges = el('span', {class: 'card-badges'});
      this.head = el('button', {type: 'button', class: 'card-head', 'aria-expanded': 'true'}, this.icon, this.label, this.summary, this.badges);
      this.body = el('div', {class: 'card-body'});
      this.callPart = el('div', {class: 'card-call'});
      this.gate = el('div', {class: 'card-gate'});
      this.resultPart = el('div', {class: 'card-result'});
      this.sub = el('div', {class: 'card-sub'});
      this.body.append(this.callPart, this.gate, this.resultPart, this.sub);
      this.el.append(this.head, this.body);
      this.head.addEventListener('click', () => this.toggle());
      this.setName(name);
    }
    toggle(open) {
      const o = open === undefined ? this.body.hidden : open;
      this.body.hidden = !o;
      this.head.setAttribute('aria-expanded', String(o));
    }
    setName(name) {
      this.name = name;
      this.el.setAttribute('data-tool', name || '');
      const d = describe(name || '', this.args);
      this.desc = d;
      this.el.setAttribute('data-kind', d.kind);
      this.label.textContent = d.label || '…';
      this.summary.textContent = visible(d.summary);
      this.summary.title = d.summary;
    }
    setState(s) {
      this.state = s;
      this.el.setAttribute('data-state', s);
    }
    badge(text, cls) {
      this.badges.appendChild(el('span', {class: 'badge ' + (cls || '')}, text));
    }
  }

  class SessionView {
    constructor(root, opts) {
      this.root = root;
      this.o = opts || {};
      root.classList.add('session-view');
      this.turns = new Map();
      this.turn = null;
      this.steps = new Map();
      this.cards = new Map();
      this.pending = new Map(); // callId -> approval request
      this.todos = null;
      this.children = new Map(); // childSession -> {card, start, end}
      this.lastSeq = -1;
      this.running = false;
      this.dirty = new Set();
      this.frame = 0;
      this.diffMode = this.o.diffMode || 'unified';
      this.totals = {input: 0, output: 0, cacheRead: 0, cacheWrite: 0, cost: 0, costKnown: true, steps: 0, turns: 0};
      this.model = '';
      this.mode = '';
      this.batch = 0;
    }

    // ---- public ----

    apply(ev) {
      if (!ev || typeof ev !== 'object' || typeof ev.type !== 'string') return;
      if (typeof ev.seq === 'number') {
        if (ev.seq <= this.lastSeq) return;
        this.lastSeq = ev.seq;
      }
      const d = ev.data && typeof ev.data === 'object' ? ev.data : {};
      const h = HANDLERS[ev.type];
      try {
        if (h) h.call(this, ev, d);
        else this.generic(ev, d);
      } catch (e) {
        // A malformed event costs its own line, never the view.
        this.note('bad', 'Could not show ' + ev.type + ' (seq ' + ev.seq + '): ' + e.message);
      }
      if (!this.batch) this.schedule();
    }

    applyAll(events) {
      this.batch++;
      for (const ev of events) this.apply(ev);
      this.batch--;
      this.flush();
      this.changed('all');
    }

    // progress adds output a running call produced (not in the log: the
    // server forwards it live).
    progress(callId, text) {
      const c = this.cards.get(callId);
      if (!c || c.state === 'done' || c.state === 'error') return;
      c.live = (c.live || '') + text;
      if (c.live.length > 64 * 1024) c.live = c.live.slice(-48 * 1024);
      if (!c.liveBox) {
        c.liveBox = el('pre', {class: 'out live', 'aria-live': 'off'});
        c.resultPart.appendChild(el('div', {class: 'output live-wrap'}, c.liveBox));
      }
      this.dirty.add(c);
      this.schedule();
    }

    setDiffMode(m) {
      this.diffMode = m;
      for (const c of this.cards.values()) if (c.diff) c.diff.setMode(m);
    }

    usageRows() {
      return [...this.turns.values()].filter((t) => t.n > 0).map((t) => ({turn: t.n, prompt: t.prompt, steps: t.steps, ...t.usage,
        cost: t.cost, costKnown: t.costKnown, models: [...t.models], start: t.start, end: t.end}));
    }

    // ---- scheduling: streamed text re-renders once a frame ----

    schedule() {
      if (this.frame || !this.dirty.size) return;
      const run = () => {
        this.frame = 0;
        this.flush();
      };
      this.frame = typeof requestAnimationFrame === 'function' && !document.hidden ? requestAnimationFrame(run) : setTimeout(run, 50);
    }

    flush() {
      const items = [...this.dirty];
      this.dirty.clear();
      for (const b of items) {
        if (b instanceof Card) {
          if (b.liveBox) {
            clear(b.liveBox).appendChild(dsh.ansi.render(b.live.split('\n').slice(-12).join('\n')));
          }
          continue;
        }
        if (b.type === 'text') dsh.md.into(b.body, b.text);
        else if (b.type === 'reasoning') {
          dsh.md.into(b.body, b.text);
          b.meta.textContent = plural(b.text.split(/\s+/).filter(Boolean).length, 'word');
        }
      }
      if (this.o.onRender) this.o.onRender();
    }

    changed(kind) {
      if (this.o.onChange) this.o.onChange(kind, this);
    }

    // ---- structure ----

    currentTurn(n) {
      if (n !== undefined && this.turns.has(n)) return this.turns.get(n);
      if (this.turn) return this.turn;
      if (!this.turns.has(0)) this.turns.set(0, new Turn(this, 0, null));
      return this.turns.get(0);
    }

    step(turnN, stepN) {
      const t = this.currentTurn(turnN);
      const key = t.n + ':' + stepN;
      let s = this.steps.get(key);
      if (!s) {
        s = new Step(t, stepN);
        this.steps.set(key, s);
      }
      return s;
    }

    note(kind, text, extra) {
      const t = this.currentTurn();
      const n = el('div', {class: 'note ' + kind, tabindex: '-1'}, el('span', {class: 'note-text'}, visible(text)), extra || null);
      t.body.appendChild(n);
      return n;
    }

    block(step, index, type) {
      let b = step.blocks.get(index);
      if (b && b.type === type) return b;
      if (b) {
        b.node.remove();
        step.blocks.delete(index);
      }
      b = {type, text: ''};
      if (type === 'text') {
        b.body = el('div', {class: 'md'});
        b.node = el('div', {class: 'msg assistant', tabindex: '-1'}, b.body);
      } else {
        b.body = el('div', {class: 'md'});
        b.meta = el('span', {class: 'reasoning-meta'});
        b.node = el('details', {class: 'reasoning'}, el('summary', null, el('span', {class: 'reasoning-title'}, 'Thinking'), ' ', b.meta), b.body);
      }
      // Keep blocks in index order among the step's children.
      let before = null;
      for (const [k, other] of step.blocks) if (k > index && (!before || k < before.k)) before = {k, node: other.node};
      for (const c of this.cards.values()) {
        if (c.step === step && c.index !== undefined && c.index > index && (!before || c.index < before.k)) before = {k: c.index, node: c.el};
      }
      step.el.insertBefore(b.node, before ? before.node : null);
      step.blocks.set(index, b);
      return b;
    }

    card(id, name, step, index) {
      let c = this.cards.get(id);
      if (!c) {
        c = new Card(this, id, name);
        this.cards.set(id, c);
      } else if (name && name !== c.name) c.setName(name);
      if (step && c.step !== step) {
        c.step = step;
        c.index = index;
        step.el.appendChild(c.el);
      } else if (!c.el.parentNode) {
        this.currentTurn().body.appendChild(c.el);
      }
      return c;
    }

    // ---- call rendering ----

    showCall(c) {
      const a = c.args, name = c.name;
      clear(c.callPart);
      if (name === 'bash') {
        const code = el('code');
        code.appendChild(dsh.hl.highlight(visible(String(a.command || '')), 'bash'));
        c.callPart.appendChild(el('pre', {class: 'cmd'}, el('span', {class: 'prompt-sign', 'aria-hidden': 'true'}, '$ '), code));
        const chips = [];
        if (a.workdir) chips.push('in ' + a.workdir);
        if (a.run_in_background) chips.push('background');
        if (a.timeoutMs) chips.push('timeout ' + F.duration(a.timeoutMs));
        if (a.dangerouslyDisableSandbox) chips.push('outside the sandbox');
        if (chips.length) c.callPart.appendChild(el('div', {class: 'chips'}, chips.map((t) => el('span', {class: 'chip'}, visible(t)))));
      } else if ((name === 'edit' || name === 'write') && !c.diff) {
        // Before the result (and while it waits for approval) the change
        // is shown from the arguments.
        const path = String(a.file_path || '');
        const chomp = (t) => String(t || '').replace(/\n$/, '');
        const rows = name === 'edit' ? dsh.diff.lineDiff(chomp(a.old_string), chomp(a.new_string)) : dsh.diff.lineDiff(null, chomp(a.content));
        for (const r of rows) {
          delete r.old;
          delete r.new;
        }
        c.previewFiles = [{path, hunks: [{header: '', rows}]}];
        c.preview = dsh.diff.view(c.previewFiles, this.diffMode, (m) => this.modeChosen(m));
        c.callPart.appendChild(c.preview);
      } else if (name === 'todo_write') {
        c.callPart.appendChild(todoList(a.todos));
      } else if (name === 'task' || name === 'fork') {
        if (a.prompt) {
          const d = el('details', {class: 'task-prompt'}, el('summary', null, 'Prompt'));
          const md = el('div', {class: 'md'});
          md.appendChild(dsh.md.render(String(a.prompt)));
          d.appendChild(md);
          c.callPart.appendChild(d);
        }
      } else if (c.desc.kind === 'other' || c.desc.kind === 'mcp') {
        const json = JSON.stringify(a, null, 2);
        if (json && json !== '{}') c.callPart.appendChild(outputBlock(json, {lang: 'json'}));
      }
    }

    modeChosen(m) {
      this.setDiffMode(m);
      if (this.o.onDiffMode) this.o.onDiffMode(m);
    }

    showGate(c) {
      clear(c.gate);
      const req = c.request, ans = c.answer;
      if (c.decision && !req) {
        const d = c.decision;
        if (d.rule || d.behavior === 'deny') {
          c.gate.appendChild(el('div', {class: 'gate-note ' + (d.behavior || '')},
            d.behavior === 'allow' ? 'Allowed by rule ' : d.behavior === 'deny' ? 'Denied by ' + (d.rule ? 'rule ' : 'policy') : 'Rule ',
            d.rule ? el('code', null, visible(d.rule)) : null, d.reason ? ' — ' + visible(d.reason) : ''));
        }
      }
      if (!req) return;
      if (ans) {
        const who = ans.by && ans.by !== 'user' ? ' (' + ans.by + ')' : '';
        let text;
        if (ans.allow) text = ans.scope === 'session' ? 'Allowed for this session' + who : 'Allowed once' + who;
        else text = 'Denied' + who;
        const box = el('div', {class: 'gate-answer ' + (ans.allow ? 'allow' : 'deny')}, el('strong', null, text));
        if (Array.isArray(ans.rules) && ans.rules.length) box.append(' · ', ...ans.rules.map((r) => el('code', {class: 'rule'}, visible(r))));
        if (ans.reason) box.append(el('div', {class: 'gate-reason'}, visible(ans.reason)));
        c.gate.appendChild(box);
        return;
      }
      const box = el('div', {class: 'approval', role: 'group', 'aria-label': 'Approval needed for ' + c.desc.label, 'data-call': c.id});
      box.appendChild(el('div', {class: 'approval-q'}, el('strong', null, 'Approval needed'), req.reason ? ' — ' + visible(req.reason) : ''));
      if (!this.o.live || !this.o.onAnswer) {
        box.appendChild(el('div', {class: 'approval-wait'}, this.o.live ? 'Waiting for an answer' : 'No answer was recorded'));
        c.gate.appendChild(box);
        return;
      }
      const send = (answer, btns) => {
        for (const b of btns) b.disabled = true;
        box.classList.add('sending');
        Promise.resolve(this.o.onAnswer(c.id, answer)).then(() => {}, (err) => {
          for (const b of btns) b.disabled = false;
          box.classList.remove('sending');
          box.appendChild(el('div', {class: 'approval-err', role: 'alert'}, 'Could not answer: ' + (err && err.message ? err.message : err)));
        });
      };
      const row = el('div', {class: 'approval-actions'});
      const buttons = [];
      const allow = el('button', {type: 'button', class: 'btn primary', 'data-answer': 'allow', title: 'Allow this call once (y)'}, 'Allow once');
      allow.addEventListener('click', () => send({decision: 'allow'}, buttons));
      buttons.push(allow);
      row.appendChild(allow);
      for (const rule of req.suggestions || []) {
        const b = el('button', {type: 'button', class: 'btn', 'data-answer': 'allow_session', 'data-rule': rule, title: 'Allow, and allow what this rule covers for the rest of the session (a)'},
          'Always allow ', el('code', null, visible(rule)));
        b.addEventListener('click', () => send({decision: 'allow_session', rules: [rule]}, buttons));
        buttons.push(b);
        row.appendChild(b);
      }
      const reason = el('input', {type: 'text', class: 'deny-reason', placeholder: 'Reason for the model (optional)', 'aria-label': 'Reason for denying', maxlength: '2000'});
      const deny = el('button', {type: 'button', class: 'btn danger', 'data-answer': 'deny', title: 'Deny (n); the reason is what the model reads'}, 'Deny');
      const doDeny = () => send({decision: 'deny', reason: reason.value.trim()}, buttons.concat([reason]));
      deny.addEventListener('click', doDeny);
      reason.addEventListener('keydown', (e) => {
        if (e.key === 'Enter') {
          e.preventDefault();
          doDeny();
        }
      });
      buttons.push(deny);
      row.append(el('span', {class: 'deny-group'}, reason, deny));
      box.appendChild(row);
      box.addEventListener('keydown', (e) => {
        if (e.target === reason || e.ctrlKey || e.metaKey || e.altKey) return;
        if (e.key === 'y') {
          e.preventDefault();
          allow.click();
        } else if (e.key === 'a' && buttons[1] && buttons[1] !== deny) {
          e.preventDefault();
          buttons[1].click();
        } else if (e.key === 'n') {
          e.preventDefault();
          reason.focus();
        }
      });
      c.gate.appendChild(box);
    }

    showResult(c, d, ev) {
      clear(c.resultPart);
      c.liveBox = null;
      const meta = d.meta && typeof d.meta === 'object' ? d.meta : {};
      let text = textOf(d.content);
      const imgs = imagesOf(d.content);
      if (d.omitted) {
        c.resultPart.appendChild(el('div', {class: 'omitted'}, 'Output left out of this trace (' + plural(d.omitted.bytes || 0, 'byte') + ')'));
      }
      const clipNote = d.clipped ? 'Trace shows ' + F.num(text.length) + ' of ' + F.num(d.clipped.bytes) + ' characters' : '';
      if ((c.name === 'edit' || c.name === 'write') && !d.isError) {
        let files = dsh.diff.fromMeta(meta);
        if (!files && c.name === 'write' && meta.operation === 'create' && c.previewFiles) {
          // A new file's result records no hunks: its content, from the
          // arguments, is the whole change.
          files = c.previewFiles;
        }
        if (files) {
          if (c.preview) {
            c.preview.remove();
            c.preview = null;
          }
          c.diff = dsh.diff.view(files, this.diffMode, (m) => this.modeChosen(m));
          c.resultPart.appendChild(c.diff);
          const st = dsh.diff.stats(files);
          c.badge('+' + st.add, 'add');
          c.badge('−' + st.del, 'del');
          if (meta.operation === 'create') c.badge('new file', 'info');
          return;
        }
      }
      if (c.name === 'bash' || c.name === 'bash_output') {
        if (typeof meta.exitCode === 'number') c.badge('exit ' + meta.exitCode, meta.exitCode === 0 ? 'ok' : 'bad');
        if (meta.signal) c.badge(meta.signal, 'bad');
        if (meta.timedOut) c.badge('timed out', 'bad');
        if (meta.background) c.badge('background', 'info');
        if (meta.sandbox) c.badge('sandbox: ' + meta.sandbox, meta.sandboxDenied ? 'bad' : 'info');
      }
      if (d.error && d.error.name) c.badge(d.error.code || d.error.name, 'bad');
      if (c.name === 'read' && !d.isError) {
        text = unwrapRead(text);
        c.badge(plural(countLines(text), 'line'), 'info');
        const ob = outputBlock(text, {note: clipNote});
        ob.classList.add('file');
        c.resultPart.appendChild(ob);
        c.toggle(false);
        return;
      }
      if (c.name === 'task' || c.name === 'fork') {
        if (text) {
          const md = el('div', {class: 'md task-result'});
          md.appendChild(dsh.md.render(text));
          c.resultPart.appendChild(md);
        }
        return;
      }
      if (c.name === 'todo_write' && !d.isError) return;
      if (text || imgs) {
        let note = clipNote;
        if (meta.truncated) note = (note ? note + '; ' : '') + 'output truncated by dsh';
        if (meta.stdoutSpill) note = (note ? note + '; ' : '') + 'full output in ' + meta.stdoutSpill;
        if (text) c.resultPart.appendChild(outputBlock(text, {error: d.isError, note}));
        if (imgs) c.resultPart.appendChild(el('div', {class: 'omitted'}, plural(imgs, 'image') + ' (not shown)'));
      } else if (!d.omitted) {
        c.resultPart.appendChild(el('div', {class: 'out-empty'}, d.isError ? 'Failed with no output' : 'No output'));
      }
      if (c.desc.kind === 'search' || c.desc.kind === 'web') {
        c.badge(plural(countLines(text), 'line'), 'info');
        c.toggle(false);
      }
    }

    generic(ev, d) {
      const json = JSON.stringify(d, null, 2) || '';
      const det = el('details', {class: 'event-generic'}, el('summary', null, visible(ev.type)));
      det.appendChild(el('pre', {class: 'out'}, visible(json.length > 20000 ? json.slice(0, 20000) + '\n…' : json)));
      this.currentTurn().body.appendChild(det);
    }

    addUsage(t, usage, model) {
      if (!usage) return;
      const u = {input: usage.inputTokens || 0, output: usage.outputTokens || 0, cacheRead: usage.cacheReadTokens || 0,
        cacheWrite: usage.cacheWriteTokens || 0, reasoning: usage.reasoningTokens || 0};
      for (const k of Object.keys(u)) {
        t.usage[k] += u[k];
        if (k in this.totals) this.totals[k] += u[k];
      }
      const price = dsh.pricing.lookup(model || this.model, this.o.prices);
      if (price) {
        const cost = dsh.pricing.cost(price, u);
        t.cost += cost;
        this.totals.cost += cost;
      } else {
        t.costKnown = false;
        this.totals.costKnown = false;
      }
      if (model) t.models.add(model);
    }

    footer(t) {
      clear(t.foot);
      const u = t.usage;
      if (!t.steps && !u.input && !u.output) return;
      const parts = [plural(t.steps, 'step'), F.num(u.input + u.cacheRead + u.cacheWrite) + ' in' + (u.cacheRead ? ' (' + F.num(u.cacheRead) + ' cached)' : ''), F.num(u.output) + ' out'];
      if (t.cost || t.costKnown) parts.push(F.usd(t.cost) + (t.costKnown ? '' : '+'));
      if (t.end && t.start) parts.push(F.duration(t.end - t.start));
      t.foot.appendChild(el('span', {class: 'turn-usage'}, parts.join(' · ')));
    }
  }

  const HANDLERS = {
    'turn/start'(ev, d) {
      const n = typeof d.turn === 'number' ? d.turn : this.turns.size + 1;
      let t = this.turns.get(n);
      if (!t) {
        t = new Turn(this, n, ev);
        this.turns.set(n, t);
      }
      this.turn = t;
      this.running = true;
      this.totals.turns++;
      const trig = d.trigger || {};
      if (trig.kind && trig.kind !== 'message') t.el.classList.add('trigger-' + trig.kind);
      this.changed('status');
    },
    'turn/end'(ev, d) {
      const t = this.currentTurn(d.turn);
      t.end = ev.time;
      const r = d.reason || {};
      t.reason = r.kind;
      if (r.kind && r.kind !== 'completed') {
        let text = END[r.kind] || 'Ended: ' + r.kind;
        if (r.message) text += ': ' + r.message;
        else if (r.reason) text += ': ' + r.reason;
        t.body.appendChild(el('div', {class: 'turn-end ' + r.kind, role: 'status'}, visible(text)));
      }
      for (const c of this.cards.values()) {
        if (c.turn === t && (c.state === 'running' || c.state === 'preparing' || c.state === 'waiting')) c.setState(r.kind === 'completed' ? 'done' : 'stopped');
      }
      this.footer(t);
      this.running = false;
      this.pending.clear();
      this.changed('status');
      this.changed('usage');
    },
    'step/start'(ev, d) {
      const t = this.currentTurn(d.turn);
      t.steps = Math.max(t.steps, d.step || 0);
      this.totals.steps++;
      this.step(d.turn, d.step);
    },
    'step/end'() {},
    'user/message'(ev, d) {
      const t = this.currentTurn();
      const text = textOf(d.content);
      if (!t.prompt) t.prompt = text;
      const src = d.source && d.source.kind && d.source.kind !== 'user' ? d.source : null;
      const bubble = el('div', {class: 'bubble'}, visible(text));
      const n = imagesOf(d.content);
      const msg = el('div', {class: 'msg user', tabindex: '-1'},
        src ? el('div', {class: 'msg-src'}, 'from ' + visible(src.plugin || src.kind)) : null, bubble,
        n ? el('div', {class: 'chip'}, plural(n, 'image')) : null);
      t.body.appendChild(msg);
    },
    'steering/message'(ev, d) {
      const t = this.currentTurn(d.turn);
      t.body.appendChild(el('div', {class: 'msg user steer', tabindex: '-1'}, el('div', {class: 'msg-src'}, 'Steering'), el('div', {class: 'bubble'}, visible(textOf(d.content)))));
    },
    'context/message'(ev, d) {
      const det = el('details', {class: 'context-msg'}, el('summary', null, 'Context added' + (d.source && d.source.plugin ? ' by ' + d.source.plugin : '')));
      det.appendChild(el('pre', {class: 'out'}, visible(textOf(d.content))));
      this.currentTurn().body.appendChild(det);
    },
    'prompt/blocked'(ev, d) {
      this.note('bad', 'Prompt blocked' + (d.reason ? ': ' + d.reason : ''));
    },
    'assistant/chunk'(ev, d) {
      const ch = d.chunk || {};
      const s = this.step(d.turn, d.step);
      if (s.final) return;
      const idx = typeof ch.index === 'number' ? ch.index : 0;
      switch (ch.type) {
        case 'block-start':
          if (ch.blockType === 'tool-call' && ch.id) {
            const c = this.card(ch.id, ch.name || '', s, idx);
            c.turn = this.currentTurn(d.turn);
          } else if (ch.blockType === 'text' || ch.blockType === 'reasoning') this.block(s, idx, ch.blockType);
          break;
        case 'text-delta': {
          const b = this.block(s, idx, 'text');
          b.text += ch.text || '';
          this.dirty.add(b);
          break;
        }
        case 'reasoning-delta': {
          const b = this.block(s, idx, 'reasoning');
          b.text += ch.text || '';
          b.node.classList.add('streaming');
          this.dirty.add(b);
          break;
        }
      }
    },
    'assistant/message'(ev, d) {
      const s = this.step(d.turn, d.step);
      s.final = true;
      const t = this.currentTurn(d.turn);
      if (d.model) this.model = d.model;
      (d.content || []).forEach((blk, k) => {
        if (!blk) return;
        if (blk.type === 'text' || blk.type === 'reasoning') {
          if (blk.type === 'text' && !blk.text) return;
          const b = this.block(s, k, blk.type);
          b.text = blk.type === 'reasoning' && !blk.text && blk.redacted ? '(reasoning redacted by the provider)' : blk.text || '';
          b.node.classList.remove('streaming');
          this.dirty.add(b);
        } else if (blk.type === 'tool-call' && blk.id) {
          const c = this.card(blk.id, blk.name, s, k);
          c.turn = t;
          if (c.state === 'preparing' && blk.arguments) {
            c.args = parseArgs(blk.arguments);
            c.setName(blk.name);
          }
        }
      });
      for (const b of s.blocks.values()) b.node.classList.remove('streaming');
      this.addUsage(t, d.usage, d.model);
      if (this.batch) this.flush();
      this.changed('usage');
    },
    'tool/call'(ev, d) {
      const s = typeof d.step === 'number' ? this.step(d.turn, d.step) : null;
      const c = this.card(d.callId, d.name, s, s && s.blocks.size + 1000);
      c.turn = this.currentTurn(d.turn);
      c.args = parseArgs(d.arguments);
      c.started = ev.time;
      c.setName(d.name);
      if (d.originalArguments && d.rewrittenBy) c.badge('arguments rewritten by ' + d.rewrittenBy, 'info');
      c.setState(c.request && !c.answer ? 'waiting' : 'running');
      this.showCall(c);
    },
    'permission/decision'(ev, d) {
      const c = this.cards.get(d.callId);
      if (!c) return;
      c.decision = d;
      this.showGate(c);
    },
    'approval/request'(ev, d) {
      const c = this.card(d.callId, d.name);
      c.request = d;
      c.answer = null;
      c.setState('waiting');
      this.pending.set(d.callId, d);
      this.showGate(c);
      this.changed('approvals');
    },
    'approval/answer'(ev, d) {
      const c = this.cards.get(d.callId);
      this.pending.delete(d.callId);
      if (c) {
        c.answer = d;
        if (!c.request) c.request = {callId: d.callId};
        c.setState(d.allow ? 'running' : 'denied');
        this.showGate(c);
      }
      this.changed('approvals');
    },
    'tool/result'(ev, d) {
      const c = this.card(d.callId, this.cards.has(d.callId) ? undefined : 'tool');
      c.result = d;
      if (c.started) c.badge(F.duration(ev.time - c.started), 'time');
      if (c.state !== 'denied') c.setState(d.isError ? 'error' : 'done');
      this.showResult(c, d, ev);
      this.pending.delete(d.callId);
    },
    'todo/write'(ev, d) {
      this.todos = Array.isArray(d.todos) ? d.todos : [];
      this.changed('todos');
    },
    'subagent/start'(ev, d) {
      const child = d.childSession;
      const c = d.callId ? this.cards.get(d.callId) : null;
      const host = c ? c.sub : this.note('sub', 'Subagent started').appendChild(el('div'));
      const rec = {card: c, start: d, host};
      if (child) this.children.set(child, rec);
      clear(host);
      const status = el('span', {class: 'sub-status running'}, 'running');
      rec.status = status;
      const href = child && this.o.childHref ? this.o.childHref(child) : null;
      const head = el('div', {class: 'sub-head'},
        el('span', {class: 'sub-label'}, 'Subagent' + (d.agent ? ' · ' + d.agent : '')), ' ', status,
        href ? el('a', {class: 'sub-open', href, 'data-child': child, on: this.o.onOpenChild ? {click: (e) => {
          e.preventDefault();
          this.o.onOpenChild(child);
        }} : {}}, 'Open child session \u2192') : null);
      host.appendChild(head);
      rec.activity = el('div', {class: 'sub-activity'});
      host.appendChild(rec.activity);
      if (child && this.o.nested) this.o.nested(child, rec.activity, rec);
    },
    'subagent/end'(ev, d) {
      const rec = this.children.get(d.childSession);
      if (!rec) return;
      rec.end = d;
      rec.status.textContent = d.stopReason || 'ended';
      rec.status.className = 'sub-status ' + (d.stopReason === 'completed' ? 'done' : 'bad');
    },
    'compact/start'(ev, d) {
      this.note('compact', 'Compacting the conversation' + (d.reason === 'manual' ? ' (asked for)' : '') + (d.estimate ? ' · about ' + F.num(d.estimate) + ' tokens' : ''));
    },
    'compact/summary'(ev, d) {
      const det = el('details', {class: 'context-msg'}, el('summary', null, 'Summary of the earlier conversation' + (d.shadowedTokenCount ? ' (replaces ' + F.num(d.shadowedTokenCount) + ' tokens)' : '')));
      const md = el('div', {class: 'md'});
      md.appendChild(dsh.md.render(textOf(d.summary)));
      det.appendChild(md);
      this.currentTurn().body.appendChild(det);
    },
    'compact/prune'(ev, d) {
      this.note('compact', 'Old tool output pruned' + (d.savedTokens ? ' · ' + F.num(d.savedTokens) + ' tokens saved' : ''));
    },
    'compact/end'(ev, d) {
      if (d.error) this.note('bad', 'Compaction failed: ' + d.error);
      else if (d.before && d.after) this.note('compact', 'Compacted: ' + F.num(d.before) + ' → ' + F.num(d.after) + ' tokens');
    },
    'hook/invoked'() {},
    // Bookkeeping of other parts: serve's session record, and the
    // checkpoints that make rewind possible.
    'serve/session'() {},
    'checkpoint/taken'() {},
    'checkpoint/restore-start'() {},
    'checkpoint/restored'(ev, d) {
      // A code-only rewind has no checkpoint/rewind event: say it here.
      const t = this.currentTurn();
      if (!t.el.classList.contains('trigger-rewind')) return;
      const left = (d.left || []).length, failed = (d.failed || []).length;
      let text = 'Files restored: ' + plural(d.done || 0, 'file');
      if (left) text += ' · ' + plural(left, 'file') + ' left as someone else changed ' + (left === 1 ? 'it' : 'them');
      if (failed) text += ' · ' + plural(failed, 'file') + ' failed';
      this.note(failed ? 'bad' : 'mode', text);
    },
    'checkpoint/rewind'(ev, d) {
      const to = d.to || {};
      const where = typeof to === 'object' ? (to.turn ? 'turn ' + to.turn + (to.step ? '.' + to.step : '') : '') : String(to);
      this.note('mode', 'Rewound ' + (d.code ? 'code and conversation' : 'the conversation') + (where ? ' to before ' + where : ''));
      // The turns from the target on are hidden from the model (the log
      // keeps them): mark them, so the reader sees what the model no
      // longer does.
      if (typeof d.toSeq === 'number') {
        for (const t of this.turns.values()) {
          if (t.seq >= d.toSeq && t !== this.turn && !t.el.classList.contains('rewound')) {
            t.el.classList.add('rewound');
            t.el.insertBefore(el('div', {class: 'rewound-tag'}, 'Rewound: the model no longer sees this turn'), t.el.firstChild);
          }
        }
      }
    },
    'hook/result'(ev, d) {
      if (!d.decision || d.decision === 'allow' || d.decision === 'none' || d.decision === 'continue') {
        if (!d.problem && !d.systemMessage) return;
      }
      const text = 'Hook ' + (d.point || '') + (d.decision ? ': ' + d.decision : '') + (d.reason ? ' — ' + d.reason : '') + (d.problem ? ' (' + d.problem + ')' : '') + (d.systemMessage ? ' · ' + d.systemMessage : '');
      this.note(d.decision === 'deny' || d.decision === 'block' || d.problem ? 'bad' : 'hook', text);
    },
    'permission/mode'(ev, d) {
      this.mode = d.mode || this.mode;
      this.note('mode', 'Permission mode: ' + (d.previous ? d.previous + ' → ' : '') + d.mode + (d.by ? ' (' + d.by + ')' : ''));
      this.changed('status');
    },
    'permission/rule'(ev, d) {
      this.note('mode', (d.removed ? 'Rule removed: ' : 'Session rule: ') + (d.behavior || '') + ' ' + (d.rule || ''));
    },
  };

  // A compact summary of a child session, for its parent's task card.
  class ChildSummary {
    constructor(host, opts) {
      this.host = host;
      this.o = opts || {};
      this.calls = new Map();
      this.list = el('ol', {class: 'sub-calls'});
      this.text = el('div', {class: 'sub-text'});
      this.count = el('span', {class: 'sub-count'});
      host.append(this.list, this.text, this.count);
      this.n = 0;
      this.lastSeq = -1;
      this.answer = '';
    }
    apply(ev) {
      if (!ev || typeof ev.type !== 'string') return;
      if (typeof ev.seq === 'number') {
        if (ev.seq <= this.lastSeq) return;
        this.lastSeq = ev.seq;
      }
      const d = ev.data || {};
      if (ev.type === 'tool/call') {
        this.n++;
        const desc = describe(d.name || '', parseArgs(d.arguments));
        const li = el('li', {class: 'sub-call', 'data-state': 'running'}, el('span', {class: 'card-label'}, desc.label), ' ', el('span', {class: 'card-summary'}, visible(desc.summary)));
        this.calls.set(d.callId, li);
        this.list.appendChild(li);
        while (this.list.children.length > 4) this.list.removeChild(this.list.firstChild);
      } else if (ev.type === 'tool/result') {
        const li = this.calls.get(d.callId);
        if (li) li.setAttribute('data-state', d.isError ? 'error' : 'done');
      } else if (ev.type === 'approval/request') {
        const li = this.calls.get(d.callId);
        if (li) li.setAttribute('data-state', 'waiting');
      } else if (ev.type === 'assistant/message') {
        const t = textOf(d.content);
        if (t) {
          this.answer = t;
          clear(this.text).appendChild(document.createTextNode(visible(firstLine(t, 240))));
        }
      }
      this.count.textContent = this.n > 4 ? plural(this.n, 'tool call') + ' in all' : '';
    }
    applyAll(events) {
      for (const e of events) this.apply(e);
    }
  }

  dsh.view = {SessionView, ChildSummary, describe, textOf, todoList, outputBlock};
})(dsh);
