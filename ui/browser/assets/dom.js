// dom.js — the only way strings reach the page. Elements are made with
// createElement, text with text nodes, attributes from an allow-list; no
// function here parses HTML, and the pages' Content-Security-Policy
// (require-trusted-types-for 'script') makes any string-to-HTML sink throw,
// so a model's or a tool's "<script>" can only ever be text.
'use strict';
var dsh = globalThis.dsh || (globalThis.dsh = {});
(function () {
  const PLAIN = new Set(['class', 'title', 'role', 'tabindex', 'type', 'value', 'placeholder', 'name', 'id',
    'for', 'colspan', 'rowspan', 'datetime', 'start', 'min', 'max', 'step', 'spellcheck', 'autocomplete',
    'rows', 'maxlength', 'open', 'disabled', 'checked', 'hidden', 'lang', 'inputmode', 'enterkeyhint',
    'autofocus', 'readonly', 'required', 'selected', 'multiple', 'viewBox', 'width', 'height', 'x', 'y',
    'rx', 'x1', 'x2', 'y1', 'y2', 'd', 'points', 'preserveAspectRatio', 'focusable', 'rel', 'target',
    'download', 'scope']);
  const SVG = 'http://www.w3.org/2000/svg';

  // safeHref returns the URL when it is an absolute http(s) or mailto URL
  // (or a same-page #fragment, when frag is true), and null otherwise:
  // javascript:, data:, vbscript:, relative paths and everything a
  // browser would read as one of them after stripping whitespace and
  // control characters.
  function safeHref(raw, frag) {
    if (typeof raw !== 'string') return null;
    const s = raw.replace(/[\u0000-\u0020\u007f-\u009f]+/g, '');
    if (frag && /^#[A-Za-z0-9/_.:=-]*$/.test(s)) return s;
    if (!/^(https?:\/\/|mailto:)/i.test(s)) return null;
    try {
      const u = new URL(s);
      if (u.protocol !== 'http:' && u.protocol !== 'https:' && u.protocol !== 'mailto:') return null;
      return u.href;
    } catch (e) {
      return null;
    }
  }

  function setAttr(node, k, v) {
    if (v === undefined || v === null || v === false) return;
    if (k === 'href') {
      const h = safeHref(String(v), true);
      if (h === null) throw new Error('dsh: refused href ' + String(v).slice(0, 40));
      node.setAttribute('href', h);
      return;
    }
    if (!(PLAIN.has(k) || k.startsWith('data-') || k.startsWith('aria-'))) {
      throw new Error('dsh: attribute ' + k + ' is not allowed');
    }
    node.setAttribute(k, v === true ? '' : String(v));
  }

  function append(node, kids) {
    for (const k of kids) {
      if (k === undefined || k === null || k === false) continue;
      if (Array.isArray(k)) append(node, k);
      else if (k instanceof Node) node.appendChild(k);
      else node.appendChild(document.createTextNode(String(k)));
    }
    return node;
  }

  function build(node, props, kids) {
    if (props) {
      for (const k of Object.keys(props)) {
        const v = props[k];
        if (k === 'on') {
          for (const ev of Object.keys(v)) node.addEventListener(ev, v[ev]);
        } else if (k === 'text') {
          node.textContent = v;
        } else {
          setAttr(node, k, v);
        }
      }
    }
    return append(node, kids);
  }

  // el makes an element: el('div', {class: 'x', on: {click: f}}, 'text', child).
  function el(tag, props, ...kids) {
    return build(document.createElement(tag), props, kids);
  }

  // svg makes an SVG element.
  function svg(tag, props, ...kids) {
    return build(document.createElementNS(SVG, tag), props, kids);
  }

  function clear(node) {
    while (node.firstChild) node.removeChild(node.firstChild);
    return node;
  }

  // link is an anchor to a checked URL that opens elsewhere, or the label
  // as plain text when the URL is not one a page may follow.
  function link(href, label, title) {
    const h = safeHref(href, false);
    if (h === null) return el('span', {class: 'link-blocked', title: 'not a web link: ' + String(href).slice(0, 200)}, label);
    return el('a', {href: h, title: title || h, rel: 'noopener noreferrer nofollow', target: '_blank'}, label);
  }

  // visible makes control characters and bidirectional overrides visible
  // (U+241B for ESC, ⟦U+202E⟧ …), so a terminal trick or a "Trojan
  // source" reordering is shown for what it is instead of acting.
  function visible(s) {
    return s.replace(/[\u0000-\u0008\u000b\u000c\u000e-\u001f\u007f]|[\u0080-\u009f]|[\u202a-\u202e\u2066-\u2069\u200e\u200f\u061c]/g, (c) => {
      const n = c.charCodeAt(0);
      if (n < 0x20) return String.fromCharCode(0x2400 + n);
      if (n === 0x7f) return '\u2421';
      return '\u27e6U+' + n.toString(16).toUpperCase().padStart(4, '0') + '\u27e7';
    });
  }

  // fmt helpers shared by the views.
  function num(n) {
    if (n === undefined || n === null) return '–';
    if (n < 1000) return String(n);
    if (n < 1e6) return (n / 1000).toFixed(n < 1e4 ? 1 : 0) + 'k';
    return (n / 1e6).toFixed(n < 1e7 ? 2 : 1) + 'M';
  }
  function usd(x) {
    if (x === undefined || x === null) return '–';
    if (x === 0) return '$0';
    if (x < 0.01) return '$' + x.toFixed(4);
    if (x < 1) return '$' + x.toFixed(3);
    return '$' + x.toFixed(2);
  }
  function time(ms) {
    if (!ms) return '';
    const d = new Date(ms);
    return d.toLocaleString(undefined, {year: 'numeric', month: 'short', day: 'numeric', hour: '2-digit', minute: '2-digit'});
  }
  function clock(ms) {
    if (!ms) return '';
    return new Date(ms).toLocaleTimeString(undefined, {hour: '2-digit', minute: '2-digit', second: '2-digit'});
  }
  function duration(ms) {
    if (ms === undefined || ms === null || ms < 0) return '';
    if (ms < 1000) return ms + ' ms';
    if (ms < 60000) return (ms / 1000).toFixed(ms < 10000 ? 1 : 0) + ' s';
    const m = Math.floor(ms / 60000);
    return m + ' min ' + Math.round((ms % 60000) / 1000) + ' s';
  }
  function ago(ms, now) {
    const d = Math.max(0, (now || Date.now()) - ms);
    if (d < 60000) return 'just now';
    if (d < 3600000) return Math.floor(d / 60000) + ' min ago';
    if (d < 86400000) return Math.floor(d / 3600000) + ' h ago';
    return Math.floor(d / 86400000) + ' d ago';
  }

  dsh.dom = {el, svg, clear, link, safeHref, visible, append};
  dsh.fmt = {num, usd, time, clock, duration, ago};
})();
