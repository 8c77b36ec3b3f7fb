// Content script: finds the page's visible text blocks (paragraphs, list items, quotes,
// comments, reviews), has the service check them in batches, and marks flagged ones
// inline. Every failure ends in a quiet notice: the page itself is never broken.
(() => {
  "use strict";

  const BLOCKS = [
    "p", "li", "blockquote", "dd", "figcaption", "[itemprop='reviewBody']", "[itemprop='text']",
    "[class*='comment']", "[class*='review']",
  ].join(",");
  const SKIP = "script, style, noscript, nav, textarea, input, [contenteditable='true'], .misguard-note, .misguard-notice";
  const MIN_CHARS = 40; // shorter blocks (buttons, bylines) rarely state a claim
  const MIN_CHARS_DENSE = 12; // the same for scripts that say as much in fewer characters
  const DENSE_SCRIPT = /[\u3040-\u30ff\u3400-\u9fff\uac00-\ud7af]/;
  const MAX_CHARS = 4000;
  const BATCH = 32;
  const RESCAN_MS = 400; // debounce for text added after the first paint
  const RETRY_AFTER_MS = 30000;

  const sent = new WeakSet();
  const state = { checked: 0, flagged: 0, error: null, flaggedBlocks: [] };
  let scanTimer = null;
  let pausedUntil = 0;
  let noticeShown = false;

  function isVisible(el) {
    if (!el.isConnected || !el.getClientRects().length) return false;
    const style = getComputedStyle(el);
    return style.visibility !== "hidden" && style.display !== "none";
  }

  function collect() {
    const found = [];
    for (const el of document.body ? document.body.querySelectorAll(BLOCKS) : []) {
      if (sent.has(el) || el.closest(SKIP)) continue;
      if (el.querySelector(BLOCKS)) continue; // a container: its inner blocks are checked instead
      const text = (el.innerText || "").replace(/\s+/g, " ").trim();
      if (text.length < (DENSE_SCRIPT.test(text) ? MIN_CHARS_DENSE : MIN_CHARS) || !isVisible(el)) continue;
      sent.add(el);
      found.push({ el, text: text.slice(0, MAX_CHARS) });
    }
    return found;
  }

  function reliability(score) {
    return Math.max(0, Math.min(100, Math.round((1 - Number(score)) * 100)));
  }

  function safeUrl(url) {
    try {
      const parsed = new URL(url);
      return parsed.protocol === "http:" || parsed.protocol === "https:" ? parsed.href : null;
    } catch (_) {
      return null;
    }
  }

  function mark(el, result) {
    el.dataset.misguard = result.flagged ? "flagged" : "ok";
    if (!result.flagged) return;
    el.classList.add("misguard-flagged");
    const note = document.createElement(el.matches("li, dd") ? "span" : "div");
    note.className = "misguard-note";
    note.setAttribute("role", "note");
    const rating = result.matched_claim_verdict_original || result.matched_claim_verdict || "false";
    // textContent only: nothing from the service is ever parsed as HTML.
    note.textContent = `\u26a0 Repeats a claim fact-checked as \u201c${rating}\u201d \u00b7 reliability ${reliability(result.score)}/100`;
    if (result.matched_claim_text) note.title = `Fact-checked claim: ${result.matched_claim_text}`;
    const href = result.matched_claim_url && safeUrl(result.matched_claim_url);
    if (href) {
      const link = document.createElement("a");
      link.href = href;
      link.target = "_blank";
      link.rel = "noopener noreferrer";
      link.textContent = "fact-check";
      note.append(" \u00b7 ", link);
    }
    if (el.matches("li, dd")) {
      note.style.display = "block";
      el.append(note);
    } else {
      el.insertAdjacentElement("afterend", note);
    }
    state.flaggedBlocks.push({ text: (el.innerText || "").slice(0, 120), claim: result.matched_claim_text || "" });
  }

  function quietNotice(message) {
    if (noticeShown || !document.body) return;
    noticeShown = true;
    const box = document.createElement("div");
    box.className = "misguard-notice";
    box.setAttribute("role", "status");
    box.textContent = `misguard: ${message}`;
    document.body.append(box);
    setTimeout(() => box.remove(), 8000);
  }

  function report() {
    try {
      chrome.runtime.sendMessage({ type: "misguard:summary", flagged: state.flagged, error: state.error });
    } catch (_) {
      // the extension was reloaded: this page keeps working without it
    }
  }

  async function checkBatch(batch) {
    let answer;
    try {
      answer = await chrome.runtime.sendMessage({ type: "misguard:check", texts: batch.map((b) => b.text) });
    } catch (err) {
      answer = { error: `extension error (${err.message})` };
    }
    if (!answer || answer.error || !Array.isArray(answer.results) || answer.results.length !== batch.length) {
      state.error = (answer && answer.error) || "unexpected answer from the service";
      for (const b of batch) sent.delete(b.el); // try these again later
      pausedUntil = Date.now() + RETRY_AFTER_MS;
      quietNotice(`${state.error}. This page was not checked.`);
      return false;
    }
    state.error = null;
    answer.results.forEach((result, i) => {
      state.checked += 1;
      if (result.flagged) state.flagged += 1;
      mark(batch[i].el, result);
    });
    return true;
  }

  async function scan() {
    scanTimer = null;
    if (Date.now() < pausedUntil) return schedule(pausedUntil - Date.now());
    const blocks = collect();
    for (let i = 0; i < blocks.length; i += BATCH) {
      if (!(await checkBatch(blocks.slice(i, i + BATCH)))) {
        for (const b of blocks.slice(i + BATCH)) sent.delete(b.el);
        break;
      }
    }
    document.documentElement.dataset.misguardScanned = String(state.checked);
    report();
  }

  function schedule(delay = RESCAN_MS) {
    if (scanTimer === null) scanTimer = setTimeout(scan, delay);
  }

  chrome.runtime.onMessage.addListener((message, _sender, sendResponse) => {
    if (message && message.type === "misguard:get-summary") {
      sendResponse({ checked: state.checked, flagged: state.flagged, error: state.error, blocks: state.flaggedBlocks.slice(0, 20) });
    }
    return false;
  });

  // Pages that load text after the first paint (feeds, comments): rescan on DOM changes.
  new MutationObserver((mutations) => {
    if (mutations.some((m) => m.addedNodes.length || m.type === "characterData")) schedule();
  }).observe(document.documentElement, { childList: true, subtree: true, characterData: true });
  schedule(0);
})();
