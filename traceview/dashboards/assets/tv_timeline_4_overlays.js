/* traceview canvas timeline, part 4: traceview's own analyses drawn over the lanes
 * (/api/timeline/overlays, dashboards/timeline/overlays.py):
 *
 * - collectives: each instance on its communication lane, its wait part (from its start to
 *   start + wait: this rank waiting for the last-arriving one) hatched and lighter, its transfer
 *   part solid; the same instance on two ranks shown one above the other is joined by a thin line
 *   at the moment its wait ends (when the last rank arrived). Point-to-point operations (p2p) are
 *   only outlined (dashed): the analysis matches the k-th send of every rank, not a send with its
 *   recv, so their "wait" is no wait for a peer;
 * - bubbles: the pipeline bubble of each rank and step, as translucent bands on its device lanes;
 * - findings: labelled bands on the steps and terms lanes of the step windows they fired on;
 * - memory: on each rank's memory lane, allocated memory as a step line and reserved as a dashed
 *   one, scaled to the series' whole-trace peak (so a zoom never rescales it); hovering the lane
 *   gives both values at that instant.
 *
 * The overlays are asked for with each window request, over the same prefetched window (part 1
 * calls TV.fetchOverlays), so a pan or zoom inside it draws from what is held; part 2's TV.draw
 * calls TV.drawOverlays. A checkbox group added to the toolbar toggles each. Trace text reaches
 * the page only through fillText and textContent. TV.overlayDrawn counts what the last draw drew
 * (tests read it).
 */
