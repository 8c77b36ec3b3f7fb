// Service worker: the only part that talks to the misguard service. Content scripts send
// it batches of texts; it adds the configured URL and key and returns results or an error.
// The key never reaches a web page. No host permissions: the service's CORS admits
// extension origins.
"use strict";

const DEFAULTS = { backendUrl: "http://127.0.0.1:8080", apiKey: "" };
const TIMEOUT_MS = 15000;

async function settings() {
  const stored = await chrome.storage.local.get(DEFAULTS);
  return { backendUrl: String(stored.backendUrl || DEFAULTS.backendUrl).replace(/\/+$/, ""), apiKey: stored.apiKey || "" };
}

async function checkTexts(texts) {
  const { backendUrl, apiKey } = await settings();
  if (!apiKey) return { error: "no API key set: open the misguard options" };
  const controller = new AbortController();
  const timer = setTimeout(() => controller.abort(), TIMEOUT_MS);
  try {
    const response = await fetch(`${backendUrl}/v1/check`, {
      method: "POST",
      headers: { "Content-Type": "application/json", Authorization: `Bearer ${apiKey}` },
      body: JSON.stringify({ texts }),
      signal: controller.signal,
    });
    if (!response.ok) {
      const detail = await response.json().then((b) => b.detail, () => "");
      return { error: `service answered ${response.status}${detail ? ": " + detail : ""}` };
    }
    const body = await response.json();
    return { results: body.results };
  } catch (err) {
    return { error: `service unreachable at ${backendUrl} (${err.name === "AbortError" ? "timeout" : err.message})` };
  } finally {
    clearTimeout(timer);
  }
}

chrome.runtime.onMessage.addListener((message, sender, sendResponse) => {
  if (message && message.type === "misguard:check" && Array.isArray(message.texts)) {
    checkTexts(message.texts).then(sendResponse);
    return true; // answer asynchronously
  }
  if (message && message.type === "misguard:summary" && sender.tab) {
    const flagged = Number(message.flagged) || 0;
    chrome.action.setBadgeText({ tabId: sender.tab.id, text: message.error ? "!" : flagged ? String(flagged) : "" });
    chrome.action.setBadgeBackgroundColor({ tabId: sender.tab.id, color: message.error ? "#888888" : "#b3261e" });
  }
  return false;
});
