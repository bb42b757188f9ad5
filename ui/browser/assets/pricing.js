// pricing.js — the cost of usage at list prices, read the way llm/pricing
// reads them (the table comes from the Go side, so both agree): the
// provider prefix and case are ignored, and the longest matching model
// prefix wins. A model without a price has an unknown cost, never zero.
'use strict';
(function (dsh) {
  function lookup(model, table) {
    if (!model || !Array.isArray(table)) return null;
    let m = String(model);
    const slash = m.lastIndexOf('/');
    if (slash >= 0) m = m.slice(slash + 1);
    m = m.toLowerCase();
    let best = null;
    for (const e of table) {
      if (e && typeof e.prefix === 'string' && m.startsWith(e.prefix) && (!best || e.prefix.length > best.prefix.length)) best = e;
    }
    return best;
  }
  function cost(p, u) {
    return ((u.input || 0) * p.input + (u.output || 0) * p.output + (u.cacheRead || 0) * p.cacheRead + (u.cacheWrite || 0) * p.cacheWrite) / 1e6;
  }
  dsh.pricing = {lookup, cost};
})(dsh);
