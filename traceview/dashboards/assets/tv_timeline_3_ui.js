/* traceview canvas timeline, part 3 of 3: the page (toolbar, canvas, tooltip, details, range
 * totals) and the interactions: wheel zoom at the cursor, drag to pan, W/S zoom and A/D pan
 * (Perfetto's keys), hover for a tooltip, click to select (details + flow to the launch),
 * shift-drag to select a range (totals), search with next/previous, jump to a step, compare two
 * ranks, host threads, reset. Compare and host threads live in the page's URL with the filter
 * bar's ranks, classes and name: a change of any of them reaches TV.onUrl (a clientside callback
 * on the dcc.Location's search) and redraws. Every text from the trace is set with textContent. */
(function () {
  "use strict";
  var TV = (window.tvTimeline = window.tvTimeline || {});
  var S = TV.state;

  function el(tag, attrs, text) {
    var e = document.createElement(tag);
    Object.keys(attrs || {}).forEach(function (k) { e.setAttribute(k, attrs[k]); });
    if (text !== undefined) { e.textContent = text; }
    return e;
  }

  /* The view [t0, t1): at least 1 us wide, and never past the profile's extent by more than a
     small margin (as Perfetto: zooming out stops at the whole trace, panning at its ends). */
  TV.setView = function (t0, t1) {
    var span = Math.max(t1 - t0, 1000), end = S.meta ? S.meta.end : 0;
    if (end > 0) {
      var margin = end * TV.MARGIN, lo = -margin, hi = end + margin;
      span = Math.min(span, hi - lo);
      t0 = Math.min(Math.max(t0, lo), hi - span);
    }
    S.view = { t0: t0, t1: t0 + span };
    TV.refresh();
  };
  TV.MARGIN = 0.025;

  TV.refresh = function () {
    if (!TV.canvas || !TV.canvas.parentElement.clientWidth) { return; } // hidden page: the resize observer calls back when shown
    TV.draw();
    TV.ensureData(TV.plotWidth(), function () { TV.draw(); TV.status(TV.summary()); });
  };

  TV.summary = function () {
    var d = S.data;
    if (!d) { return ""; }
    return d.raw.id.length + " tasks drawn, " + d.binned_lanes.length + " lanes binned by class";
  };

  TV.zoom = function (factor, atX) {
    var v = S.view, t = TV.t(atX === undefined ? TV.GUTTER + TV.plotWidth() / 2 : atX);
    TV.setView(t - (t - v.t0) * factor, t + (v.t1 - t) * factor);
  };
  TV.pan = function (frac) {
    var v = S.view, d = (v.t1 - v.t0) * frac;
    TV.setView(v.t0 + d, v.t1 + d);
  };
  TV.reset = function () { TV.setView(0, S.meta.end); };

  TV.select = function (id) {
    return TV.getJSON("task", { id: id }).then(function (t) {
      S.selected = t;
      details(t);
      TV.draw();
      return t;
    });
  };

  function details(t) {
    var box = document.getElementById("tvtl-details");
    box.replaceChildren();
    var table = el("table", { id: "tvtl-details-table" });
    t.fields.forEach(function (f) {
      var tr = el("tr");
      tr.appendChild(el("th", { style: "text-align:left;padding-right:12px" }, f[0]));
      tr.appendChild(el("td", { "data-field": f[0] }, f[1]));
      table.appendChild(tr);
    });
    box.appendChild(table);
    if (t.flow) {
      var b = el("button", { id: "tvtl-follow-flow" }, "follow flow →");
      b.addEventListener("click", function () { TV.goTo(t.flow); TV.select(t.flow.id); });
      box.appendChild(b);
    }
  }

  /* Bring an item into view (keep the zoom when it fits, else show it at 2/3 of the width). */
  TV.goTo = function (it) {
    var v = S.view, span = v.t1 - v.t0;
    if (it.dur * 1.5 > span) { span = Math.max(it.dur * 1.5, 1000); }
    var c = it.start + it.dur / 2;
    TV.setView(c - span / 2, c + span / 2);
  };

  TV.search = function (q) {
    var mine = (S.search = { q: q, hits: null, idx: -1, names: null });
    TV.markSearchNames();
    if (!q) { document.getElementById("tvtl-search-count").textContent = ""; TV.draw(); return Promise.resolve(null); }
    return TV.getJSON("search", Object.assign({ q: q }, TV.requestParams())).then(function (h) {
      if (S.search !== mine) { return h; } // another search, or other filters, since
      S.search.hits = h;
      document.getElementById("tvtl-search-count").textContent = h.count + " found";
      TV.draw();
      if (h.count) { TV.step(1); }
      return h;
    }).catch(function (e) {
      if (S.search === mine) { document.getElementById("tvtl-search-count").textContent = "search failed: " + e.message; }
      return null;
    });
  };

  TV.step = function (dir) {
    var h = S.search.hits;
    if (!h || !h.id.length) { return; }
    var n = h.id.length;
    S.search.idx = (((S.search.idx + dir) % n) + n) % n;
    var i = S.search.idx;
    document.getElementById("tvtl-search-count").textContent = i + 1 + " / " + h.count;
    TV.goTo({ start: h.start[i], dur: h.dur[i] });
    TV.select(h.id[i]);
  };

  TV.selectRange = function (t0, t1) {
    var mine = (S.range = { t0: t0, t1: t1, totals: null, asked: true });
    TV.draw();
    return TV.getJSON("range", Object.assign({ start: Math.floor(t0), end: Math.ceil(t1) }, TV.requestParams())).then(function (r) {
      if (S.range !== mine) { return r; } // another range, or other filters, asked since
      S.range.totals = r;
      rangeTable(r);
      return r;
    }).catch(function (e) {
      if (S.range === mine) { document.getElementById("tvtl-range").textContent = "range totals failed: " + e.message; }
      return null;
    });
  };

  function rangeTable(r) {
    var box = document.getElementById("tvtl-range");
    box.replaceChildren(el("p", {}, "Selected " + TV.formatNs(r.end - r.start) + " (busy time, µs)"));
    [["by class", "tvtl-range-class", r.by_class], ["by iteration term", "tvtl-range-term", r.by_term], ["by lane", "tvtl-range-lane", r.by_lane]].forEach(function (g) {
      var t = el("table", { id: g[1], style: "display:inline-block;vertical-align:top;margin-right:24px" });
      t.appendChild(el("caption", { style: "text-align:left;font-weight:bold" }, g[0]));
      g[2].forEach(function (row) {
        var tr = el("tr");
        tr.appendChild(el("td", { style: "padding-right:10px" }, row[0]));
        tr.appendChild(el("td", { "data-us": String(row[1]), style: "text-align:right" }, row[1].toFixed(3)));
        t.appendChild(tr);
      });
      box.appendChild(t);
    });
  }

  function toolbar(root) {
    var bar = el("div", { id: "tvtl-toolbar", style: "display:flex;gap:10px;align-items:center;margin:8px 0;flex-wrap:wrap" });
    var step = el("select", { id: "tvtl-step" });
    step.appendChild(el("option", { value: "" }, "jump to step…"));
    var st = S.meta.steps;
    for (var i = 0; i < st.name.length; i++) {
      step.appendChild(el("option", { value: String(i) }, "rank " + st.rank[i] + " · " + st.name[i]));
    }
    step.addEventListener("change", function () {
      if (step.value === "") { return; }
      var k = Number(step.value);
      TV.setView(st.start[k], st.end[k]);
      step.value = "";
    });
    var reset = el("button", { id: "tvtl-reset" }, "Reset view");
    reset.addEventListener("click", TV.reset);
    var hostLabel = el("label", {}, " host threads");
    var host = el("input", { id: "tvtl-host", type: "checkbox" });
    host.addEventListener("change", function () { TV.setUrl({ host: host.checked ? "1" : null }); });
    hostLabel.prepend(host);
    var compare = el("span", { id: "tvtl-compare" });
    var pickA = rankPicker("tvtl-compare-a", "compare rank…"), pickB = rankPicker("tvtl-compare-b", "with rank…");
    var pick = function () {
      var a = pickA.value, b = pickB.value;
      TV.setUrl({ compare: a !== "" && b !== "" && a !== b ? a + "," + b : null });
    };
    pickA.addEventListener("change", pick);
    pickB.addEventListener("change", pick);
    [pickA, el("span", {}, " above "), pickB].forEach(function (x) { compare.appendChild(x); });
    var search = el("input", { id: "tvtl-search", type: "search", placeholder: "search names (Enter)" });
    search.addEventListener("keydown", function (e) {
      if (e.key !== "Enter") { return; }
      if (search.value === S.search.q && S.search.hits) { TV.step(e.shiftKey ? -1 : 1); } else { TV.search(search.value); }
    });
    var prev = el("button", { id: "tvtl-prev", title: "previous match (Shift+Enter)" }, "◀");
    var next = el("button", { id: "tvtl-next", title: "next match (Enter)" }, "▶");
    prev.addEventListener("click", function () { TV.step(-1); });
    next.addEventListener("click", function () { TV.step(1); });
    [step, compare, reset, hostLabel, search, prev, next, el("span", { id: "tvtl-search-count" }), el("span", { id: "tvtl-status", style: "color:#4b5563" })].forEach(function (x) { bar.appendChild(x); });
    bar.appendChild(el("span", { style: "color:#6b7280" }, "wheel/W S: zoom · drag/A D: pan · hover: tooltip · click: details · shift-drag: range"));
    root.appendChild(bar);
  }

  function rankPicker(id, prompt) {
    var sel = el("select", { id: id, title: "two ranks one above the other (the URL's compare=a,b)" });
    sel.appendChild(el("option", { value: "" }, prompt));
    S.meta.ranks.forEach(function (r) { sel.appendChild(el("option", { value: String(r) }, "rank " + r)); });
    return sel;
  }

  /* Set (a value) or drop (null) keys of the page's query string, as a navigation Dash's
   * dcc.Location sees (it listens to popstate): the filter bar and the links follow, and the
   * location's clientside callback calls TV.onUrl. */
  TV.setUrl = function (changes) {
    var p = new URLSearchParams(window.location.search);
    Object.keys(changes).forEach(function (k) {
      if (changes[k] === null) { p.delete(k); } else { p.set(k, changes[k]); }
    });
    var q = p.toString();
    window.history.pushState({}, "", window.location.pathname + (q ? "?" + q : "") + window.location.hash);
    window.dispatchEvent(new PopStateEvent("popstate", { state: {} }));
    TV.onUrl(q ? "?" + q : "");
  };

  /* The page's query string changed (the filter bar, compare, host threads, back/forward): show
   * it in the toolbar; data, search hits and range totals of other parameters are dropped (the
   * window is asked again: TV.covered compares the parameters). */
  TV.onUrl = function (search) {
    search = search || "";
    if (search === TV.urlSearch) { return; }
    var before = JSON.stringify(TV.requestParams());
    TV.urlSearch = search;
    if (!S.meta || !TV.canvas) { return; }
    syncControls();
    if (JSON.stringify(TV.requestParams()) === before) { TV.refresh(); return; }
    if (S.search.q) { // its hits were for other filters (Enter searches again)
      S.search = { q: S.search.q, hits: null, idx: -1, names: S.search.names };
      document.getElementById("tvtl-search-count").textContent = "";
    }
    if (S.range && S.range.asked) { TV.selectRange(S.range.t0, S.range.t1); }
    TV.refresh();
  };

  function syncControls() {
    var u = TV.urlState(), a = document.getElementById("tvtl-compare-a"), b = document.getElementById("tvtl-compare-b");
    document.getElementById("tvtl-host").checked = u.host;
    if (u.compare) {
      a.value = String(u.compare[0]);
      b.value = String(u.compare[1]);
    } else if (a.value !== "" && b.value !== "") { // compare dropped elsewhere (back, a shared link)
      a.value = "";
      b.value = "";
    }
  }

  /* The tooltip: what is under (x, y) of the canvas, from the data held (no request): a raw
   * item's full name, class, lane, start and duration; a stacked-bin cell's time span and busy
   * time by class. Null over nothing. */
  TV.describe = function (x, y) {
    var d = S.data, l = TV.laneAtY(y);
    if (!d || !l) { return null; }
    var lane = "rank " + l.rank + " · " + l.label, h = TV.hit(x, y);
    if (h) {
      var i = h.row;
      return {
        id: h.id,
        title: d.names[d.raw.name[i]],
        rows: [["class", d.classes[d.raw.cls[i]]], ["lane", lane], ["start", TV.formatNs(d.raw.start[i])], ["duration", TV.formatNs(d.raw.dur[i])]],
      };
    }
    var c = TV.hitBin(x, y);
    if (!c) { return null; }
    var span = c.t1 - c.t0, rows = [["lane", lane], ["bin", TV.formatNs(c.t0) + " – " + TV.formatNs(c.t1)]];
    c.rows.slice().sort(function (p, q) { return d.bins.busy[q] - d.bins.busy[p]; }).forEach(function (k) {
      var busy = d.bins.busy[k];
      rows.push([d.classes[d.bins.cls[k]], TV.formatNs(busy) + " busy (" + (100 * busy / span).toFixed(1) + " %)"]);
    });
    if (!c.rows.length) { rows.push(["busy", "idle"]); }
    return { id: null, title: "binned: busy time by class", rows: rows };
  };

  TV.showTip = function (x, y) {
    var tip = document.getElementById("tvtl-tooltip"), info = TV.describe(x, y);
    if (!tip) { return; }
    if (!info) { TV.hideTip(); return; }
    tip.replaceChildren(el("div", { "data-field": "name", style: "font-weight:bold;margin-bottom:3px" }, info.title));
    info.rows.forEach(function (r) {
      var row = el("div", { "data-field": r[0] });
      row.appendChild(el("span", { style: "color:#9ca3af" }, r[0] + ": "));
      row.appendChild(el("span", {}, r[1]));
      tip.appendChild(row);
    });
    tip.dataset.id = info.id === null ? "" : String(info.id);
    tip.style.display = "block";
    var wrap = tip.parentElement, left = x + 14, top = y + 14;
    if (left + tip.offsetWidth > wrap.clientWidth) { left = Math.max(0, x - tip.offsetWidth - 14); }
    if (top + tip.offsetHeight > wrap.clientHeight) { top = Math.max(0, y - tip.offsetHeight - 14); }
    tip.style.left = left + "px";
    tip.style.top = top + "px";
  };

  TV.hideTip = function () {
    var tip = document.getElementById("tvtl-tooltip");
    if (tip) { tip.style.display = "none"; tip.dataset.id = ""; }
  };

  function canvasEvents(c) {
    var drag = null;
    c.addEventListener("wheel", function (e) {
      e.preventDefault();
      var r = c.getBoundingClientRect();
      TV.zoom(Math.exp(e.deltaY * 0.0015), e.clientX - r.left);
      TV.showTip(e.clientX - r.left, e.clientY - r.top);
    }, { passive: false });
    c.addEventListener("mouseleave", TV.hideTip);
    c.addEventListener("mousedown", function (e) {
      var r = c.getBoundingClientRect();
      drag = { x: e.clientX - r.left, y: e.clientY - r.top, view: S.view, shift: e.shiftKey, moved: false };
      c.focus({ preventScroll: true });
      TV.hideTip();
    });
    window.addEventListener("mousemove", function (e) {
      TV.mouseX = undefined;
      if (!drag) {
        var rr = c.getBoundingClientRect();
        if (e.clientX >= rr.left && e.clientX <= rr.right && e.clientY >= rr.top && e.clientY <= rr.bottom) {
          TV.mouseX = e.clientX - rr.left;
          TV.showTip(TV.mouseX, e.clientY - rr.top);
        } else {
          TV.hideTip();
        }
        return;
      }
      var r = c.getBoundingClientRect(), x = e.clientX - r.left;
      if (Math.abs(x - drag.x) > 3) { drag.moved = true; }
      if (!drag.moved) { return; }
      if (drag.shift) {
        S.range = { t0: Math.min(TV.t(drag.x), TV.t(x)), t1: Math.max(TV.t(drag.x), TV.t(x)) };
        TV.draw();
      } else {
        var dt = ((x - drag.x) / TV.plotWidth()) * (drag.view.t1 - drag.view.t0);
        S.view = { t0: drag.view.t0 - dt, t1: drag.view.t1 - dt };
        TV.draw();
      }
    });
    window.addEventListener("mouseup", function (e) {
      if (!drag) { return; }
      var d = drag, r = c.getBoundingClientRect();
      drag = null;
      if (d.moved && d.shift) { TV.selectRange(S.range.t0, S.range.t1); return; }
      if (d.moved) { TV.refresh(); return; }
      var h = TV.hit(e.clientX - r.left, e.clientY - r.top);
      if (h) { TV.select(h.id); } else { S.selected = null; document.getElementById("tvtl-details").replaceChildren(); TV.draw(); }
    });
  }

  function keys() {
    document.addEventListener("keydown", function (e) {
      var root = document.getElementById("tvtl-root");
      if (!root || root.offsetParent === null || e.ctrlKey || e.metaKey || e.altKey) { return; }
      var tag = (e.target && e.target.tagName) || "";
      if (tag === "INPUT" || tag === "SELECT" || tag === "TEXTAREA") { return; }
      var k = e.key.toLowerCase();
      if (k === "w") { TV.zoom(0.8, TV.mouseX); } else if (k === "s") { TV.zoom(1.25, TV.mouseX); } else if (k === "a") { TV.pan(-0.2); } else if (k === "d") { TV.pan(0.2); } else { return; }
      TV.hideTip();
      e.preventDefault();
    });
  }

  var TIP_STYLE = "position:absolute;display:none;pointer-events:none;z-index:10;max-width:560px;max-height:50vh;" +
    "overflow:hidden;overflow-wrap:anywhere;background:#111827;color:#f9fafb;font:12px system-ui, sans-serif;" +
    "padding:6px 8px;border-radius:4px;box-shadow:0 2px 6px rgba(0,0,0,0.3)";

  function mount(root) {
    root.dataset.mounted = "1";
    var loading = el("p", { id: "tvtl-loading", style: "color:#4b5563" }, "Loading the timeline (the first open indexes every task)…");
    root.appendChild(loading);
    TV.getJSON("meta", {}).then(function (m) {
      S.meta = m;
      loading.remove();
      toolbar(root);
      var wrap = el("div", { id: "tvtl-canvas-wrap", style: "position:relative;width:100%;border:1px solid #e5e7eb" });
      TV.canvas = el("canvas", { id: "tvtl-canvas", tabindex: "0", style: "display:block;cursor:grab;outline:none" });
      wrap.appendChild(TV.canvas);
      wrap.appendChild(el("div", { id: "tvtl-tooltip", role: "tooltip", style: TIP_STYLE }));
      root.appendChild(wrap);
      root.appendChild(el("h4", {}, "Selected task"));
      root.appendChild(el("div", { id: "tvtl-details" }));
      root.appendChild(el("h4", {}, "Selected range (shift-drag)"));
      root.appendChild(el("div", { id: "tvtl-range" }));
      canvasEvents(TV.canvas);
      keys();
      var lastWidth = wrap.clientWidth;
      new ResizeObserver(function () {
        if (S.view && wrap.clientWidth !== lastWidth) { lastWidth = wrap.clientWidth; TV.refresh(); }
      }).observe(wrap);
      syncControls();
      TV.reset();
      root.dataset.ready = "1";
    }).catch(function (e) { root.textContent = "timeline unavailable: " + e.message; });
  }

  function watch() {
    var root = document.getElementById("tvtl-root");
    if (root && !root.dataset.mounted) { mount(root); return; }
    if (!root) {
      var obs = new MutationObserver(function () {
        var r = document.getElementById("tvtl-root");
        if (r && !r.dataset.mounted) { obs.disconnect(); mount(r); }
      });
      obs.observe(document.body, { childList: true, subtree: true });
    }
  }
  if (document.readyState === "loading") { document.addEventListener("DOMContentLoaded", watch); } else { watch(); }
})();
