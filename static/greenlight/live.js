// Live board: a WebSocket tells the page what changed (coalesced by the server, with the sequence
// number of the newest event); the page then fetches the server-rendered fragments for it, so a
// live update and a first paint are the same HTML. On reconnect the page re-syncs from the
// snapshot endpoint and misses nothing. Plain JS, no library.
(function () {
  "use strict";
  const board = document.getElementById("board");
  const status = document.getElementById("live-status");
  const state = {
    seq: board ? Number(board.dataset.seq || 0) : 0,
    connects: 0,
    syncs: 0,
    attempt: 0,
    needFull: false,
    pending: new Set(),
    inFlight: false,
    again: false,
    panelStale: false,
  };
  window.greenlight = state; // for people debugging from the console, and for the tests

  // --- dialogs (approve, quarantine, approve-all) -------------------------------------------
  document.addEventListener("click", (ev) => {
    const opener = ev.target.closest("[data-dialog]");
    if (opener) {
      const dlg = document.getElementById(opener.dataset.dialog);
      if (dlg) dlg.showModal();
      return;
    }
    const closer = ev.target.closest("[data-close]");
    if (closer) closer.closest("dialog").close();
  });
  document.addEventListener("close", () => {
    if (state.panelStale && !anyDialogOpen()) refreshPanel();
  }, true);
  function anyDialogOpen() {
    return !!document.querySelector("dialog[open]");
  }

  if (!board || !board.dataset.ws) return;
  const kind = board.dataset.live;

  function setStatus(s, title) {
    if (!status) return;
    status.dataset.state = s;
    status.title = title || s;
    status.querySelector(".txt").textContent = s === "open" ? "live" : s;
  }

  // --- the WebSocket, with backoff -----------------------------------------------------------
  function connect() {
    const proto = location.protocol === "https:" ? "wss://" : "ws://";
    const ws = new WebSocket(proto + location.host + board.dataset.ws);
    state.ws = ws;
    ws.onopen = () => {
      state.connects += 1;
      state.attempt = 0;
      setStatus("open", "Live updates on");
      // Whatever happened while we were not listening (page render to socket open, or the
      // whole outage) comes from the snapshot: since our seq the first time, in full after a drop.
      if (state.connects > 1) state.needFull = true;
      scheduleSync();
    };
    ws.onmessage = (ev) => {
      const msg = JSON.parse(ev.data);
      if (msg.type !== "batch") return;
      Object.keys(msg.nodes || {}).forEach((id) => state.pending.add(id));
      state.lastBatch = msg;
      scheduleSync();
    };
    ws.onclose = (ev) => {
      if (ev.code === 4401 || ev.code === 4403) {
        setStatus("closed", "Not signed in");
        location.reload(); // the page's login_required sends us to the login page
        return;
      }
      state.attempt += 1;
      const delay = Math.min(15000, 250 * 2 ** Math.min(state.attempt, 6)) * (0.75 + Math.random() / 2);
      setStatus("retrying", "Reconnecting in " + Math.round(delay / 1000) + " s");
      setTimeout(connect, delay);
    };
  }

  // --- syncing from the snapshot endpoint (single flight) ------------------------------------
  function scheduleSync() {
    if (state.inFlight) {
      state.again = true;
      return;
    }
    state.inFlight = true;
    sync()
      .catch(() => {
        state.needFull = true; // a failed fetch: the next sync takes everything
      })
      .finally(() => {
        state.inFlight = false;
        if (state.again) {
          state.again = false;
          scheduleSync();
        }
      });
  }

  async function getJSON(url) {
    const resp = await fetch(url, { headers: { Accept: "application/json" }, credentials: "same-origin" });
    if (resp.redirected || resp.status === 401 || resp.status === 403) {
      location.reload();
      throw new Error("signed out");
    }
    if (!resp.ok) throw new Error("snapshot " + resp.status);
    return resp.json();
  }

  async function sync() {
    if (kind === "node") {
      await refreshPanel();
      return;
    }
    const full = state.needFull;
    const nodes = Array.from(state.pending);
    state.needFull = false;
    state.pending.clear();
    const url = new URL(board.dataset.snapshot, location.href);
    if (kind === "rack" && !full) {
      url.searchParams.set("since", String(state.seq));
      if (nodes.length) url.searchParams.set("nodes", nodes.join(","));
    }
    const data = await getJSON(url);
    if (kind === "overview") {
      board.innerHTML = data.html;
    } else {
      applySlots(data);
    }
    state.seq = Math.max(full ? data.seq : state.seq, data.seq);
    board.dataset.seq = String(state.seq);
    state.syncs += 1;
  }

  function applySlots(data) {
    const panel = document.getElementById("panel");
    const open = panel && panel.dataset.node;
    let panelChanged = false;
    for (const [id, html] of Object.entries(data.slots)) {
      const old = document.getElementById("slot-" + id);
      const tpl = document.createElement("template");
      tpl.innerHTML = html.trim();
      const fresh = tpl.content.firstElementChild;
      if (!fresh) continue;
      if (old) {
        const oldClass = old.className.replace(/ (selected|flash)\b/g, "");
        if (old.innerHTML === fresh.innerHTML && old.title === fresh.title && oldClass === fresh.className) {
          continue; // the same slot: leave it (and its open panel) alone
        }
        if (old.dataset.state !== fresh.dataset.state) fresh.classList.add("flash");
        if (old.classList.contains("selected")) fresh.classList.add("selected");
        old.replaceWith(fresh);
      } else {
        const unit = document.querySelector('.unit[data-u="' + fresh.dataset.u + '"]');
        const empty = unit && unit.querySelector(".empty");
        if (empty) empty.replaceWith(fresh);
      }
      if (open && id === open) panelChanged = true;
    }
    const summary = document.getElementById("rack-summary");
    if (summary && data.summary) summary.innerHTML = data.summary;
    // A rack-scale rack's own state, fabric status and approval (a rack event names no node).
    const system = document.getElementById("rack-system");
    if (system && data.system) system.innerHTML = data.system;
    if (panelChanged) refreshPanel();
  }

  // --- the node panel beside the rack --------------------------------------------------------
  async function refreshPanel() {
    const panel = document.getElementById("panel");
    if (!panel || !panel.dataset.node) return;
    if (anyDialogOpen()) {
      state.panelStale = true; // never yank a dialog someone is typing a reason into
      return;
    }
    state.panelStale = false;
    const resp = await fetch("/nodes/" + panel.dataset.node + "/panel/", { credentials: "same-origin" });
    if (!resp.ok || resp.redirected) return;
    panel.innerHTML = await resp.text();
  }

  if (kind === "rack") {
    board.addEventListener("click", async (ev) => {
      const slot = ev.target.closest(".slot");
      if (!slot || ev.metaKey || ev.ctrlKey || ev.shiftKey) return;
      ev.preventDefault();
      document.querySelectorAll(".slot.selected").forEach((s) => s.classList.remove("selected"));
      slot.classList.add("selected");
      const panel = document.getElementById("panel");
      panel.dataset.node = slot.dataset.node;
      history.replaceState(null, "", "?node=" + slot.dataset.node);
      await refreshPanel();
      // On a narrow screen the open panel comes before the rack (app.css): bring it into view.
      if (panel.getBoundingClientRect().top < 0) panel.scrollIntoView({ block: "start" });
    });
    const open = document.getElementById("panel");
    if (open && open.dataset.node) {
      const sel = document.getElementById("slot-" + open.dataset.node);
      if (sel) sel.classList.add("selected");
    }
  }

  connect();
})();
