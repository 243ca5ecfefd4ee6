/* traceview canvas timeline, part 3 of 3: the page (toolbar, canvas, details, range totals) and
 * the interactions: wheel zoom at the cursor, drag to pan, W/S zoom and A/D pan (Perfetto's keys),
 * click to select (details + flow to the launch), shift-drag to select a range (totals), search
 * with next/previous, jump to a step, host threads, reset. Every text from the trace is set with
 * textContent. */
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
    if (!TV.canvas.parentElement.clientWidth) { return; } // hidden page: the resize observer calls back when shown
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
    S.search = { q: q, hits: null, idx: -1, names: null };
    TV.markSearchNames();
    if (!q) { document.getElementById("tvtl-search-count").textContent = ""; TV.draw(); return Promise.resolve(null); }
    var p = TV.requestParams();
    return TV.getJSON("search", { q: q, ranks: p.ranks, host: p.host }).then(function (h) {
      S.search.hits = h;
      document.getElementById("tvtl-search-count").textContent = h.count + " found";
      TV.draw();
      if (h.count) { TV.step(1); }
      return h;
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
    S.range = { t0: t0, t1: t1, totals: null };
    TV.draw();
    var p = TV.requestParams();
    return TV.getJSON("range", { start: Math.floor(t0), end: Math.ceil(t1), ranks: p.ranks }).then(function (r) {
      S.range.totals = r;
      rangeTable(r);
      return r;
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
    host.checked = TV.urlState().host;
    host.addEventListener("change", function () { TV.hostOverride = host.checked; TV.refresh(); });
    hostLabel.prepend(host);
    var search = el("input", { id: "tvtl-search", type: "search", placeholder: "search names (Enter)" });
    search.addEventListener("keydown", function (e) {
      if (e.key !== "Enter") { return; }
      if (search.value === S.search.q && S.search.hits) { TV.step(e.shiftKey ? -1 : 1); } else { TV.search(search.value); }
    });
    var prev = el("button", { id: "tvtl-prev", title: "previous match (Shift+Enter)" }, "◀");
    var next = el("button", { id: "tvtl-next", title: "next match (Enter)" }, "▶");
    prev.addEventListener("click", function () { TV.step(-1); });
    next.addEventListener("click", function () { TV.step(1); });
    [step, reset, hostLabel, search, prev, next, el("span", { id: "tvtl-search-count" }), el("span", { id: "tvtl-status", style: "color:#4b5563" })].forEach(function (x) { bar.appendChild(x); });
    bar.appendChild(el("span", { style: "color:#6b7280" }, "wheel/W S: zoom · drag/A D: pan · click: details · shift-drag: range"));
    root.appendChild(bar);
  }

  function canvasEvents(c) {
    var drag = null;
    c.addEventListener("wheel", function (e) {
      e.preventDefault();
      var r = c.getBoundingClientRect();
      TV.zoom(Math.exp(e.deltaY * 0.0015), e.clientX - r.left);
    }, { passive: false });
    c.addEventListener("mousedown", function (e) {
      var r = c.getBoundingClientRect();
      drag = { x: e.clientX - r.left, y: e.clientY - r.top, view: S.view, shift: e.shiftKey, moved: false };
      c.focus({ preventScroll: true });
    });
    window.addEventListener("mousemove", function (e) {
      TV.mouseX = undefined;
      if (!drag) {
        var rr = c.getBoundingClientRect();
        if (e.clientX >= rr.left && e.clientX <= rr.right && e.clientY >= rr.top && e.clientY <= rr.bottom) { TV.mouseX = e.clientX - rr.left; }
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
      e.preventDefault();
    });
  }

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
      var last = window.location.search;
      setInterval(function () {
        if (window.location.search !== last) { last = window.location.search; TV.refresh(); }
      }, 300);
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
