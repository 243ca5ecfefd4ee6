/* traceview canvas timeline, part 1 of 3: state and data (the JSON API, prefetch, cache).
 *
 * The view [t0, t1) is in ns relative to the profile's origin. A window request asks for three
 * times the visible width (PREFETCH) with one bin per pixel of that wider window, so a pan or a
 * zoom inside it redraws from what the browser holds, without a request. Trace text only ever
 * reaches the page through textContent (part 3) or the canvas (part 2).
 */
(function () {
  "use strict";
  var TV = (window.tvTimeline = window.tvTimeline || {});
  TV.PREFETCH = 3;
  TV.API = "/api/timeline/";
  TV.requests = 0; // window requests sent (tests count them)
  TV.draws = 0;
  TV.misses = []; // why each window request went out
  TV.state = {
    meta: null,
    view: null, // {t0, t1}
    data: null, // the last window answer, with per-lane indexes
    params: "", // ranks/host/filters of the data held (TV.requestParams)
    seq: 0,
    pending: null,
    selected: null, // a /task answer
    search: { q: "", hits: null, idx: -1, names: null },
    range: null, // {t0, t1, totals}
    lanes: [], // visible lanes in drawing order: {lane, y, h, label, kind, rank, header}
  };

  TV.getJSON = function (route, params) {
    var q = Object.keys(params)
      .filter(function (k) { return params[k] !== null && params[k] !== undefined && params[k] !== ""; })
      .map(function (k) { return encodeURIComponent(k) + "=" + encodeURIComponent(params[k]); })
      .join("&");
    return fetch(TV.API + route + (q ? "?" + q : ""), { credentials: "same-origin" }).then(function (r) {
      if (!r.ok) { throw new Error(route + ": HTTP " + r.status); }
      return r.json();
    });
  };

  /* URL state shared with the rest of the dashboard: rank=, compare=a,b, host=1 and the filter
   * bar's class= and q= (the page's query string as Dash's dcc.Location last announced it through
   * TV.onUrl, else the address bar's). */
  TV.urlState = function () {
    var p = new URLSearchParams(TV.urlSearch !== undefined ? TV.urlSearch : window.location.search);
    var ints = function (s) {
      return (s || "").split(",").filter(function (x) { return /^-?\d+$/.test(x); }).map(Number);
    };
    var compare = ints(p.get("compare")).filter(function (r, i, a) { return a.indexOf(r) === i; }).slice(0, 2);
    var ranks = compare.length === 2 ? compare : ints(p.get("rank"));
    var host = ["1", "true", "yes"].indexOf(p.get("host") || "") >= 0;
    var classes = p.getAll("class").join(",").split(",").filter(function (c) { return c !== ""; }).sort();
    var name = (p.get("q") || "").trim().slice(0, 2000); // query.MAX_NAME
    return { ranks: ranks, compare: compare.length === 2 ? compare : null, host: host, classes: classes, name: name };
  };

  /* What a window, search or range request depends on besides its times (the data held is kept
   * only while these stay the same: TV.covered). */
  TV.requestParams = function () {
    var u = TV.urlState();
    return { ranks: u.ranks.join(","), host: u.host ? "1" : "", cls: u.classes.join(","), name: u.name };
  };

  /* Lanes in drawing order for the current URL state: ranks one above the other (compare order
   * when comparing), each with a header row; host lanes only with host on. */
  TV.layoutLanes = function () {
    var m = TV.state.meta, u = TV.urlState();
    var order = u.compare || (u.ranks.length ? u.ranks : m.ranks);
    var out = [], y = 0;
    order.forEach(function (rank) {
      out.push({ header: true, rank: rank, y: y, h: 18, label: "rank " + rank });
      y += 18;
      for (var i = 0; i < m.lanes.lane.length; i++) {
        if (m.lanes.rank[i] !== rank) { continue; }
        var kind = m.lanes.kind[i];
        if (kind === "host" && !u.host) { continue; }
        var h = kind === "host" ? 14 : kind === "steps" ? 16 : kind === "memory" ? 40 : 20;
        out.push({ lane: m.lanes.lane[i], rank: rank, kind: kind, label: m.lanes.label[i], depth: m.lanes.depth[i], y: y, h: h });
        y += h + 2;
      }
    });
    TV.state.lanes = out;
    TV.state.laneAt = {};
    out.forEach(function (l) { if (!l.header) { TV.state.laneAt[l.lane] = l; } });
    return y;
  };

  /* Index a window answer: per lane, the raw item rows; per binned lane, cells by bin. */
  TV.indexData = function (d) {
    var byLane = {};
    var raw = d.raw;
    for (var i = 0; i < raw.lane.length; i++) {
      (byLane[raw.lane[i]] = byLane[raw.lane[i]] || []).push(i);
    }
    d.byLane = byLane;
    d.binned = {};
    d.binned_lanes.forEach(function (l) { d.binned[l] = true; });
    d.idRow = {};
    for (var j = 0; j < raw.id.length; j++) { d.idRow[raw.id[j]] = j; }
    d.cells = {}; // "lane:bin" -> the rows of d.bins of that cell (one per class: the tooltip)
    for (var k = 0; k < d.bins.lane.length; k++) {
      var key = d.bins.lane[k] + ":" + d.bins.bin[k];
      (d.cells[key] = d.cells[key] || []).push(k);
    }
    return d;
  };

  /* Whether the view can be drawn from the data held: inside its window, at a zoom its bins still
   * resolve (bins no wider than 2 px), for the same ranks, host lanes and filters. */
  TV.covered = function (view, width) {
    var d = TV.state.data;
    TV.miss = null; // why the last check asked for data (tests print it)
    if (!d) { TV.miss = "no data"; return false; }
    if (TV.state.params !== JSON.stringify(TV.requestParams())) { TV.miss = "ranks/host/filters changed"; return false; }
    if (view.t0 < d.start || view.t1 > d.end) { TV.miss = "outside [" + d.start + ", " + d.end + ")"; return false; }
    if (d.binned_lanes.length) {
      var binNs = (d.end - d.start) / d.px;
      var pxNs = (view.t1 - view.t0) / width;
      if (binNs > 2 * pxNs) { TV.miss = "bins too coarse: " + binNs + " ns > 2 x " + pxNs; return false; }
    }
    return true;
  };

  /* Ask for the data of the view (when not covered); `done` runs after the answer is held. */
  TV.ensureData = function (width, done) {
    var s = TV.state, v = s.view;
    if (TV.covered(v, width)) { return false; }
    var span = v.t1 - v.t0;
    var start = Math.floor(v.t0 - span * (TV.PREFETCH - 1) / 2);
    var end = Math.ceil(v.t1 + span * (TV.PREFETCH - 1) / 2);
    var params = TV.requestParams();
    var key = JSON.stringify(params) + "|" + start + "|" + end;
    if (s.pending === key) { return true; }
    s.pending = key;
    TV.misses.push(TV.miss);
    var seq = ++s.seq;
    TV.requests += 1;
    if (TV.fetchOverlays) { TV.fetchOverlays({ start: start, end: Math.max(end, start + 1), ranks: params.ranks }); } // part 4
    var px = Math.max(1, Math.min(8192, Math.round(width * TV.PREFETCH)));
    TV.getJSON("window", Object.assign({ start: start, end: Math.max(end, start + 1), px: px }, params))
      .then(function (d) {
        if (seq !== s.seq) { return; } // a newer request is on its way
        s.pending = null;
        s.data = TV.indexData(d);
        s.params = JSON.stringify(params);
        TV.markSearchNames();
        done();
      })
      .catch(function (e) {
        if (seq !== s.seq) { return; } // superseded: the newer request reports its own outcome
        s.pending = null;
        TV.status("error: " + e.message);
      });
    return true;
  };

  /* Which of the held names contain the search text (the canvas outlines those items). */
  TV.markSearchNames = function () {
    var s = TV.state, q = s.search.q.toLowerCase();
    s.search.names = null;
    if (!q || !s.data) { return; }
    var set = {};
    s.data.names.forEach(function (n, i) { if (n.toLowerCase().indexOf(q) >= 0) { set[i] = true; } });
    s.search.names = set;
  };

  TV.status = function (text) {
    var el = document.getElementById("tvtl-status");
    if (el) { el.textContent = text; }
  };
})();
