// trace.js — the static trace: one session (and its subagents' sessions)
// embedded in the page as JSON, rendered by the session view. Nothing is
// fetched: the page's policy allows no connection at all.
'use strict';
(function (dsh) {
  const {el, clear, visible} = dsh.dom;
  const F = dsh.fmt;

  function boot() {
    const data = JSON.parse(document.getElementById('dsh-trace').textContent);
    const sessions = new Map();
    for (const s of [data.session, ...(data.children || [])]) sessions.set(s.header.id, s);
    const root = data.session.header.id;
    const main = document.getElementById('trace');
    const head = document.getElementById('trace-head');
    const panel = document.getElementById('usage-panel');
    const usageBtn = document.getElementById('usage-toggle');
    let view = null;

    const hrefOf = (id) => '#' + id;
    const show = (id) => {
      const s = sessions.get(id) || sessions.get(root);
      clear(main);
      clear(head);
      const h = s.header;
      const crumbs = [];
      for (let p = s; p; p = p.header.parentSession ? sessions.get(p.header.parentSession) : null) {
        crumbs.unshift(p);
        if (crumbs.length > 16) break;
      }
      head.appendChild(el('nav', {class: 'crumbs', 'aria-label': 'Sessions'}, crumbs.map((c, k) =>
        k === crumbs.length - 1 ? el('span', {class: 'crumb current', 'aria-current': 'page'}, visible(c.title || c.header.id)) :
          el('span', null, el('a', {class: 'crumb', href: hrefOf(c.header.id)}, visible(c.title || c.header.id)), ' › '))));
      head.appendChild(el('div', {class: 'meta-line'},
        el('span', {class: 'chip mono'}, h.id), ' ',
        h.cwd ? el('span', {class: 'chip mono', title: 'workspace'}, visible(h.cwd)) : null, ' ',
        el('span', {class: 'chip'}, 'created ' + F.time(h.createdAt)),
        data.omitOutputs ? el('span', {class: 'chip warn'}, 'tool outputs left out') : null));
      const container = el('div', {class: 'timeline', id: 'timeline'});
      main.appendChild(container);
      view = new dsh.view.SessionView(container, {
        live: false,
        prices: data.prices,
        childHref: (c) => (sessions.has(c) ? hrefOf(c) : null),
        nested: (c, host) => {
          const cs = sessions.get(c);
          if (cs) new dsh.view.ChildSummary(host).applyAll(cs.events);
          else host.appendChild(el('div', {class: 'muted'}, 'The child session is not in this trace.'));
        },
        diffMode: (() => {
          try {
            return localStorage.getItem('dsh.diff');
          } catch (e) {
            return null; // storage is off for file: pages in some browsers
          }
        })() || 'unified',
        onDiffMode: (m) => {
          try {
            localStorage.setItem('dsh.diff', m);
          } catch (e) {}
        },
      });
      view.applyAll(s.events);
      if (view.todos) {
        const plan = el('aside', {class: 'plan'}, el('h2', null, 'Plan'), dsh.view.todoList(view.todos));
        main.insertBefore(plan, container);
      }
      dsh.usage.render(panel.querySelector('.panel-body'), view);
      document.title = (s.title || h.id) + ' · dsh trace';
      window.scrollTo(0, 0);
    };

    usageBtn.addEventListener('click', () => {
      const open = panel.hidden;
      panel.hidden = !open;
      usageBtn.setAttribute('aria-expanded', String(open));
      if (open) panel.querySelector('.panel-body').focus();
    });
    panel.querySelector('.panel-close').addEventListener('click', () => {
      panel.hidden = true;
      usageBtn.setAttribute('aria-expanded', 'false');
      usageBtn.focus();
    });
    window.addEventListener('hashchange', () => show(location.hash.slice(1) || root));
    dsh.theme.init(document.getElementById('theme-toggle'));
    dsh.keys.install({view: () => view});
    show(location.hash.slice(1) || root);
    // Reading a layout property lays the page out, so the time recorded
    // (from the start of navigation) includes styling and layout, which
    // the benchmark of a long trace measures.
    void document.body.offsetHeight;
    document.documentElement.setAttribute('data-ready-ms', String(Math.round(performance.now())));
    document.documentElement.setAttribute('data-ready', '1');
  }

  if (document.readyState === 'loading') document.addEventListener('DOMContentLoaded', boot);
  else boot();
})(dsh);
