// common.js — what the live UI and the trace share beyond the view: the
// theme switch and keyboard navigation.
'use strict';
(function (dsh) {
  const {el} = dsh.dom;

  function store(k, v) {
    try {
      if (v === undefined) return localStorage.getItem(k);
      if (v === null) localStorage.removeItem(k);
      else localStorage.setItem(k, v);
    } catch (e) {
      return null;
    }
    return null;
  }

  // theme: "system" follows prefers-color-scheme; "light" and "dark" pin it.
  const theme = {
    init(button) {
      const apply = (t) => {
        if (t === 'light' || t === 'dark') document.documentElement.setAttribute('data-theme', t);
        else document.documentElement.removeAttribute('data-theme');
        if (button) {
          button.textContent = t === 'light' ? '\u2600' : t === 'dark' ? '\u263e' : '\u25d0';
          button.title = 'Theme: ' + (t || 'system') + ' (t)';
          button.setAttribute('aria-label', 'Theme: ' + (t || 'system'));
        }
      };
      let cur = store('dsh.theme') || 'system';
      apply(cur);
      const next = () => {
        cur = cur === 'system' ? 'light' : cur === 'light' ? 'dark' : 'system';
        store('dsh.theme', cur === 'system' ? null : cur);
        apply(cur);
      };
      if (button) button.addEventListener('click', next);
      theme.next = next;
    },
    next() {},
  };

  function typing(e) {
    const t = e.target;
    return t && (t.tagName === 'INPUT' || t.tagName === 'TEXTAREA' || t.tagName === 'SELECT' || t.isContentEditable);
  }

  // items are the timeline's navigable entries.
  function items() {
    const tl = document.getElementById('timeline');
    return tl ? [...tl.querySelectorAll('.msg, .card.tool, .note, .turn-end')].filter((n) => n.offsetParent !== null) : [];
  }

  function move(delta) {
    const list = items();
    if (!list.length) return;
    const cur = list.indexOf(document.activeElement && document.activeElement.closest ? document.activeElement.closest('.msg, .card.tool, .note, .turn-end') : null);
    let i = cur < 0 ? (delta > 0 ? 0 : list.length - 1) : Math.max(0, Math.min(list.length - 1, cur + delta));
    if (delta === Infinity) i = list.length - 1;
    if (delta === -Infinity) i = 0;
    const n = list[i];
    const target = n.classList.contains('card') ? n.querySelector('.card-head') : n;
    if (!target.hasAttribute('tabindex') && target.tagName !== 'BUTTON') target.setAttribute('tabindex', '-1');
    target.focus({preventScroll: true});
    n.scrollIntoView({block: 'nearest'});
  }

  const HELP = [
    ['j / k', 'next / previous message or tool card'],
    ['g / G', 'first / last'],
    ['Enter', 'open or close the focused card'],
    ['y / a / n', 'in an approval: allow once / always allow / deny (type a reason)'],
    ['/', 'search sessions'],
    ['c', 'compose a message'],
    ['Ctrl+Enter', 'send (steers while the agent runs)'],
    ['Esc', 'cancel the running turn (in the prompt box), close a panel'],
    ['u', 'usage panel'],
    ['d', 'diffs: unified / side by side'],
    ['t', 'theme: system / light / dark'],
    ['?', 'this help'],
  ];

  function help() {
    let dlg = document.getElementById('help');
    if (!dlg) {
      dlg = el('dialog', {id: 'help', class: 'dialog', 'aria-label': 'Keyboard shortcuts'},
        el('h2', null, 'Keyboard'),
        el('table', {class: 'keys'}, el('tbody', null, HELP.map(([k, d]) => el('tr', null, el('td', null, el('kbd', null, k)), el('td', null, d))))),
        el('form', {method: 'dialog'}, el('button', {class: 'btn', type: 'submit'}, 'Close')));
      document.body.appendChild(dlg);
    }
    if (!dlg.open) dlg.showModal();
  }

  // keys installs the shortcuts; extra maps keys to the page's own actions.
  function install(ctx) {
    document.addEventListener('keydown', (e) => {
      if (e.defaultPrevented || e.ctrlKey || e.metaKey || e.altKey || typing(e)) return;
      if (document.querySelector('dialog[open]')) return;
      const extra = ctx.extra && ctx.extra[e.key];
      if (extra) {
        e.preventDefault();
        extra(e);
        return;
      }
      switch (e.key) {
        case 'j':
          move(1);
          break;
        case 'k':
          move(-1);
          break;
        case 'g':
          move(-Infinity);
          break;
        case 'G':
          move(Infinity);
          break;
        case 't':
          theme.next();
          break;
        case 'u': {
          const b = document.getElementById('usage-toggle');
          if (b) b.click();
          break;
        }
        case 'd': {
          const v = ctx.view && ctx.view();
          if (v) v.modeChosen(v.diffMode === 'split' ? 'unified' : 'split');
          break;
        }
        case '?':
          help();
          break;
        default:
          return;
      }
      e.preventDefault();
    });
  }

  dsh.theme = theme;
  dsh.keys = {install, move, help};
  dsh.store = store;
})(dsh);
