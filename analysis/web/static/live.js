// dcpi web: live refresh. On a source that is still collecting (a
// cluster), the page asks the server for itself again every few
// seconds and reloads when what it shows has changed: new samples, a
// new epoch. It waits while the reader types in a box or has text
// selected, stops while the tab is hidden, and the "live" box in the
// header turns it off (remembered for the session). Without this script
// the page is as served; reloading it shows the same.
(function () {
  "use strict";
  const every = +document.body.dataset.live;
  const box = document.getElementById("live");
  if (!every || !box) return;
  const key = "dcpi-live";
  if (sessionStorage.getItem(key) === "off") box.checked = false;
  box.addEventListener("change", () => sessionStorage.setItem(key, box.checked ? "on" : "off"));

  // What a response shows: its <main>, the part a reload changes, less
  // the line naming a time range's span (since=2h moves every second).
  const shown = (html) => {
    const m = /<main>([\s\S]*)<\/main>/.exec(html);
    return (m ? m[1] : html).replace(/<p class="covered" id="covered">[^<]*<\/p>/, "");
  };
  let baseline = null;

  async function poll() {
    const busy = document.activeElement && /^(INPUT|SELECT|TEXTAREA)$/.test(document.activeElement.tagName);
    const selecting = String(window.getSelection ? window.getSelection() : "") !== "";
    if (box.checked && !document.hidden && !busy && !selecting) {
      try {
        const r = await fetch(location.href, { cache: "no-store" });
        if (r.ok) {
          const now = shown(await r.text());
          if (baseline === null) {
            baseline = now;
          } else if (now !== baseline) {
            document.body.dataset.reloading = "1";
            location.reload();
            return;
          }
        }
      } catch (e) {
        // The server is away (restarting, a leader change): try again.
      }
    }
    setTimeout(poll, every * 1000);
  }
  setTimeout(poll, 0);
})();
