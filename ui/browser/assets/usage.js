// usage.js — the usage panel: tokens per turn as a stacked bar chart
// (uncached input, cache reads, cache writes, output) with the cost of each
// turn, the session's totals and its cache hit rate. SVG built node by
// node, sized by its container, no library.
'use strict';
(function (dsh) {
  const {el, svg, clear} = dsh.dom;
  const F = dsh.fmt;
  const SERIES = [
    ['cacheRead', 'Cache reads', 'u-cr'],
    ['input', 'Input (uncached)', 'u-in'],
    ['cacheWrite', 'Cache writes', 'u-cw'],
    ['output', 'Output', 'u-out'],
  ];

  function chart(rows) {
    const W = 560, H = 180, PAD_L = 44, PAD_B = 22, PAD_T = 10;
    const max = Math.max(1, ...rows.map((r) => SERIES.reduce((s, [k]) => s + (r[k] || 0), 0)));
    const root = svg('svg', {class: 'usage-chart', viewBox: '0 0 ' + W + ' ' + H, role: 'img',
      'aria-label': 'Tokens per turn, ' + rows.length + ' turns'});
    const plotW = W - PAD_L - 6, plotH = H - PAD_T - PAD_B;
    for (let g = 0; g <= 4; g++) {
      const y = PAD_T + plotH - (plotH * g) / 4;
      root.appendChild(svg('line', {class: 'grid', x1: PAD_L, x2: W - 6, y1: y, y2: y}));
      root.appendChild(svg('text', {class: 'axis', x: PAD_L - 6, y: y + 4}, F.num(Math.round((max * g) / 4))));
    }
    const n = Math.max(rows.length, 1);
    const bw = Math.max(2, Math.min(36, (plotW / n) * 0.7));
    rows.forEach((r, i) => {
      const x = PAD_L + (plotW / n) * i + (plotW / n - bw) / 2;
      let y = PAD_T + plotH;
      const g = svg('g', {class: 'bar', 'data-turn': String(r.turn)});
      const total = SERIES.reduce((s, [k]) => s + (r[k] || 0), 0);
      g.appendChild(svg('title', null, 'Turn ' + r.turn + ': ' + SERIES.map(([k, label]) => label + ' ' + F.num(r[k] || 0)).join(', ') +
        ' · ' + F.usd(r.cost) + (r.costKnown ? '' : ' (some models have no price)')));
      for (const [k, , cls] of SERIES) {
        const v = r[k] || 0;
        if (!v) continue;
        const h = (plotH * v) / max;
        y -= h;
        g.appendChild(svg('rect', {class: cls, x, y, width: bw, height: Math.max(h, 0.5)}));
      }
      if (n <= 40 || i % Math.ceil(n / 20) === 0) {
        g.appendChild(svg('text', {class: 'axis', x: x + bw / 2, y: H - 6}, String(r.turn)));
      }
      g.setAttribute('data-total', String(total));
      root.appendChild(g);
    });
    return root;
  }

  function render(host, view) {
    clear(host);
    const rows = view.usageRows().filter((r) => r.steps || r.input || r.output);
    const t = view.totals;
    const inAll = t.input + t.cacheRead + t.cacheWrite;
    const hit = inAll ? t.cacheRead / inAll : 0;
    host.appendChild(el('div', {class: 'usage-totals'},
      stat('Cost', F.usd(t.cost) + (t.costKnown ? '' : '+'), t.costKnown ? 'at list prices' : 'some models have no price'),
      stat('Input', F.num(inAll), F.num(t.input) + ' uncached'),
      stat('Output', F.num(t.output), plural(rows.length, 'turn')),
      stat('Cache hits', Math.round(hit * 100) + '%', F.num(t.cacheRead) + ' read · ' + F.num(t.cacheWrite) + ' written')));
    if (!rows.length) {
      host.appendChild(el('p', {class: 'muted'}, 'No model calls yet.'));
      return;
    }
    host.appendChild(el('div', {class: 'usage-legend'}, SERIES.map(([, label, cls]) => el('span', {class: 'lg'}, el('span', {class: 'sw ' + cls}), label))));
    host.appendChild(el('div', {class: 'chart-wrap'}, chart(rows)));
    const body = el('tbody');
    for (const r of rows) {
      const inT = r.input + r.cacheRead + r.cacheWrite;
      body.appendChild(el('tr', {'data-turn': String(r.turn)},
        el('td', null, String(r.turn)),
        el('td', {class: 'prompt-cell', title: r.prompt}, dsh.dom.visible((r.prompt || '').slice(0, 80))),
        el('td', {class: 'num'}, String(r.steps)),
        el('td', {class: 'num'}, F.num(inT)),
        el('td', {class: 'num'}, inT ? Math.round((100 * r.cacheRead) / inT) + '%' : '–'),
        el('td', {class: 'num'}, F.num(r.output)),
        el('td', {class: 'num'}, F.usd(r.cost) + (r.costKnown ? '' : '+'))));
    }
    host.appendChild(el('div', {class: 'table-wrap'}, el('table', {class: 'usage-table'},
      el('thead', null, el('tr', null, ['Turn', 'Prompt', 'Steps', 'In', 'Cached', 'Out', 'Cost'].map((h) => el('th', {scope: 'col'}, h)))), body)));
  }

  function stat(label, value, sub) {
    return el('div', {class: 'stat'}, el('div', {class: 'stat-label'}, label), el('div', {class: 'stat-value'}, value), el('div', {class: 'stat-sub'}, sub));
  }
  function plural(n, w) {
    return n + ' ' + w + (n === 1 ? '' : 's');
  }

  dsh.usage = {render, chart};
})(dsh);
