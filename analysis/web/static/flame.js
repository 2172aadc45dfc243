// dcpi web: the flame graphs' interactions. The server draws every
// graph whole and links each box to the graph zoomed on it, so without
// this script the pages still zoom (by reloading) and search (the form's
// q=); with it the graph fills the window, zooms on a click without a
// reload, highlights a search as it is typed, and says what is under
// the pointer.
(function () {
  "use strict";
  const graph = document.querySelector(".flame");
  if (!graph) return;
  const boxes = [...graph.querySelectorAll(".fb")].map((el) => ({
    el,
    depth: +el.dataset.depth,
    l: +el.dataset.l,
    w: +el.dataset.w,
    total: +el.dataset.total,
    proc: el.dataset.proc,
    serverAnc: el.classList.contains("anc"),
  }));
  const serverZoomed = new URL(location.href).searchParams.has("focus");
  const levels = +graph.dataset.levels || 1;
  const icicle = graph.classList.contains("icicle");
  const detail = document.getElementById("flame-detail");
  const search = document.getElementById("search");
  const rootTotal = boxes.reduce((m, b) => (b.depth === 0 ? b.total : m), 0);
  let row = 18;
  let zoomed = null;
  const whole = new URL(location.href);
  whole.searchParams.delete("focus");

  // Fill the window: rows as tall as the space below the graph's top
  // allows, between 18 and 36 pixels.
  function fill() {
    const avail = window.innerHeight - graph.getBoundingClientRect().top - window.scrollY - 24;
    row = Math.max(18, Math.min(36, Math.floor(avail / levels)));
    graph.style.height = levels * row + "px";
    for (const b of boxes) {
      const level = icicle ? b.depth : levels - 1 - b.depth;
      b.el.style.top = level * row + "px";
      b.el.style.height = row - 1 + "px";
      b.el.style.lineHeight = row - 3 + "px";
    }
  }

  const near = (a, b) => Math.abs(a - b) < 1e-9;

  // Zoom on z (null: the graph as drawn): z's subtree fills the width,
  // its ancestors span it, the rest is hidden.
  function zoom(z) {
    for (const b of boxes) {
      let l = b.l, w = b.w, show = true;
      if (z) {
        const inside = b.depth >= z.depth && b.l >= z.l - 1e-9 && b.l + b.w <= z.l + z.w + 1e-9;
        const above = b.depth < z.depth && b.l <= z.l + 1e-9 && b.l + b.w >= z.l + z.w - 1e-9;
        if (inside) {
          l = ((b.l - z.l) / z.w) * 100;
          w = (b.w / z.w) * 100;
        } else if (above) {
          l = 0;
          w = 100;
        } else {
          show = false;
        }
        if (near(z.w, 0)) show = b === z;
      }
      b.el.style.display = show ? "" : "none";
      b.el.style.left = l + "%";
      b.el.style.width = w + "%";
      b.el.classList.toggle("anc", !!z && show && b.depth < z.depth);
    }
    zoomed = z;
    graph.dataset.zoomed = z ? z.proc : "";
    const server = document.getElementById("focused");
    if (server) server.remove();
    say(z, true);
  }

  // say writes the status line: the box zoomed on or under the pointer.
  function say(b, zoomed) {
    if (!detail) return;
    detail.textContent = "";
    if (!b) {
      detail.append("Click a box to zoom on it; Ctrl-click opens its listing.");
      return;
    }
    detail.append(zoomed ? "Zoomed on " : "");
    const name = document.createElement("b");
    name.textContent = b.proc;
    detail.append(name, b.el.title.slice(b.el.title.indexOf(":")));
    const list = b.el.dataset.list;
    if (zoomed && list) {
      const a = document.createElement("a");
      a.href = list;
      a.textContent = "its listing";
      detail.append(" · ", a);
    }
    if (zoomed) {
      const a = document.createElement("a");
      a.href = "#";
      a.id = "unzoom-js";
      a.textContent = "whole graph";
      a.addEventListener("click", (e) => {
        e.preventDefault();
        zoom(null);
        history.replaceState(null, "", whole);
      });
      detail.append(" · ", a);
    }
  }

  // Highlight the boxes whose procedure contains the text, and say what
  // share of the samples they hold (a box under a highlighted one not
  // counted again).
  function highlight(text) {
    const needle = text.trim().toLowerCase();
    graph.classList.toggle("searching", needle !== "");
    const counted = [];
    let sum = 0;
    for (const b of [...boxes].sort((x, y) => x.depth - y.depth)) {
      const m = needle !== "" && b.proc.toLowerCase().includes(needle);
      b.el.classList.toggle("match", m);
      if (m && !counted.some((c) => b.depth > c.depth && b.l >= c.l - 1e-9 && b.l + b.w <= c.l + c.w + 1e-9)) {
        counted.push(b);
        sum += b.total;
      }
    }
    let out = document.getElementById("matched");
    if (!out) {
      out = document.createElement("span");
      out.id = "matched";
      document.getElementById("flame-status").prepend(out);
    }
    if (needle === "") {
      out.textContent = "";
      out.dataset.pct = "";
      return;
    }
    const pct = rootTotal ? (100 * sum) / rootTotal : 0;
    out.dataset.pct = pct.toFixed(2);
    out.textContent = "“" + text.trim() + "” matches " + pct.toFixed(2) + "% of the samples ";
  }

  graph.addEventListener("click", (e) => {
    const el = e.target.closest(".fb");
    if (!el) return;
    const b = boxes.find((x) => x.el === el);
    if (e.ctrlKey || e.metaKey) {
      if (el.dataset.list) {
        e.preventDefault();
        location.href = el.dataset.list;
      }
      return;
    }
    e.preventDefault();
    // Zooming on a box as drawn: the server's layout may be zoomed
    // already, which the link (focus=) keeps for a reload.
    if (b.serverAnc || (b.depth === 0 && serverZoomed)) {
      // Above the server's zoom: its link draws that graph.
      location.href = el.href;
      return;
    }
    if (b.depth === 0) {
      zoom(null);
      history.replaceState(null, "", whole);
      return;
    }
    zoom(b);
    history.replaceState(null, "", el.href);
  });
  graph.addEventListener("mouseover", (e) => {
    const el = e.target.closest(".fb");
    if (el) say(boxes.find((x) => x.el === el), false);
  });
  graph.addEventListener("mouseleave", () => say(zoomed, !!zoomed));
  document.addEventListener("keydown", (e) => {
    if (e.key === "Escape" && zoomed) {
      zoom(null);
      history.replaceState(null, "", whole);
    }
  });
  if (search) {
    search.addEventListener("input", () => {
      highlight(search.value);
      const u = new URL(location.href);
      if (search.value.trim()) u.searchParams.set("q", search.value.trim());
      else u.searchParams.delete("q");
      history.replaceState(null, "", u);
    });
  }
  window.addEventListener("resize", fill);
  fill();
  graph.classList.add("live");
})();