(function () {
  "use strict";
  var TV = (window.tvTimeline = window.tvTimeline || {});
  var FONT = "11px system-ui, sans-serif";
  var SEVERITY = { info: 0, warning: 1, critical: 2 };
  var SEVERITY_COLOR = { info: "37,99,235", warning: "217,119,6", critical: "220,38,38" };
  var LABELS = {
    collectives: "collectives (hatched: wait, solid: transfer)",
    bubbles: "pipeline bubbles",
    findings: "findings",
    memory: "memory (line: allocated, dashed: reserved)",
  };
  TV.overlayOn = { collectives: true, bubbles: true, findings: false, memory: true };
  TV.overlayRequests = 0;
  TV.overlayDrawn = { collectives: 0, waits: 0, links: 0, p2p: 0, bubbles: 0, findings: 0, memory: 0, parts: [] };
  TV.state.overlays = null; // the last overlays answer, indexed
  TV.state.overlayPending = null;
  var seq = 0;

  /* Ask for the overlays of a window request's window (called by part 1's ensureData). */
  TV.fetchOverlays = function (params) {
    var my = ++seq;
    TV.overlayRequests += 1;
    TV.state.overlayPending = params.start + "|" + params.end + "|" + params.ranks;
    return TV.getJSON("overlays", params)
      .then(function (o) {
        if (my !== seq) { return; } // a newer window was asked for
        TV.state.overlays = o;
        TV.state.overlayPending = null;
        note(o);
        TV.draw();
      })
      .catch(function (e) {
        if (my !== seq) { return; }
        TV.state.overlayPending = null;
        TV.status("overlays: " + e.message);
      });
  };

  /* Per rank, the vertical extent of its device lanes and of its steps + terms lanes. */
  function rankBoxes() {
    var boxes = {};
    TV.state.lanes.forEach(function (l) {
      if (l.header) { return; }
      var b = (boxes[l.rank] = boxes[l.rank] || {});
      var part = l.kind === "device" ? "dev" : l.kind === "steps" || l.kind === "terms" ? "track" : null;
      if (!part) { return; }
      var top = TV.AXIS + l.y, bottom = top + l.h;
      b[part] = b[part] ? [Math.min(b[part][0], top), Math.max(b[part][1], bottom)] : [top, bottom];
    });
    return boxes;
  }

  function span(t0, t1, w) {
    var a = TV.x(t0), b = TV.x(t1);
    if (b < TV.GUTTER || a > TV.GUTTER + w) { return null; }
    return [Math.max(a, TV.GUTTER - 1), Math.min(b, TV.GUTTER + w + 1)];
  }

  var hatch = null;
  function hatchPattern(ctx, color) {
    if (hatch && hatch.color === color) { return hatch.pattern; }
    var c = document.createElement("canvas");
    c.width = 6;
    c.height = 6;
    var g = c.getContext("2d");
    g.strokeStyle = color;
    g.lineWidth = 1.5;
    g.beginPath();
    g.moveTo(0, 6);
    g.lineTo(6, 0);
    g.moveTo(-1, 1);
    g.lineTo(1, -1);
    g.moveTo(5, 7);
    g.lineTo(7, 5);
    g.stroke();
    hatch = { color: color, pattern: ctx.createPattern(c, "repeat") };
    return hatch.pattern;
  }

  function findings(ctx, o, boxes, w) {
    var f = o.findings, kinds = o.finding_kinds;
    for (var i = 0; i < f.rank.length; i++) {
      var box = boxes[f.rank[i]], s = span(f.start[i], f.end[i], w);
      if (!box || !box.track || !s) { continue; }
      var worst = "info", titles = [];
      f.kinds[i].forEach(function (k) {
        var kind = kinds[k];
        if ((SEVERITY[kind.severity] || 0) > SEVERITY[worst]) { worst = kind.severity; }
        titles.push(kind.title);
      });
      var rgb = SEVERITY_COLOR[worst] || SEVERITY_COLOR.info, y0 = box.track[0], y1 = box.track[1];
      ctx.fillStyle = "rgba(" + rgb + ",0.14)";
      ctx.fillRect(s[0], y0, s[1] - s[0], y1 - y0);
      ctx.fillStyle = "rgba(" + rgb + ",0.9)";
      ctx.fillRect(s[0], y0, s[1] - s[0], 3);
      var text = "⚑ " + titles.join(" · "), tw = Math.min(ctx.measureText(text).width, s[1] - s[0] - 8);
      if (tw > 30) { // at the band's right end: the step's own name stays readable at its left
        var x = s[1] - tw - 4;
        ctx.fillStyle = "rgba(255,255,255,0.85)";
        ctx.fillRect(x - 2, y0 + 3, tw + 4, 13);
        ctx.fillStyle = "rgb(" + rgb + ")";
        ctx.fillText(text, x, y0 + 13, tw);
      }
      TV.overlayDrawn.findings += 1;
    }
  }

  function bubbles(ctx, o, boxes, w) {
    var b = o.bubbles;
    for (var i = 0; i < b.rank.length; i++) {
      var box = boxes[b.rank[i]], s = span(b.start[i], b.end[i], w);
      if (!box || !box.dev || !s) { continue; }
      var y0 = box.dev[0], h = box.dev[1] - box.dev[0];
      ctx.fillStyle = "rgba(147,51,234,0.16)";
      ctx.fillRect(s[0], y0, Math.max(1, s[1] - s[0]), h);
      ctx.fillStyle = "rgba(126,34,206,0.75)";
      ctx.fillRect(s[0], y0, Math.max(1, s[1] - s[0]), 2);
      if (s[1] - s[0] > 50) { ctx.fillText("bubble", s[0] + 3, y0 + 12); }
      TV.overlayDrawn.bubbles += 1;
    }
  }

  function collectives(ctx, o, w) {
    var c = o.collectives, laneAt = TV.state.laneAt, comm = TV.state.meta.colors.communication || "#D55E00";
    var byCid = {};
    for (var i = 0; i < c.id.length; i++) {
      var l = laneAt[c.lane[i]];
      var arrive = c.start[i] + c.wait[i], end = arrive + c.transfer[i];
      var s = l && span(c.start[i], end, w);
      if (!s) { continue; }
      var y = TV.AXIS + l.y + 1, h = l.h - 2, m = Math.min(Math.max(TV.x(arrive), s[0]), s[1]);
      if (c.p2p[i]) { // point-to-point: no wait/transfer split, no link (the analysis pairs no send with its recv)
        ctx.strokeStyle = "rgba(17,24,39,0.8)";
        ctx.setLineDash([2, 2]);
        ctx.strokeRect(s[0] + 0.5, y + 0.5, Math.max(1, s[1] - s[0] - 1), h - 1);
        ctx.setLineDash([]);
        TV.overlayDrawn.p2p += 1;
        continue;
      }
      if (m > s[0]) { // the wait: lighter and hatched
        ctx.fillStyle = "rgba(255,255,255,0.7)";
        ctx.fillRect(s[0], y, m - s[0], h);
        ctx.fillStyle = hatchPattern(ctx, comm);
        ctx.fillRect(s[0], y, m - s[0], h);
        TV.overlayDrawn.waits += 1;
      }
      ctx.fillStyle = comm; // the transfer: solid
      ctx.fillRect(m, y, Math.max(1, s[1] - m), h);
      ctx.strokeStyle = "rgba(17,24,39,0.8)";
      ctx.strokeRect(s[0] + 0.5, y + 0.5, Math.max(1, s[1] - s[0] - 1), h - 1);
      TV.overlayDrawn.collectives += 1;
      TV.overlayDrawn.parts.push([c.cid[i], c.rank[i], c.start[i], c.wait[i], c.transfer[i]]);
      (byCid[c.cid[i]] = byCid[c.cid[i]] || []).push({ x: TV.x(arrive), top: y - 1, bottom: y + h + 1, rank: c.rank[i] });
    }
    links(ctx, byCid);
  }

  /* The same instance on ranks one above the other: a line between consecutive ranks' boxes at
   * the time their waits end. */
  function links(ctx, byCid) {
    ctx.save();
    ctx.strokeStyle = "#111827";
    ctx.lineWidth = 1;
    ctx.setLineDash([3, 2]);
    Object.keys(byCid).forEach(function (cid) {
      var ends = byCid[cid].sort(function (p, q) { return p.top - q.top; });
      for (var k = 1; k < ends.length; k++) {
        var p = ends[k - 1], q = ends[k];
        if (p.rank === q.rank) { continue; }
        ctx.beginPath();
        ctx.moveTo(p.x, p.bottom);
        ctx.lineTo(q.x, q.top);
        ctx.stroke();
        TV.overlayDrawn.links += 1;
      }
    });
    ctx.restore();
  }

  /* Called by TV.draw (part 2) after the items, inside the plot's clip. */
  TV.drawOverlays = function (ctx, laneAt, w) {
    toolbar();
    TV.overlayDrawn = { collectives: 0, waits: 0, links: 0, p2p: 0, bubbles: 0, findings: 0, memory: 0, parts: [] };
    var o = TV.state.overlays;
    if (!o) { return; }
    ctx.save();
    ctx.font = FONT;
    var boxes = rankBoxes();
    if (TV.overlayOn.findings) { findings(ctx, o, boxes, w); }
    if (TV.overlayOn.bubbles) { bubbles(ctx, o, boxes, w); }
    if (TV.overlayOn.collectives) { collectives(ctx, o, w); }
    if (TV.overlayOn.memory) { memory(ctx, o, w); }
    ctx.restore();
    TV.canvas.dataset.overlays = [TV.overlayDrawn.collectives, TV.overlayDrawn.links, TV.overlayDrawn.bubbles, TV.overlayDrawn.findings].join(",");
    TV.canvas.dataset.memory = String(TV.overlayDrawn.memory);
  };

  /* Per memory lane, its points in the answer: {lane: [indices into o.memory]}. */
  function memoryPoints(o) {
    if (o._memoryPoints) { return o._memoryPoints; }
    var byLane = {}, m = o.memory || { lane: [] };
    for (var i = 0; i < m.lane.length; i++) { (byLane[m.lane[i]] = byLane[m.lane[i]] || []).push(i); }
    o._memoryPoints = byLane;
    return byLane;
  }

  /* One series as a step line: each value holds until the next record (to the plot's right edge
   * for the last one). Null values break the line. */
  function stepLine(ctx, m, idx, key, l, top, w) {
    var y0 = TV.AXIS + l.y, h = l.h, pen = false, lastY = null;
    ctx.beginPath();
    idx.forEach(function (i) {
      var v = m[key][i];
      if (v === null || v === undefined) { pen = false; return; }
      var x = Math.max(TV.x(m.t[i]), TV.GUTTER - 1), y = y0 + h - 2 - (v / top) * (h - 6);
      if (pen) { ctx.lineTo(x, lastY); ctx.lineTo(x, y); } else { ctx.moveTo(x, y); pen = true; }
      lastY = y;
    });
    if (pen) { ctx.lineTo(TV.GUTTER + w + 1, lastY); }
    ctx.stroke();
  }

  function memory(ctx, o, w) {
    var byLane = memoryPoints(o), laneAt = TV.state.laneAt, m = o.memory;
    Object.keys(byLane).forEach(function (lane) {
      var l = laneAt[lane], top = (o.memory_scale || {})[lane] || 1;
      if (!l) { return; }
      ctx.save();
      ctx.lineWidth = 1.5;
      ctx.strokeStyle = "rgba(13,148,136,0.55)";
      ctx.setLineDash([4, 3]);
      stepLine(ctx, m, byLane[lane], "reserved", l, top, w);
      ctx.setLineDash([]);
      ctx.strokeStyle = "rgb(15,118,110)";
      stepLine(ctx, m, byLane[lane], "allocated", l, top, w);
      ctx.fillStyle = "rgba(15,118,110,0.9)";
      ctx.fillText("0 – " + TV.formatBytes(top), TV.GUTTER + 4, TV.AXIS + l.y + 11); // the lane's scale
      ctx.restore();
      TV.overlayDrawn.memory += 1;
    });
  }

  TV.formatBytes = function (b) {
    var units = [["GiB", 1073741824], ["MiB", 1048576], ["KiB", 1024]];
    for (var k = 0; k < units.length; k++) {
      if (Math.abs(b) >= units[k][1]) { return (b / units[k][1]).toFixed(2) + " " + units[k][0]; }
    }
    return b + " B";
  };

  /* The memory lane's values at canvas x: those of the last record at or before that instant. */
  TV.memoryAt = function (lane, x) {
    var o = TV.state.overlays;
    if (!o || !TV.overlayOn.memory) { return null; }
    var idx = memoryPoints(o)[lane], t = TV.t(x), m = o.memory, found = null;
    (idx || []).forEach(function (i) { if (m.t[i] <= t) { found = i; } });
    if (found === null) { return null; }
    return { t: m.t[found], allocated: m.allocated[found], reserved: m.reserved[found], binned: (m.binned || []).indexOf(Number(lane)) >= 0 };
  };

  var describe = TV.describe; // part 3's tooltip text, extended here for the memory lanes
  TV.describe = function (x, y) {
    var l = TV.laneAtY(y);
    if (!l || l.kind !== "memory") { return describe(x, y); }
    var v = TV.memoryAt(l.lane, x);
    if (!v) { return null; }
    var rows = [["lane", "rank " + l.rank + " · " + l.label], ["since", TV.formatNs(v.t)]];
    rows.push(["allocated", v.allocated === null ? "not recorded" : TV.formatBytes(v.allocated)]);
    rows.push(["reserved", v.reserved === null ? "not recorded" : TV.formatBytes(v.reserved)]);
    if (v.binned) { rows.push(["note", "binned: the largest values of each 1/1000 of the view"]); }
    return { id: null, title: "memory", rows: rows };
  };

  function note(o) {
    var el = document.getElementById("tvtl-ov-note");
    if (!el) { return; }
    var left = [];
    if (o.collectives_left_out) { left.push(o.collectives_left_out + " of " + o.collectives_total + " collectives"); }
    if (o.bubbles_left_out) { left.push(o.bubbles_left_out + " of " + o.bubbles_total + " bubble regions"); }
    if (o.findings_left_out) { left.push(o.findings_left_out + " of " + o.findings_total + " finding regions"); }
    el.textContent = left.length ? "left out of this view (the longest are drawn): " + left.join(", ") + "; zoom in to see them" : "";
  }

  /* The checkbox group, added to part 3's toolbar once it exists. */
  function toolbar() {
    var bar = document.getElementById("tvtl-toolbar");
    if (!bar || document.getElementById("tvtl-overlays")) { return; }
    var group = document.createElement("span");
    group.id = "tvtl-overlays";
    group.setAttribute("style", "display:inline-flex;gap:8px;align-items:center");
    var title = document.createElement("span");
    title.textContent = "overlays:";
    group.appendChild(title);
    Object.keys(TV.overlayOn).forEach(function (k) {
      var label = document.createElement("label");
      var box = document.createElement("input");
      box.type = "checkbox";
      box.id = "tvtl-ov-" + k;
      box.checked = TV.overlayOn[k];
      box.addEventListener("change", function () { TV.overlayOn[k] = box.checked; TV.draw(); });
      label.appendChild(box);
      label.appendChild(document.createTextNode(" " + LABELS[k]));
      group.appendChild(label);
    });
    var left = document.createElement("span");
    left.id = "tvtl-ov-note";
    left.setAttribute("style", "color:#6b7280");
    group.appendChild(left);
    bar.appendChild(group);
    if (TV.state.overlays) { note(TV.state.overlays); }
  }
})();
