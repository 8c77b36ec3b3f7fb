// Popup: the active tab's summary, as counted by its content script.
"use strict";

(async () => {
  const status = document.getElementById("status");
  const list = document.getElementById("blocks");
  const [tab] = await chrome.tabs.query({ active: true, currentWindow: true });
  let summary = null;
  try {
    summary = tab && (await chrome.tabs.sendMessage(tab.id, { type: "misguard:get-summary" }));
  } catch (_) {
    summary = null;
  }
  if (!summary) {
    status.textContent = "This page is not checked (not a web page, or still loading).";
    return;
  }
  if (summary.error) {
    status.className = "error";
    status.textContent = `Not checked: ${summary.error}`;
    return;
  }
  status.textContent = `${summary.checked} text blocks checked, ${summary.flagged} repeat a fact-checked false claim.`;
  for (const block of summary.blocks) {
    const item = document.createElement("li");
    item.textContent = `\u201c${block.text}\u201d`;
    if (block.claim) item.title = `Fact-checked claim: ${block.claim}`;
    list.append(item);
  }
})();
